#include "vc_forwarded.h"

#include <string.h>

/* Every header of the kind, by what the frameworks read. */
static const struct {
    const char *name;
    vc_forwarded_kind_t kind;
} headers[] = {
    {"x-forwarded-for", VC_FORWARDED_ADDRESS},
    {"x-real-ip", VC_FORWARDED_ADDRESS},
    {"client-ip", VC_FORWARDED_ADDRESS},
    {"true-client-ip", VC_FORWARDED_ADDRESS},
    {"cf-connecting-ip", VC_FORWARDED_ADDRESS},
    {"x-cluster-client-ip", VC_FORWARDED_ADDRESS},
    {"forwarded", VC_FORWARDED_KEYED},
    {"x-forwarded-proto", VC_FORWARDED_KEYED},
    {"x-forwarded-host", VC_FORWARDED_KEYED},
    {"x-forwarded-port", VC_FORWARDED_OTHER},
    {"x-forwarded-prefix", VC_FORWARDED_OTHER},
    {"x-forwarded-server", VC_FORWARDED_OTHER},
    {"x-forwarded-ssl", VC_FORWARDED_OTHER},
    {"x-forwarded-scheme", VC_FORWARDED_OTHER},
    {"x-url-scheme", VC_FORWARDED_OTHER},
    {"front-end-https", VC_FORWARDED_OTHER},
    {"x-host", VC_FORWARDED_OTHER},
    {"x-original-host", VC_FORWARDED_OTHER},
    {"x-original-url", VC_FORWARDED_OTHER},
    {"x-rewrite-url", VC_FORWARDED_OTHER},
    {"x-http-method-override", VC_FORWARDED_OTHER},
    {"x-http-method", VC_FORWARDED_OTHER},
    {"x-method-override", VC_FORWARDED_OTHER},
};

vc_forwarded_kind_t vc_forwarded_kind(const char *name, size_t len)
{
    /* Most headers are none of these: one look at the first letter. */
    char c = len ? name[0] : 0;
    if (c != 'x' && c != 'f' && c != 'c' && c != 't')
        return VC_FORWARDED_NONE;
    for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++)
        if (len == strlen(headers[i].name) && memcmp(name, headers[i].name, len) == 0)
            return headers[i].kind;
    return VC_FORWARDED_NONE;
}
