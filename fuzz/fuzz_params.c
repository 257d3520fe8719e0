/* libFuzzer: $_SERVER building from what a client controls (the request
 * target pieces, header names and values, Cookie joining, Basic
 * credentials). Input: lines; the first four are method, request URI,
 * query and PATH_INFO, each further "name: value" line a header (values may
 * hold any byte but a newline). Nothing may crash or overrun, HTTP_* names
 * hold only [A-Z0-9_], and every value is NUL-terminated at its length. */
#include "../daemons/vc-php/params.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_HEADERS 64

static char *dup_span(const unsigned char *s, size_t n)
{
    char *d = malloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    Vc__RequestHead h = VC__REQUEST_HEAD__INIT;
    Vc__Header hs[MAX_HEADERS], *hp[MAX_HEADERS];
    char *owned[4 + 2 * MAX_HEADERS];
    size_t nowned = 0, nh = 0, line = 0;
    const unsigned char *p = data, *end = data + size;
    while (p < end && nh < MAX_HEADERS) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        if (line == 0) {
            h.method = owned[nowned++] = dup_span(p, n);
        } else if (line <= 3) {
            ProtobufCBinaryData b = {n, (uint8_t *)p};
            if (line == 1)
                h.request_uri = h.document_uri = b;
            else if (line == 2)
                h.query = b;
            else
                h.path_info = b;
        } else {
            const unsigned char *colon = memchr(p, ':', n);
            if (colon) {
                vc__header__init(&hs[nh]);
                hs[nh].name = owned[nowned++] = dup_span(p, (size_t)(colon - p));
                hs[nh].value.data = (uint8_t *)colon + 1;
                hs[nh].value.len = n - (size_t)(colon + 1 - p);
                hp[nh] = &hs[nh];
                nh++;
            }
        }
        line++;
        p = nl ? nl + 1 : end;
    }
    h.headers = hp;
    h.n_headers = nh;
    h.content_length = size;

    vc_params_t ps;
    vc_params_build(&ps, &h, "www-data", "/var/www");
    size_t cookie_len = 0, ncookies = 0;
    for (size_t i = 0; i < nh; i++)
        if (!strcasecmp(hs[i].name, "cookie"))
            cookie_len += hs[i].value.len + (ncookies++ ? 2 : 0);
    for (size_t i = 0; i < ps.n; i++) {
        const vc_param_t *v = &ps.v[i];
        if (v->name[0] == '\0' || v->value[v->value_len] != '\0')
            abort();
        if (strncmp(v->name, "HTTP_", 5) == 0)
            for (const char *c = v->name + 5; *c; c++)
                if (!((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
                    abort();
    }
    const vc_param_t *cookie = vc_params_find(&ps, "HTTP_COOKIE", 11);
    if (cookie && cookie->value_len != cookie_len)
        abort(); /* every Cookie header joined, nothing else */
    vc_params_free(&ps);

    char user[16];
    size_t ul = vc_basic_auth_user((const char *)data, size, user, sizeof(user));
    if (ul >= sizeof(user) || user[ul] != '\0')
        abort();
    for (size_t i = 0; i < nowned; i++)
        free(owned[i]);
    return 0;
}
