/* libFuzzer: what vc-acme reads from a CA (daemons/vc-acme/acme_parse.h).
 * The first byte picks: a header line, a Retry-After value, an RFC 3339
 * time, or a JSON body read as a problem document, an authorisation and
 * renewal information. */
#include "acme_parse.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    switch (data[0] % 4) {
    case 0: {
        free(acme_header_value(text, size - 1, "Replay-Nonce"));
        free(acme_header_value(text, size - 1, "Location"));
        break;
    }
    case 1: acme_retry_after_value(text, 7); break;
    case 2: {
        int64_t t;
        acme_rfc3339(text, &t);
        break;
    }
    default: {
        json_t *j = json_loadb(text, size - 1, 0, NULL);
        char err[512];
        acme_problem_text(j, 400, "https://ca/x", err, sizeof(err));
        const char *host, *token, *url;
        static const char *const types[] = {"http-01", "tls-alpn-01", "dns-01"};
        for (int k = 0; k < 3; k++)
            if (acme_challenge_of(j, types[k], &host, &token, &url) == 0 &&
                (strchr(token, '/') || strchr(token, '.') || host[0] == '-' || strchr(host, ' ')))
                abort(); /* a token becomes a path, a host a hook's argument */
        int64_t start, end;
        if (acme_renewal_window(j, &start, &end) == 0 && end <= start)
            abort();
        json_decref(j);
    }
    }
    free(text);
    return 0;
}
