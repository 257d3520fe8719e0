/* libFuzzer: HTTP/1.1 request heads through the parser libh2o calls
 * (libcommon/vc_framing.c: picohttpparser, then the RFC 9112 checks).
 * A head it accepts must have one Host at most, no continuation line, no
 * Content-Length beside Transfer-Encoding, and an origin-form target where
 * an absolute form was sent; every pointer must stay inside the input. */
#include "vc_framing.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int inside(const char *p, size_t n, const char *buf, size_t len)
{
    return p >= buf && p + n <= buf + len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1); /* a copy: the check rewrites in place */
    memcpy(buf, data, size);
    const char *method, *path;
    size_t method_len, path_len, num_headers = 100;
    int minor;
    struct phr_header hs[100];
    int r = phr_parse_request(buf, size, &method, &method_len, &path, &path_len, &minor, hs, &num_headers, 0);
    if (r > 0) {
        size_t hosts = 0, lengths = 0, encodings = 0;
        if (!inside(path, path_len, buf, size) || !inside(method, method_len, buf, size))
            abort();
        if (path_len >= 7 && strncasecmp(path, "http://", 7) == 0)
            abort();
        for (size_t i = 0; i < num_headers; i++) {
            if (hs[i].name == NULL || !inside(hs[i].value, hs[i].value_len, buf, size))
                abort();
            hosts += hs[i].name_len == 4 && strncasecmp(hs[i].name, "host", 4) == 0;
            lengths += hs[i].name_len == 14 && strncasecmp(hs[i].name, "content-length", 14) == 0;
            encodings += hs[i].name_len == 17 && strncasecmp(hs[i].name, "transfer-encoding", 17) == 0;
        }
        if (hosts > 1 || lengths > 1 || (lengths && encodings) || (minor == 1 && hosts == 0))
            abort();
    }
    free(buf);
    return 0;
}
