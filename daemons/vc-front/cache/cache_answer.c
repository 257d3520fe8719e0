/*
 * Answering a request from a cache entry (cache_internal.h): its status
 * and stored headers with Age and Date, 304 for a matching validator
 * (RFC 9110 13), and a Range of it (RFC 9110 14) when If-Range holds.
 */
#include "cache_internal.h"
#include "vc_httpdate.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

const char *cache_reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 304: return "Not Modified";
    case 308: return "Permanent Redirect";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 410: return "Gone";
    case 414: return "URI Too Long";
    case 501: return "Not Implemented";
    default: return "";
    }
}

/* An entity tag without its weak prefix (If-None-Match compares weakly,
 * RFC 9110 13.1.2). */
static h2o_iovec_t opaque(const char *p, size_t n)
{
    if (n >= 2 && p[0] == 'W' && p[1] == '/')
        p += 2, n -= 2;
    return h2o_iovec_init(p, n);
}

static int etag_matches(h2o_iovec_t inm, const char *etag, size_t elen)
{
    h2o_iovec_t want = opaque(etag, elen);
    for (size_t i = 0; i < inm.len;) {
        while (i < inm.len && (inm.base[i] == ' ' || inm.base[i] == ','))
            i++;
        size_t start = i;
        while (i < inm.len && inm.base[i] != ',')
            i++;
        size_t end = i;
        while (end > start && inm.base[end - 1] == ' ')
            end--;
        h2o_iovec_t got = opaque(inm.base + start, end - start);
        if ((end - start == 1 && inm.base[start] == '*') || h2o_memis(got.base, got.len, want.base, want.len))
            return 1;
    }
    return 0;
}

/* Whether the client already has this entry (RFC 9110 13.2.2): by its
 * ETag when it sent If-None-Match, else by Last-Modified. */
static int not_modified(h2o_req_t *req, const vc_cache_entry_t *e)
{
    ssize_t inm = h2o_find_header(&req->headers, H2O_TOKEN_IF_NONE_MATCH, -1);
    ssize_t ims = inm == -1 ? h2o_find_header(&req->headers, H2O_TOKEN_IF_MODIFIED_SINCE, -1) : -1;
    if (inm == -1 && ims == -1)
        return 0;
    vc_cache_header_t h;
    size_t pos = 0;
    uint32_t i = 0;
    while (vc_cache_entry_header(e, &pos, &i, &h)) {
        if (inm != -1 && h.name_len == 4 && strncasecmp(h.name, "etag", 4) == 0)
            return etag_matches(req->headers.entries[inm].value, h.value, h.value_len);
        if (ims != -1 && h.name_len == 13 && strncasecmp(h.name, "last-modified", 13) == 0) {
            /* Not modified since a date at or after its Last-Modified
             * (RFC 9110 13.1.3); a date that is not one counts for
             * nothing. */
            h2o_iovec_t since = req->headers.entries[ims].value;
            int64_t want = vc_httpdate_parse(since.base, since.len), lm = vc_httpdate_parse(h.value, h.value_len);
            return want >= 0 && lm >= 0 && lm <= want;
        }
    }
    return 0;
}

/* Headers a 304 keeps (RFC 9110 15.4.5). */
static int kept_in_304(const char *n, size_t l)
{
    static const char *const keep[] = {"etag", "cache-control", "expires", "vary", "last-modified", "content-location"};
    for (size_t i = 0; i < VC_ARRAY_SIZE(keep); i++)
        if (l == strlen(keep[i]) && strncasecmp(n, keep[i], l) == 0)
            return 1;
    return 0;
}

void cache_add_header(h2o_req_t *req, const char *name, size_t nlen, const char *value, size_t vlen)
{
    char *lc = h2o_mem_alloc_pool(&req->pool, nlen + 1);
    for (size_t k = 0; k < nlen; k++)
        lc[k] = (char)h2o_tolower(name[k]);
    lc[nlen] = '\0';
    char *orig = h2o_strdup(&req->pool, name, nlen).base;
    h2o_iovec_t v = h2o_strdup(&req->pool, value, vlen);
    h2o_add_header_by_str(&req->pool, &req->res.headers, lc, nlen, 1, orig, v.base, v.len);
}

ssize_t cache_add_status(h2o_req_t *req, const char *value)
{
    h2o_iovec_t s = h2o_strdup(&req->pool, value, SIZE_MAX);
    h2o_iovec_t *key = cache_settings()->debug ? h2o_req_getenv(req, H2O_STRLIT("vc-cache-key"), 0) : NULL;
    if (key) {
        /* RFC 9211's key, as an sf-string: quotes and backslashes escaped,
         * what is not printable (a variant's separators) a space. */
        char *q = h2o_mem_alloc_pool(&req->pool, key->len * 2 + 1);
        size_t n = 0;
        for (size_t i = 0; i < key->len; i++) {
            char c = key->base[i];
            if (c == '"' || c == '\\')
                q[n++] = '\\';
            q[n++] = (unsigned char)c < 0x20 || (unsigned char)c >= 0x7f ? ' ' : c;
        }
        s = h2o_concat(&req->pool, s, h2o_iovec_init(H2O_STRLIT("; key=\"")), h2o_iovec_init(q, n),
                       h2o_iovec_init(H2O_STRLIT("\"")));
    }
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("cache-status"), 0, "Cache-Status", s.base, s.len);
    return (ssize_t)req->res.headers.size - 1;
}

void cache_add_entry_headers(h2o_req_t *req, const vc_cache_entry_t *e, int64_t now, int nm)
{
    vc_cache_header_t h;
    size_t pos = 0;
    uint32_t i = 0;
    while (vc_cache_entry_header(e, &pos, &i, &h))
        if (!nm || kept_in_304(h.name, h.name_len))
            cache_add_header(req, h.name, h.name_len, h.value, h.value_len);
    char age[24];
    int64_t secs = now > e->stored_ms ? (now - e->stored_ms) / 1000 : 0;
    int alen = snprintf(age, sizeof(age), "%lld", (long long)secs);
    cache_add_header(req, "Age", 3, age, (size_t)alen);
}

/* The value of e's header name, or NULL. */
static const char *entry_header(const vc_cache_entry_t *e, const char *name, size_t *len)
{
    vc_cache_header_t h;
    size_t pos = 0;
    uint32_t i = 0;
    while (vc_cache_entry_header(e, &pos, &i, &h))
        if (h.name_len == strlen(name) && strncasecmp(h.name, name, h.name_len) == 0) {
            *len = h.value_len;
            return h.value;
        }
    return NULL;
}

/* If-Range (RFC 9110 13.1.5): the range only if the client's copy is
 * this one, by a strong entity tag or the exact Last-Modified date. */
static int if_range_holds(h2o_req_t *req, const vc_cache_entry_t *e)
{
    ssize_t at = h2o_find_header(&req->headers, H2O_TOKEN_IF_RANGE, -1);
    if (at == -1)
        return 1;
    h2o_iovec_t want = req->headers.entries[at].value;
    size_t len;
    int tag = want.len && want.base[0] == '"';
    const char *v = entry_header(e, tag ? "etag" : "last-modified", &len);
    if (v == NULL)
        return 0;
    if (!tag) { /* the same date, however it is written */
        int64_t d = vc_httpdate_parse(want.base, want.len);
        return d >= 0 && d == vc_httpdate_parse(v, len);
    }
    return !(len >= 2 && v[0] == 'W' && v[1] == '/') && h2o_memis(want.base, want.len, v, len);
}

/* A GET with Range answered from e: one range (206), or none that can be
 * (416). 0 if the whole body is to be sent. */
static int serve_range(h2o_req_t *req, const vc_cache_entry_t *e, int64_t now, const char *status)
{
    ssize_t at = h2o_find_header(&req->headers, H2O_TOKEN_RANGE, -1);
    if (at == -1 || e->status != 200 || !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
        !if_range_holds(req, e))
        return 0;
    uint64_t first, last;
    h2o_iovec_t v = req->headers.entries[at].value;
    int r = cache_policy_range(v.base, v.len, e->body_len, &first, &last);
    if (r == 0)
        return 0;
    char cr[64];
    if (r < 0) {
        req->res.status = 416;
        req->res.reason = "Range Not Satisfiable";
        int n = snprintf(cr, sizeof(cr), "bytes */%zu", e->body_len);
        cache_add_header(req, "Content-Range", 13, cr, (size_t)n);
        cache_add_status(req, status);
        h2o_send_inline(req, "", 0);
        return 1;
    }
    req->res.status = 206;
    req->res.reason = "Partial Content";
    cache_add_entry_headers(req, e, now, 0);
    int n = snprintf(cr, sizeof(cr), "bytes %llu-%llu/%zu", (unsigned long long)first, (unsigned long long)last,
                     e->body_len);
    cache_add_header(req, "Content-Range", 13, cr, (size_t)n);
    cache_add_status(req, status);
    req->res.content_length = (size_t)(last - first + 1);
    h2o_send_inline(req, e->body + first, (size_t)(last - first + 1));
    return 1;
}

void cache_serve(h2o_req_t *req, const vc_cache_entry_t *e, int64_t now, const char *status)
{
    int nm = not_modified(req, e);
    if (!nm && serve_range(req, e, now, status))
        return;
    req->res.status = nm ? 304 : (int)e->status;
    req->res.reason = cache_reason_of(req->res.status);
    cache_add_entry_headers(req, e, now, nm);
    cache_add_status(req, status);
    if (nm || e->status == 204) {
        h2o_send_inline(req, "", 0);
        return;
    }
    req->res.content_length = e->body_len;
    h2o_send_inline(req, e->body, e->body_len); /* copies the body */
}

int cache_add_validators(h2o_req_t *req, const vc_cache_entry_t *e)
{
    if (h2o_find_header(&req->headers, H2O_TOKEN_IF_NONE_MATCH, -1) != -1 ||
        h2o_find_header(&req->headers, H2O_TOKEN_IF_MODIFIED_SINCE, -1) != -1)
        return 0; /* the client's own: its 304 would be for them */
    size_t len;
    int added = 0;
    const char *v = entry_header(e, "etag", &len);
    /* Ours (W/"vc-...", made from the body) means nothing to PHP. */
    if (v && !(len >= 6 && memcmp(v, "W/\"vc-", 6) == 0)) {
        h2o_iovec_t c = h2o_strdup(&req->pool, v, len);
        h2o_add_header(&req->pool, &req->headers, H2O_TOKEN_IF_NONE_MATCH, NULL, c.base, c.len);
        added = 1;
    }
    if ((v = entry_header(e, "last-modified", &len)) != NULL) {
        h2o_iovec_t c = h2o_strdup(&req->pool, v, len);
        h2o_add_header(&req->pool, &req->headers, H2O_TOKEN_IF_MODIFIED_SINCE, NULL, c.base, c.len);
        added = 1;
    }
    return added;
}
