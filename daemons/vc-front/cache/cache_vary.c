/*
 * Variants: a page whose answers vary on request headers (Vary, but
 * Accept-Encoding) is stored once per combination of those headers' values
 * (libcommon/vc_cache.h has the keys). Here, the variant key a request
 * picks from its own headers.
 */
#include "cache_internal.h"
#include "vc_util.h"

#include <string.h>

/* The request's value of header name (lower case), several fields joined
 * by ", " (in the request's pool), or NULL if it has none. */
static const char *value_of(h2o_req_t *req, const char *name, size_t nlen, size_t *len)
{
    if (nlen == 4 && memcmp(name, "host", 4) == 0) {
        /* h2o keeps Host (HTTP/2's :authority) apart from the headers. */
        *len = req->authority.len;
        return req->authority.base;
    }
    h2o_iovec_t joined = {NULL, 0};
    for (ssize_t at = -1; (at = h2o_find_header_by_str(&req->headers, name, nlen, at)) != -1;) {
        h2o_iovec_t v = req->headers.entries[at].value;
        joined = joined.base ? h2o_concat(&req->pool, joined, h2o_iovec_init(H2O_STRLIT(", ")), v) : v;
    }
    *len = joined.len;
    return joined.base;
}

size_t cache_variant_key(h2o_req_t *req, const char *base, size_t blen, const char *names, size_t nlen, char *out,
                         size_t cap)
{
    const char *values[CACHE_VARY_MAX];
    size_t lens[CACHE_VARY_MAX], n = 0;
    for (size_t i = 0; i < nlen && n < CACHE_VARY_MAX;) {
        while (i < nlen && (names[i] == ',' || names[i] == ' '))
            i++;
        size_t start = i;
        while (i < nlen && names[i] != ',' && names[i] != ' ')
            i++;
        if (i > start) {
            values[n] = value_of(req, names + start, i - start, &lens[n]);
            n++;
        }
    }
    return vc_cache_variant_key(base, blen, values, lens, n, out, cap);
}

size_t cache_base_len(const char *key, size_t klen)
{
    const char *sep = memchr(key, VC_CACHE_VARIANT_SEP, klen);
    return sep ? (size_t)(sep - key) : klen;
}
