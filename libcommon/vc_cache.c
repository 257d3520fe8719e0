#include "vc_cache.h"
#include "vc_util.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the key ------------------------------------------------------------- */

typedef struct param {
    const char *p;
    size_t len;
} param_t;

static int param_cmp(const void *a, const void *b)
{
    const param_t *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* "utm_*" strips every name that starts with "utm_"; others match whole. */
static int stripped(const char *name, size_t len, char *const *strip, size_t nstrip)
{
    for (size_t i = 0; i < nstrip; i++) {
        size_t sl = strlen(strip[i]);
        if (sl && strip[i][sl - 1] == '*') {
            if (len >= sl - 1 && memcmp(name, strip[i], sl - 1) == 0)
                return 1;
        } else if (len == sl && memcmp(name, strip[i], sl) == 0) {
            return 1;
        }
    }
    return 0;
}

size_t vc_cache_key(const char *scheme, const char *host, size_t hlen, const char *path, size_t plen, const char *query,
                    size_t qlen, char *const *strip, size_t nstrip, char *out, size_t cap)
{
    size_t slen = strlen(scheme), at = 0;
    /* The scheme's default port says nothing: "host:443" is "host". */
    const char *dflt = strcmp(scheme, "https") == 0 ? ":443" : ":80";
    size_t dl = strlen(dflt);
    if (hlen > dl && memcmp(host + hlen - dl, dflt, dl) == 0)
        hlen -= dl;
    if (slen + 3 + hlen + plen + 1 + qlen > cap)
        return 0;
    /* The variants' separator never comes from a URL (vc_cache_variant_key). */
    if (memchr(host, VC_CACHE_VARIANT_SEP, hlen) || memchr(path, VC_CACHE_VARIANT_SEP, plen) ||
        (qlen && memchr(query, VC_CACHE_VARIANT_SEP, qlen)))
        return 0;
    memcpy(out, scheme, slen);
    at = slen;
    memcpy(out + at, "://", 3);
    at += 3;
    for (size_t i = 0; i < hlen; i++) {
        char c = host[i];
        out[at++] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
    }
    memcpy(out + at, path, plen);
    at += plen;
    if (qlen == 0)
        return at;
    /* The parameters, sorted, without those stripped. */
    size_t n = 1;
    for (size_t i = 0; i < qlen; i++)
        n += query[i] == '&';
    param_t stack[32];
    param_t *ps = n <= 32 ? stack : malloc(n * sizeof(*ps));
    if (ps == NULL)
        return 0;
    size_t np = 0;
    for (size_t i = 0; i <= qlen;) {
        const char *amp = memchr(query + i, '&', qlen - i);
        size_t end = amp ? (size_t)(amp - query) : qlen;
        const char *eq = memchr(query + i, '=', end - i);
        size_t nlen = eq ? (size_t)(eq - query) - i : end - i;
        if (end > i && !stripped(query + i, nlen, strip, nstrip))
            ps[np++] = (param_t){query + i, end - i};
        i = end + 1;
    }
    qsort(ps, np, sizeof(*ps), param_cmp);
    for (size_t i = 0; i < np; i++) {
        out[at++] = i == 0 ? '?' : '&';
        memcpy(out + at, ps[i].p, ps[i].len);
        at += ps[i].len;
    }
    if (ps != stack)
        free(ps);
    return at;
}

/* ---- entries ------------------------------------------------------------- */

#define FIXED (4 + 4 + 8 + 8 + 8 + 8 + 8 + 4 + 4 + 4)

static uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return le32toh(v);
}

static uint16_t get16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return le16toh(v);
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return le64toh(v);
}

int vc_cache_entry_parse(const void *bytes, size_t len, vc_cache_entry_t *e)
{
    const unsigned char *p = bytes;
    if (len < FIXED || get32(p) != VC_CACHE_ENTRY_MAGIC)
        return -1;
    e->status = get32(p + 4);
    e->stored_ms = (int64_t)get64(p + 8);
    e->fresh_ms = (int64_t)get64(p + 16);
    e->stale_ms = (int64_t)get64(p + 24);
    e->error_ms = (int64_t)get64(p + 32);
    e->seq = get64(p + 40);
    e->nheaders = get32(p + 48);
    e->ntags = get32(p + 52);
    uint32_t body_len = get32(p + 56);
    size_t at = FIXED;
    e->headers = p + at;
    for (uint32_t i = 0; i < e->nheaders; i++) {
        if (len - at < 6)
            return -1;
        size_t n = get16(p + at), v = get32(p + at + 2);
        at += 6;
        if (len - at < n || len - at - n < v)
            return -1;
        at += n + v;
    }
    e->tags = p + at;
    for (uint32_t i = 0; i < e->ntags; i++) {
        if (len - at < 2)
            return -1;
        size_t n = get16(p + at);
        at += 2;
        if (len - at < n)
            return -1;
        at += n;
    }
    if (len - at != body_len)
        return -1;
    e->body = (const char *)p + at;
    e->body_len = body_len;
    e->bytes = bytes;
    e->len = len;
    return 0;
}

int vc_cache_entry_header(const vc_cache_entry_t *e, size_t *pos, uint32_t *i, vc_cache_header_t *h)
{
    if (*i >= e->nheaders)
        return 0;
    const unsigned char *p = e->headers + *pos;
    h->name_len = get16(p);
    h->value_len = get32(p + 2);
    h->name = (const char *)p + 6;
    h->value = h->name + h->name_len;
    *pos += 6 + h->name_len + h->value_len;
    (*i)++;
    return 1;
}

int vc_cache_entry_tag(const vc_cache_entry_t *e, size_t *pos, uint32_t *i, const char **tag, size_t *len)
{
    if (*i >= e->ntags)
        return 0;
    const unsigned char *p = e->tags + *pos;
    *len = get16(p);
    *tag = (const char *)p + 2;
    *pos += 2 + *len;
    (*i)++;
    return 1;
}

size_t vc_cache_entry_size(const vc_cache_entry_in_t *in)
{
    size_t n = FIXED + in->body_len;
    for (size_t i = 0; i < in->nheaders; i++)
        n += 6 + in->headers[i].name_len + in->headers[i].value_len;
    for (size_t i = 0; i < in->ntags; i++)
        n += 2 + in->tag_lens[i];
    return n;
}

static unsigned char *put32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, 4);
    return p + 4;
}

static unsigned char *put16(unsigned char *p, uint16_t v)
{
    v = htole16(v);
    memcpy(p, &v, 2);
    return p + 2;
}

static unsigned char *put64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, 8);
    return p + 8;
}

static unsigned char *put(unsigned char *p, const void *s, size_t n)
{
    if (n)
        memcpy(p, s, n);
    return p + n;
}

void vc_cache_entry_write(const vc_cache_entry_in_t *in, void *out)
{
    unsigned char *p = out;
    p = put32(p, VC_CACHE_ENTRY_MAGIC);
    p = put32(p, in->status);
    p = put64(p, (uint64_t)in->stored_ms);
    p = put64(p, (uint64_t)in->fresh_ms);
    p = put64(p, (uint64_t)in->stale_ms);
    p = put64(p, (uint64_t)in->error_ms);
    p = put64(p, in->seq);
    p = put32(p, (uint32_t)in->nheaders);
    p = put32(p, (uint32_t)in->ntags);
    p = put32(p, (uint32_t)in->body_len);
    for (size_t i = 0; i < in->nheaders; i++) {
        p = put16(p, (uint16_t)in->headers[i].name_len);
        p = put32(p, (uint32_t)in->headers[i].value_len);
        p = put(p, in->headers[i].name, in->headers[i].name_len);
        p = put(p, in->headers[i].value, in->headers[i].value_len);
    }
    for (size_t i = 0; i < in->ntags; i++) {
        p = put16(p, (uint16_t)in->tag_lens[i]);
        p = put(p, in->tags[i], in->tag_lens[i]);
    }
    put(p, in->body, in->body_len);
}

void vc_cache_entry_set_fresh(void *bytes, int64_t fresh_ms)
{
    put64((unsigned char *)bytes + 16, (uint64_t)fresh_ms);
}

void vc_cache_entry_set_seq(void *bytes, uint64_t seq)
{
    put64((unsigned char *)bytes + 40, seq);
}

size_t vc_cache_variant_key(const char *base, size_t blen, const char *const *values, const size_t *lens, size_t n,
                            char *out, size_t cap)
{
    if (blen + 1 > cap)
        return 0;
    memcpy(out, base, blen);
    size_t at = blen;
    out[at++] = VC_CACHE_VARIANT_SEP;
    for (size_t i = 0; i < n; i++) {
        const char *v = values[i] ? values[i] : "";
        size_t l = values[i] ? lens[i] : 0;
        while (l && (*v == ' ' || *v == '\t'))
            v++, l--;
        while (l && (v[l - 1] == ' ' || v[l - 1] == '\t'))
            l--;
        size_t commas = 0;
        for (size_t c = 0; c < l; c++)
            commas += v[c] == ',';
        if (at + l + commas + 1 > cap)
            return 0;
        /* RFC 9111 4.1: values that differ only by the whitespace a list
         * allows are one ("fr,de", "fr ,  de"): ", " between elements. */
        size_t start = at;
        for (size_t c = 0; c < l; c++) {
            if (v[c] == ',') {
                while (at > start && (out[at - 1] == ' ' || out[at - 1] == '\t'))
                    at--;
                out[at++] = ',';
                out[at++] = ' ';
                while (c + 1 < l && (v[c + 1] == ' ' || v[c + 1] == '\t'))
                    c++;
                continue;
            }
            /* the separator may not come from a value */
            out[at++] = v[c] == VC_CACHE_VARIANT_SEP ? ' ' : v[c];
        }
        out[at++] = VC_CACHE_VARIANT_SEP;
    }
    return at;
}

int vc_cache_rule_parse(const char *s, vc_cache_rule_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->ttl_ms = out->max_ttl_ms = out->grace_ms = -1;
    char word[256];
    int n = 0, words = 0;
    for (const char *p = s; sscanf(p, "%255s%n", word, &n) == 1; p += n, words++) {
        if (words == 0) {
            if (word[0] != '/') {
                snprintf(err, errlen, "\"%s\" does not start with a path (\"/api/ off\")", s);
                return -1;
            }
            snprintf(out->prefix, sizeof(out->prefix), "%s", word);
            continue;
        }
        if (strcmp(word, "off") == 0 || strcmp(word, "sessions") == 0) {
            *(word[0] == 'o' ? &out->off : &out->sessions) = 1;
            continue;
        }
        static const char *const names[] = {"ttl=", "max_ttl=", "grace="};
        int64_t *dest[] = {&out->ttl_ms, &out->max_ttl_ms, &out->grace_ms};
        size_t k = 0;
        while (k < 3 && strncmp(word, names[k], strlen(names[k])) != 0)
            k++;
        int64_t ms = k < 3 ? vc_parse_duration_ms(word + strlen(names[k])) : -1;
        if (ms < 0 || ms > 365LL * 86400 * 1000) {
            snprintf(err, errlen,
                     "\"%s\" in \"%s\": expected off, sessions, ttl=D, max_ttl=D or grace=D (D: \"90s\", \"10m\")",
                     word, s);
            return -1;
        }
        *dest[k] = ms;
    }
    if (words == 0) {
        snprintf(err, errlen, "an empty rule");
        return -1;
    }
    if (words == 1) {
        snprintf(err, errlen, "\"%s\" says nothing: add off, ttl=D, max_ttl=D or grace=D", s);
        return -1;
    }
    return 0;
}
