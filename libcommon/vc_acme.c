#include "vc_acme.h"
#include "vc_util.h"

#include <ctype.h>

char *vc_acme_cert_path(const char *data_dir, const char *site, const char *ext)
{
    return vc_asprintf("%s/tls/acme/%s.%s", data_dir, site, ext);
}

int vc_acme_on_demand_host(const char *host, size_t len, char *out, size_t outlen)
{
    if (len == 0 || len > 253 || outlen <= len)
        return 0;
    size_t labels = 0, label_len = 0, last_start = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = i < len ? host[i] : '.';
        if (i < len)
            out[i] = (char)tolower((unsigned char)c);
        if (c == '.') {
            /* A label: 1-63 bytes, no hyphen at either end. */
            if (label_len == 0 || label_len > 63 || host[i - 1] == '-' || host[i - label_len] == '-')
                return 0;
            labels++;
            last_start = i - label_len;
            label_len = 0;
            continue;
        }
        if (!isalnum((unsigned char)c) && c != '-')
            return 0;
        label_len++;
    }
    out[len] = '\0';
    size_t digits = 0;
    while (last_start + digits < len && isdigit((unsigned char)host[last_start + digits]))
        digits++;
    if (labels < 2 || last_start + digits == len)
        return 0;
    return 1;
}
