/*
 * One pass of a request through its directory's rules (rewrite.h), and
 * what the result means, as mod_rewrite's fixup hook decides it: nothing,
 * an answer ([F], [G], R=4xx), a redirect (a URL, escaped unless [NE],
 * RewriteBase put back in place of the directory), or an internal
 * redirect to a path (RewriteBase, or the document root taken off).
 * Also the request's strings and variables.
 */
#include "rewrite_internal.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct block {
    struct block *next;
    char data[];
} block_t;

char *rewrite_alloc(rewrite_request_t *r, size_t len)
{
    len = (len + 7) & ~(size_t)7;
    if (r->arena && r->arena_used + len <= r->arena_size) {
        char *p = r->arena + r->arena_used;
        r->arena_used += len;
        return p;
    }
    block_t *b = vc_malloc(sizeof(*b) + len);
    b->next = r->blocks;
    r->blocks = b;
    return b->data;
}

void rewrite_release(rewrite_request_t *r)
{
    for (block_t *b = r->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    r->blocks = NULL;
    r->arena_used = 0;
    r->nstats = 0;
}

char *rewrite_strndup(rewrite_request_t *r, const char *s, size_t len)
{
    char *p = rewrite_alloc(r, len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *rewrite_strdup(rewrite_request_t *r, const char *s)
{
    return rewrite_strndup(r, s, strlen(s));
}

static char *concat(rewrite_request_t *r, const char *a, size_t alen, const char *b, const char *c)
{
    size_t blen = strlen(b), clen = c ? strlen(c) : 0;
    char *p = rewrite_alloc(r, alen + blen + clen + 1);
    memcpy(p, a, alen);
    memcpy(p + alen, b, blen);
    if (c)
        memcpy(p + alen + blen, c, clen);
    p[alen + blen + clen] = '\0';
    return p;
}

int rewrite_stat(rewrite_request_t *r, const char *path, struct stat *st)
{
    for (size_t i = 0; i < r->nstats; i++)
        if (!strcmp(r->stats[i].path, path)) {
            *st = r->stats[i].st;
            return r->stats[i].found;
        }
    int found = stat(path, st) == 0;
    size_t at = r->nstats < VC_ARRAY_SIZE(r->stats) ? r->nstats++ : r->nstats - 1; /* the newest kept */
    r->stats[at].path = rewrite_strdup(r, path);
    r->stats[at].found = found;
    r->stats[at].st = *st;
    return found;
}

const char *rewrite_getenv(const rewrite_request_t *r, const char *name)
{
    for (size_t i = 0; i < r->nenv; i++)
        if (!strcmp(r->env[i].name, name))
            return r->env[i].value;
    return NULL;
}

void rewrite_setenv(rewrite_request_t *r, const char *name, const char *value)
{
    size_t i = 0;
    while (i < r->nenv && strcmp(r->env[i].name, name))
        i++;
    if (value == NULL) { /* E=!name */
        if (i < r->nenv)
            memmove(&r->env[i], &r->env[i + 1], (r->nenv - i - 1) * sizeof(r->env[0]));
        r->nenv -= i < r->nenv;
        return;
    }
    if (i == r->nenv && r->nenv == REWRITE_MAX_ENV) {
        r->out_of_room = 1;
        return;
    }
    r->env[i].name = rewrite_strdup(r, name);
    r->env[i].value = rewrite_strdup(r, value);
    r->nenv += i == r->nenv;
}

/* subst_prefix_path(): input's match prefix (a directory) replaced with
 * subst, which gets a trailing '/'; input itself when it is not below. */
static const char *subst_prefix(rewrite_request_t *r, const char *input, const char *match, const char *subst)
{
    size_t len = strlen(match);
    if (len && match[len - 1] == '/')
        len--;
    if (strncmp(input, match, len) != 0 || input[len] != '/')
        return input;
    size_t slen = strlen(subst);
    int slash = slen == 0 || subst[slen - 1] != '/';
    return concat(r, subst, slen, slash ? "/" : "", input + len + 1);
}

static int kept(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z') || (c && strchr("$-_.+!*'(),:;@&=/~", c));
}

size_t rewrite_escape_path(const char *s, char *out, size_t outlen)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0, written = 0; /* written stops growing at the first piece that does not fit */
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[3] = {(char)*p, 0, 0};
        size_t k = 1;
        if (!kept(*p)) {
            e[0] = '%';
            e[1] = hex[*p >> 4];
            e[2] = hex[*p & 15];
            k = 3;
        }
        if (written == n && n + k < outlen) {
            memcpy(out + n, e, k);
            written += k;
        }
        n += k;
    }
    if (outlen)
        out[written] = '\0';
    return n;
}

const char *rewrite_escape_uri(rewrite_request_t *r, const char *s)
{
    size_t n = rewrite_escape_path(s, NULL, 0);
    char *out = rewrite_alloc(r, n + 1);
    rewrite_escape_path(s, out, n + 1);
    return out;
}

/* escape_absolute_uri(): the path of a URL escaped, not its host. */
static const char *escape_url(rewrite_request_t *r, const char *url, size_t scheme)
{
    const char *cp = url + scheme;
    if (cp[-1] == '/') {
        cp += strcspn(cp, "/");
        if (!*cp || !*++cp)
            return url;
    }
    return concat(r, url, (size_t)(cp - url), rewrite_escape_uri(r, cp), NULL);
}

static int has_ctl_or_space(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return 1;
    return 0;
}

static rewrite_action_t redirect(const rewrite_conf_t *c, rewrite_request_t *r, const char *oargs, int noescape,
                                 const char **uri, int *status)
{
    size_t skip = rewrite_scheme_len(r->filename, NULL);
    const char *f = r->filename;
    if (c->base) {
        /* the directory, in the URL's path, put back as RewriteBase */
        const char *cp = strchr(f + skip, '/');
        if (cp && cp[1]) {
            cp++;
            const char *dir = c->directory[0] == '/' ? c->directory + 1 : c->directory;
            const char *sub = subst_prefix(r, cp, dir, c->base + 1);
            if (strcmp(sub, cp) != 0)
                f = concat(r, f, (size_t)(cp - f), sub, NULL);
        }
    }
    if (!noescape)
        f = escape_url(r, f, skip);
    if (r->args) {
        int as_is = noescape || (oargs && !strcmp(r->args, oargs));
        f = concat(r, f, strlen(f), "?", as_is ? r->args : rewrite_escape_uri(r, r->args));
    }
    *status = *status >= 300 && *status < 400 ? *status : 302;
    *uri = f;
    return REWRITE_REDIRECT;
}

rewrite_action_t rewrite_round(const rewrite_conf_t *c, rewrite_request_t *r, const char **uri, int *status)
{
    *uri = NULL;
    *status = 0;
    if (!c->on || c->directory[0] == '\0' || r->end)
        return REWRITE_NONE;
    if (c->overflow) {
        *status = 500;
        return REWRITE_STATUS;
    }
    /* The directory itself asked for without its slash: mod_dir's
     * redirect comes first (unless AllowNoSlash). */
    size_t l = strlen(c->directory) - 1;
    if (!rewrite_conf_allow_no_slash(c) && strlen(r->filename) == l && !strncmp(r->filename, c->directory, l))
        return REWRITE_NONE;
    const char *ofilename = r->filename, *oargs = r->args;
    int noescape;
    int rc = rewrite_apply(c, r, status, &noescape);
    if (rc == 0) {
        r->filename = ofilename;
        return REWRITE_NONE;
    }
    if (rc < 0)
        return REWRITE_STATUS;
    size_t skip = rewrite_scheme_len(r->filename, NULL);
    if (r->args && !(skip && !noescape) && has_ctl_or_space(r->args)) {
        *status = 403; /* a query that would reach the request unescaped */
        return REWRITE_STATUS;
    }
    if (skip)
        return redirect(c, r, oargs, noescape, uri, status);
    *status = 0;
    if (r->filename[0] != '/') {
        *status = 400;
        return REWRITE_STATUS;
    }
    if (strcmp(r->filename, ofilename) == 0)
        return REWRITE_NONE; /* the same file: served as it is, with the query the rule gave */
    const char *f = r->filename;
    if (c->base) {
        f = subst_prefix(r, f, c->directory, c->base);
    } else if (r->document_root) {
        size_t dl = strlen(r->document_root);
        while (dl && r->document_root[dl - 1] == '/')
            dl--;
        if (!strncmp(f, r->document_root, dl) && f[dl] == '/')
            f += dl;
    }
    *uri = r->args ? concat(r, f, strlen(f), "?", r->args) : f;
    return REWRITE_INTERNAL;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
}

static int unreserved(int c)
{
    return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '-' || c == '.' || c == '_' ||
           c == '~';
}

int rewrite_decode_path(const char *in, size_t len, char *out, size_t outlen, size_t *outl)
{
    if (len == 0 || in[0] != '/' || len >= outlen)
        return 400;
    /* ap_normalize_path(): unreserved characters decoded, slashes merged,
     * dot segments taken out (one above the root is refused). */
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = in[i];
        if (ch == '%' && i + 2 < len && hexval(in[i + 1]) >= 0 && hexval(in[i + 2]) >= 0 &&
            unreserved(hexval(in[i + 1]) * 16 + hexval(in[i + 2]))) {
            ch = (char)(hexval(in[i + 1]) * 16 + hexval(in[i + 2]));
            i += 2;
        }
        if (ch == '/' && o > 0 && out[o - 1] == '/')
            continue;
        out[o++] = ch;
        /* at a segment's end ("/." or "/.." followed by '/' or the end) */
        int end = i + 1 == len || in[i + 1] == '/';
        if (!end)
            continue;
        if (o >= 2 && out[o - 1] == '.' && out[o - 2] == '/') {
            o -= 1; /* "/." */
        } else if (o >= 3 && out[o - 1] == '.' && out[o - 2] == '.' && out[o - 3] == '/') {
            if (o == 3)
                return 400; /* above the root */
            o -= 3;
            while (o > 0 && out[o - 1] != '/')
                o--;
        }
    }
    /* ap_unescape_url(): the rest decoded; an encoded '/' or NUL is 404
     * (AllowEncodedSlashes Off), a bad escape 400. */
    size_t w = 0;
    for (size_t i = 0; i < o; i++) {
        if (out[i] != '%') {
            out[w++] = out[i];
            continue;
        }
        if (i + 2 >= o || hexval(out[i + 1]) < 0 || hexval(out[i + 2]) < 0)
            return 400;
        int c = hexval(out[i + 1]) * 16 + hexval(out[i + 2]);
        if (c == '/' || c == 0)
            return 404;
        out[w++] = (char)c;
        i += 2;
    }
    out[w] = '\0';
    *outl = w;
    return 0;
}
