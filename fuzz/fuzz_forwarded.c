/* libFuzzer: what a trusted proxy forwards (daemons/vc-front/core/forwarded.c)
 * and trusted_proxies' entries (libcommon/vc_cidr.c). The input is lines:
 * each "NAME: VALUE" is a request header; the scheme and host read from
 * them must be "http" or "https" and a slice of one header's value, and
 * each line is also tried as an address range. */
#include "../daemons/vc-front/core/forwarded.h"
#include "vc_cidr.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    h2o_req_t req;
    memset(&req, 0, sizeof(req));
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        vc_cidr_t c;
        vc_cidr_parse(line, &c);
        char *colon = strchr(line, ':');
        if (colon == NULL || colon == line)
            continue;
        /* h2o keeps names in lower case, and so does every caller here. */
        for (char *p = line; p < colon; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        h2o_iovec_t name = h2o_iovec_init(line, (size_t)(colon - line));
        (void)forwarded_kind(&name);
        const char *v = colon + 1;
        h2o_add_header_by_str(&pool, &req.headers, line, name.len, 0, NULL, v, strlen(v));
    }
    static const char own[] = "own";
    const char *scheme = "http";
    h2o_iovec_t host = h2o_iovec_init(own, 3);
    forwarded_origin(&req, &scheme, &host);
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
        abort();
    int inside = host.base == own && host.len == 3;
    for (size_t i = 0; !inside && i < req.headers.size; i++) {
        h2o_iovec_t v = req.headers.entries[i].value;
        inside = host.base >= v.base && host.base + host.len <= v.base + v.len;
    }
    if (!inside)
        abort();
    free(text);
    h2o_mem_clear_pool(&pool);
    return 0;
}
