/* The cache's parsers of outside input: an answer's headers as PHP sent
 * them (daemons/vc-front/cache/cache_policy.c), a request's URL as its key, and
 * an entry read back from LMDB (libcommon/vc_cache.c), a Range header
 * against a cached body. The input's first
 * byte picks which; for headers, lines "Name: value". */
#include "cache/cache_policy.h"
#include "vc_cache.h"

#include <stdint.h>
#include <string.h>

static void on_tag(void *arg, const char *t, size_t n)
{
    (void)arg;
    (void)t;
    (void)n;
}

static void headers(const char *p, size_t len)
{
    cache_hdr_t h[32];
    size_t n = 0;
    for (size_t i = 0; i < len && n < 32;) {
        const char *nl = memchr(p + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - p) : len;
        const char *colon = memchr(p + i, ':', end - i);
        if (colon) {
            size_t nlen = (size_t)(colon - p) - i, vstart = (size_t)(colon - p) + 1;
            h[n++] = (cache_hdr_t){p + i, p + vstart, nlen, end - vstart};
            if (cache_policy_is_tag_header(p + i, nlen))
                cache_policy_tags(p + vstart, end - vstart, 64, on_tag, NULL);
        }
        i = end + 1;
    }
    char names[CACHE_VARY_LIST_MAX];
    size_t vl = cache_policy_vary_names(h, n, names, sizeof(names));
    if (vl != SIZE_MAX && (vl >= sizeof(names) || strlen(names) != vl))
        __builtin_trap();
    cache_decision_t d;
    cache_policy_opts_t o = {.grace_ms = 10000, .ttl_ms = -1, .max_ttl_ms = -1};
    cache_policy_decide(200, h, n, 1790000000000LL, &o, &d);
    if (d.store && (d.fresh_ms <= 0 || d.stale_ms < 0 || d.error_ms < d.stale_ms))
        __builtin_trap();
}

static void url(const char *p, size_t len)
{
    static char *strip[] = {"utm_*", "fbclid"};
    const char *q = memchr(p, '?', len);
    size_t plen = q ? (size_t)(q - p) : len;
    char out[VC_CACHE_KEY_MAX];
    size_t n = vc_cache_key("https", "Host:443", 8, p, plen, q ? q + 1 : "", q ? len - plen - 1 : 0, strip, 2, out,
                            sizeof(out));
    if (n > sizeof(out))
        __builtin_trap();
}

static void range(const char *p, size_t len)
{
    uint64_t first, last, size = len * 7;
    int r = cache_policy_range(p, len, size, &first, &last);
    if (r == 1 && (first > last || last >= size))
        __builtin_trap();
}

static void entry(const uint8_t *p, size_t len)
{
    vc_cache_entry_t e;
    if (vc_cache_entry_parse(p, len, &e) != 0)
        return;
    vc_cache_header_t h;
    size_t pos = 0, sum = 0;
    uint32_t i = 0;
    while (vc_cache_entry_header(&e, &pos, &i, &h))
        sum += h.name_len + h.value_len + (size_t)(unsigned char)(h.name_len ? h.name[0] : 0);
    const char *t;
    size_t tl;
    pos = 0;
    i = 0;
    while (vc_cache_entry_tag(&e, &pos, &i, &t, &tl))
        sum += tl ? (unsigned char)t[tl - 1] : 0;
    if (e.body_len && e.body[e.body_len - 1] == 0 && sum == 1)
        sum++; /* the bytes are read */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *p = (const char *)data + 1;
    switch (data[0] % 4) {
    case 0: headers(p, size - 1); break;
    case 1: url(p, size - 1); break;
    case 3: range(p, size - 1); break;
    default: entry(data + 1, size - 1); break;
    }
    return 0;
}
