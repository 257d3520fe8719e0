#include "vc_framing.h"
#include "vc_log.h"
#include "vc_util.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static uint64_t refused;

uint64_t vc_framing_refused_total(void)
{
    return refused;
}

static int name_is(const struct phr_header *h, const char *name, size_t len)
{
    return h->name_len == len && strncasecmp(h->name, name, len) == 0;
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Transfer-Encoding, all its lines taken as one list (RFC 9110, 5.3):
 * 1 if the list is exactly "chunked", the one coding h2o decodes. Any
 * other (gzip first, chunked twice, chunked not last, a parameter) is
 * refused, as nginx does: read otherwise, the body's end is a guess. */
static int te_is_chunked(const struct phr_header *hs, size_t n)
{
    int codings = 0, chunked = 0;
    for (size_t i = 0; i < n; i++) {
        if (!name_is(&hs[i], "transfer-encoding", 17))
            continue;
        const char *v = hs[i].value, *end = v + hs[i].value_len;
        while (v < end) {
            const char *comma = memchr(v, ',', (size_t)(end - v));
            const char *e = comma ? comma : end, *s = v;
            while (s < e && is_ows(*s))
                s++;
            const char *t = e;
            while (t > s && is_ows(t[-1]))
                t--;
            if (t > s) { /* an empty list element is allowed and means nothing */
                codings++;
                chunked += (t - s == 7 && strncasecmp(s, "chunked", 7) == 0);
            }
            v = comma ? comma + 1 : end;
        }
    }
    return codings == 1 && chunked == 1;
}

static int digits_only(const char *v, size_t n)
{
    if (n == 0 || n > 18) /* 18 digits: under 2^63, so no overflow anywhere after */
        return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] < '0' || v[i] > '9')
            return 0;
    return 1;
}

/* uri-host [ ":" port ] (RFC 3986): a reg-name, an IPv4 address or an IP
 * literal in brackets. Anything else in Host ('/', '@', spaces, '\') is
 * how cache keys and virtual hosts get confused. */
static int host_ok(const char *v, size_t n)
{
    static const char extra[] = "-._~!$&'()*+,;=:%[]";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr(extra, c)))
            return 0;
    }
    return 1;
}

/* "http://host/p?q" to "/p?q", its authority in host. The buffer is
 * rewritten where "/" must be put before a query ("http://h?q"): the
 * authority moves to the start of the target and '/' goes just before
 * the rest, in bytes the scheme alone leaves free. */
static const char *absolute_form(vc_framing_head_t *h, const char **host, size_t *host_len)
{
    char *p = (char *)*h->path;
    size_t n = *h->path_len, scheme;
    if (n >= 7 && strncasecmp(p, "http://", 7) == 0)
        scheme = 7;
    else if (n >= 8 && strncasecmp(p, "https://", 8) == 0)
        scheme = 8;
    else
        return NULL;
    char *a = p + scheme;
    size_t alen = 0;
    while (scheme + alen < n && a[alen] != '/' && a[alen] != '?' && a[alen] != '#')
        alen++;
    char *rest = a + alen;
    size_t rlen = n - scheme - alen;
    if (alen == 0)
        return "absolute form without a host";
    if (memchr(a, '@', alen))
        return "user information in the request target";
    if (memchr(rest, '#', rlen))
        return "fragment in the request target";
    if (rlen > 0 && rest[0] == '/') {
        *host = a;
        *host_len = alen;
        *h->path = rest;
        *h->path_len = rlen;
        return NULL;
    }
    memmove(p, a, alen);
    rest[-1] = '/';
    *host = p;
    *host_len = alen;
    *h->path = rest - 1;
    *h->path_len = rlen + 1;
    return NULL;
}

const char *vc_framing_check(vc_framing_head_t *h)
{
    struct phr_header *hs = h->headers;
    size_t n = h->num_headers;
    size_t hosts = 0, lengths = 0, encodings = 0, host_at = 0;
    for (size_t i = 0; i < n; i++) {
        if (hs[i].name == NULL)
            return "obs-fold (a header line continued on the next)";
        if (name_is(&hs[i], "host", 4)) {
            hosts++;
            host_at = i;
        } else if (name_is(&hs[i], "content-length", 14)) {
            lengths++;
            if (!digits_only(hs[i].value, hs[i].value_len))
                return "Content-Length is not a number";
        } else if (name_is(&hs[i], "transfer-encoding", 17)) {
            encodings++;
        }
    }
    if (hosts > 1)
        return "two Host lines";
    if (lengths > 1)
        return "two Content-Length lines";
    if (encodings > 0) {
        if (lengths > 0)
            return "Content-Length with Transfer-Encoding";
        if (h->minor_version == 0)
            return "Transfer-Encoding in an HTTP/1.0 request";
        if (!te_is_chunked(hs, n))
            return "Transfer-Encoding other than chunked";
    }

    /* RFC 9112, 3.2: an HTTP/1.1 request without Host is refused, with an
     * absolute-form target too (as nginx does); one with, has its Host
     * replaced by the target's authority. */
    if (hosts == 0 && h->minor_version == 1)
        return "HTTP/1.1 request without Host";
    const char *host = NULL;
    size_t host_len = 0;
    const char *why = absolute_form(h, &host, &host_len);
    if (why)
        return why;
    if (hosts == 0)
        return NULL; /* HTTP/1.0: the default site */
    if (host) {
        hs[host_at].value = host;
        hs[host_at].value_len = host_len;
    }
    if (!host_ok(hs[host_at].value, hs[host_at].value_len))
        return "Host is not a host name";
    return NULL;
}

typedef int (*phr_parse_request_fn)(const char *, size_t, const char **, size_t *, const char **, size_t *, int *,
                                    struct phr_header *, size_t *, size_t);

/* libh2o's HTTP/1 parser calls this instead of picohttpparser's own (see
 * framing.h). A parse error (-1) is what h2o answers with 400 and a
 * close; an incomplete head (-2) is left for h2o to read more. */
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len, const char **path,
                      size_t *path_len, int *minor_version, struct phr_header *headers, size_t *num_headers,
                      size_t last_len)
{
    static phr_parse_request_fn real;
    if (real == NULL) {
        real = (phr_parse_request_fn)dlsym(RTLD_NEXT, "phr_parse_request");
        VC_ASSERT(real != NULL); /* libh2o, which defines it, is linked in */
    }
    int r = real(buf, len, method, method_len, path, path_len, minor_version, headers, num_headers, last_len);
    if (r <= 0)
        return r;
    vc_framing_head_t h = {.path = path,
                           .path_len = path_len,
                           .minor_version = *minor_version,
                           .headers = headers,
                           .num_headers = *num_headers};
    const char *why = vc_framing_check(&h);
    if (why == NULL)
        return r;
    if (refused++ % 1000 == 0)
        vc_log(VC_LOG_NOTICE, "framing", "400 and closed: %s (RFC 9112; %llu so far)", why,
               (unsigned long long)refused);
    return -1;
}
