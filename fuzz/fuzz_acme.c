/* libFuzzer: what vc-acme reads from a CA (daemons/vc-acme/acme_parse.h),
 * and the host names on-demand TLS takes from clients (vc_acme.h). The
 * first byte picks: a header line, a Retry-After value, an RFC 3339 time,
 * a JSON body read as a problem document, an authorisation and renewal
 * information, or a client's SNI. */
#include "acme_parse.h"
#include "vc_acme.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    switch (data[0] % 5) {
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
    case 4: {
        /* A host that passes becomes a file name and a CA's identifier. */
        char host[254];
        if (vc_acme_on_demand_host(text, size - 1, host, sizeof(host)) &&
            (strlen(host) != size - 1 || strspn(host, "abcdefghijklmnopqrstuvwxyz0123456789-.") != size - 1 ||
             host[0] == '-' || host[0] == '.' || strstr(host, "..") || strchr(host, '.') == NULL))
            abort();
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
