/*
 * $_SERVER as php-fpm sees it behind nginx. One allocation per request,
 * sized before anything is copied: a request with many headers costs one
 * malloc, not two per parameter.
 */
#include "params.h"
#include "vc_util.h"

#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Parameters that are not request headers: the fixed list below. */
#define FIXED_PARAMS 26

typedef struct builder {
    vc_params_t *p;
    char *next; /* free string space */
} builder_t;

static char *put(builder_t *b, const char *s, size_t len)
{
    char *d = b->next;
    if (len)
        memcpy(d, s, len);
    d[len] = '\0';
    b->next += len + 1;
    return d;
}

static void add(builder_t *b, const char *name, const char *value, size_t len)
{
    vc_param_t *v = &b->p->v[b->p->n++];
    v->name = name;
    v->value = put(b, value ? value : "", value ? len : 0);
    v->value_len = value ? len : 0;
}

static void add_str(builder_t *b, const char *name, const char *value)
{
    add(b, name, value, value ? strlen(value) : 0);
}

static void add_bytes(builder_t *b, const char *name, ProtobufCBinaryData d)
{
    add(b, name, (const char *)d.data, d.len);
}

static const Vc__Header *find_header(const Vc__RequestHead *h, const char *name)
{
    for (size_t i = 0; i < h->n_headers; i++)
        if (strcasecmp(h->headers[i]->name, name) == 0)
            return h->headers[i];
    return NULL;
}

/* nginx (ignore_invalid_headers on, underscores_in_headers off) drops
 * request headers whose names hold anything but letters, digits and '-'.
 * It matters: "X_Forwarded_For" would otherwise become the same
 * HTTP_X_FORWARDED_FOR as "X-Forwarded-For". */
static int valid_header_name(const char *n)
{
    if (*n == '\0')
        return 0;
    for (; *n; n++)
        if (!isalnum((unsigned char)*n) && *n != '-')
            return 0;
    return 1;
}

static int is_cookie(const Vc__Header *hd)
{
    return strcasecmp(hd->name, "cookie") == 0;
}

size_t vc_basic_auth_user(const char *value, size_t len, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    out[0] = '\0';
    /* As nginx: "Basic " in any case, then spaces. */
    if (len < 6 || strncasecmp(value, "Basic ", 6) != 0)
        return 0;
    const char *b64 = value + 6, *end = value + len;
    while (b64 < end && *b64 == ' ')
        b64++;
    /* nginx decodes up to the first '=' and ignores what follows. */
    const char *eq = memchr(b64, '=', (size_t)(end - b64));
    size_t n = (size_t)((eq ? eq : end) - b64);
    size_t dec_len = 0;
    const char *stop = NULL;
    if (n == 0 ||
        sodium_base642bin((unsigned char *)out, cap - 1, b64, n, NULL, &dec_len, &stop,
                          sodium_base64_VARIANT_ORIGINAL_NO_PADDING) != 0 ||
        stop != b64 + n) {
        out[0] = '\0';
        return 0;
    }
    char *colon = memchr(out, ':', dec_len);
    if (colon == NULL) {
        out[0] = '\0';
        return 0;
    }
    *colon = '\0';
    return (size_t)(colon - out);
}

void vc_params_build(vc_params_t *p, const Vc__RequestHead *h, const char *user, const char *home)
{
    /* Size everything first: each string once plus its NUL, header names
     * with "HTTP_", the joined Cookie with "; " between parts. */
    size_t strings = 1024 + (user ? strlen(user) : 0) + (home ? strlen(home) : 0);
    strings += h->path_info.len + h->query.len + h->request_uri.len + h->document_uri.len + 4;
    const char *cstrs[] = {h->script_filename, h->method,      h->script_name, h->document_root, h->protocol,
                           h->scheme,          h->remote_addr, h->server_addr, h->server_name};
    for (size_t i = 0; i < sizeof(cstrs) / sizeof(cstrs[0]); i++)
        strings += (cstrs[i] ? strlen(cstrs[i]) : 0) + 1;
    for (size_t i = 0; i < h->n_headers; i++)
        strings += 5 + strlen(h->headers[i]->name) + 1 + h->headers[i]->value.len + 3;
    for (size_t i = 0; i < h->n_params; i++)
        strings += h->params[i]->value.len + 1;
    size_t slots = FIXED_PARAMS + h->n_headers + h->n_params;
    p->mem = vc_malloc(slots * sizeof(vc_param_t) + strings);
    p->v = (vc_param_t *)p->mem;
    p->n = 0;
    builder_t b = {p, p->mem + slots * sizeof(vc_param_t)};
    char num[32];

    /* fpm's environment (clear_env = yes keeps USER and HOME). */
    add_str(&b, "USER", user);
    add_str(&b, "HOME", home);
    /* fastcgi-php.conf, then fastcgi.conf, in their order. */
    add_bytes(&b, "PATH_INFO", h->path_info);
    add_str(&b, "SCRIPT_FILENAME", h->script_filename);
    add_bytes(&b, "QUERY_STRING", h->query);
    add_str(&b, "REQUEST_METHOD", h->method);
    const Vc__Header *ct = find_header(h, "content-type");
    add(&b, "CONTENT_TYPE", ct ? (const char *)ct->value.data : "", ct ? ct->value.len : 0);
    const Vc__Header *cl = find_header(h, "content-length");
    if (cl) {
        add_bytes(&b, "CONTENT_LENGTH", cl->value);
    } else if (h->has_body || h->content_length > 0) {
        /* h2o keeps no Content-Length header; nginx says the length of any
         * body it read (a chunked one too), "0" included. */
        snprintf(num, sizeof(num), "%llu", (unsigned long long)h->content_length);
        add_str(&b, "CONTENT_LENGTH", num);
    } else {
        add_str(&b, "CONTENT_LENGTH", "");
    }
    add_str(&b, "SCRIPT_NAME", h->script_name);
    add_bytes(&b, "REQUEST_URI", h->request_uri);
    add_bytes(&b, "DOCUMENT_URI", h->document_uri);
    add_str(&b, "DOCUMENT_ROOT", h->document_root);
    add_str(&b, "SERVER_PROTOCOL", h->protocol);
    add_str(&b, "REQUEST_SCHEME", h->scheme);
    if (h->https)
        add_str(&b, "HTTPS", "on");
    add_str(&b, "GATEWAY_INTERFACE", "CGI/1.1");
    add_str(&b, "SERVER_SOFTWARE", "Velocity/" VC_VERSION);
    add_str(&b, "REMOTE_ADDR", h->remote_addr);
    snprintf(num, sizeof(num), "%u", h->remote_port);
    add_str(&b, "REMOTE_PORT", num);
    const Vc__Header *auth = find_header(h, "authorization");
    char who[256];
    size_t who_len = auth ? vc_basic_auth_user((const char *)auth->value.data, auth->value.len, who, sizeof(who)) : 0;
    add(&b, "REMOTE_USER", who, who_len);
    add_str(&b, "SERVER_ADDR", h->server_addr);
    snprintf(num, sizeof(num), "%u", h->server_port);
    add_str(&b, "SERVER_PORT", num);
    add_str(&b, "SERVER_NAME", h->server_name);
    add_str(&b, "REDIRECT_STATUS", "200");
    /* The site's own (its realtime app): names the front chose. */
    for (size_t i = 0; i < h->n_params; i++)
        add_bytes(&b, h->params[i]->name, h->params[i]->value);

    /* Request headers as HTTP_*. nginx joins repeated Cookie headers with
     * "; " (in the first one's place) and passes other repeats as separate
     * parameters (PHP keeps the last). */
    int cookies_done = 0;
    for (size_t i = 0; i < h->n_headers; i++) {
        const Vc__Header *hd = h->headers[i];
        if (!valid_header_name(hd->name) || !strcasecmp(hd->name, "content-type") ||
            !strcasecmp(hd->name, "content-length"))
            continue;
        if (is_cookie(hd) && cookies_done)
            continue;
        char *name = b.next;
        memcpy(name, "HTTP_", 5);
        size_t j = 5;
        for (const char *c = hd->name; *c; c++)
            name[j++] = *c == '-' ? '_' : (char)toupper((unsigned char)*c);
        name[j] = '\0';
        b.next += j + 1;
        if (!is_cookie(hd)) {
            add_bytes(&b, name, hd->value);
            continue;
        }
        cookies_done = 1;
        vc_param_t *v = &p->v[p->n++];
        v->name = name;
        v->value = b.next;
        size_t len = 0, parts = 0;
        for (size_t k = i; k < h->n_headers; k++) {
            const Vc__Header *c = h->headers[k];
            if (!is_cookie(c))
                continue;
            if (parts++) {
                memcpy(v->value + len, "; ", 2);
                len += 2;
            }
            if (c->value.len)
                memcpy(v->value + len, c->value.data, c->value.len);
            len += c->value.len;
        }
        v->value[len] = '\0';
        v->value_len = len;
        b.next += len + 1;
    }
}

void vc_params_free(vc_params_t *p)
{
    free(p->mem);
    memset(p, 0, sizeof(*p));
}

const vc_param_t *vc_params_find(const vc_params_t *p, const char *name, size_t len)
{
    for (size_t i = p->n; i-- > 0;)
        if (strncmp(p->v[i].name, name, len) == 0 && p->v[i].name[len] == '\0')
            return &p->v[i];
    return NULL;
}
