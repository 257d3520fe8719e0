/*
 * .htaccess response directives applied to an answer (htaccess_respond.h).
 * The directories' sets are gathered again when the answer starts, from
 * the cache of compiled files: what a request found at routing may have
 * been freed since (the cache starts again past its bound) while PHP ran.
 */
#include "htaccess_respond.h"
#include "htaccess.h"
#include "htaccess_answer.h"
#include "htaccess_cache.h"
#include "vc_util.h"

#include <h2o/time_.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_SETS 256

typedef struct respond {
    h2o_req_prefilter_t super;
    const char *file; /* the file served or the script run, in req's pool */
    size_t root_len;
    int is_static;
    int made_here;
    int status;       /* 0: req->res.status */
    int error_status; /* an ErrorDocument's: a 200 from its script becomes this */
} respond_t;

/* The sets that apply to file: each directory's own from the root down,
 * then the <Files> sections that match its name, in the same order. */
size_t htaccess_answer_chain(const char *file, size_t root_len, const htaccess_answer_t **sets, size_t max)
{
    const char *name = strrchr(file, '/') + 1;
    size_t end = (size_t)(name - file) - 1, n;
    uint64_t now = vc_mono_ms() / 1000, gen;
    do {
        const htaccess_answer_t *files[MAX_SETS];
        size_t nfiles = 0;
        gen = htaccess_cache_generation();
        n = 0;
        for (size_t at = root_len;;) {
            int is_dir;
            const htaccess_t *h = htaccess_cached(file, at, now, &is_dir);
            if (!is_dir)
                break;
            if (h && htaccess_answer(h) && n < max)
                sets[n++] = htaccess_answer(h);
            if (h && htaccess_has_answers(h)) {
                const htaccess_answer_t *fa;
                for (size_t i = 0; (fa = htaccess_file_answer(h, name, &i)) && nfiles < MAX_SETS;)
                    files[nfiles++] = fa;
            }
            if (at >= end)
                break;
            const char *next = memchr(file + at + 1, '/', end - at);
            at = next ? (size_t)(next - file) : end;
        }
        for (size_t i = 0; i < nfiles && n < max; i++)
            sets[n++] = files[i];
    } while (gen != htaccess_cache_generation());
    return n;
}

static h2o_iovec_t header_of(const h2o_headers_t *t, const h2o_token_t *token)
{
    ssize_t i = h2o_find_header(t, token, -1);
    return i == -1 ? h2o_iovec_init(NULL, 0) : t->entries[i].value;
}

/* mod_mime: each extension of the name after the first dot, the last
 * one with a type deciding ("x.tar.gz"). */
static void add_type(h2o_req_t *req, const respond_t *r, const htaccess_answer_t **sets, size_t n)
{
    const char *type = NULL, *ext = strchr(strrchr(r->file, '/') + 1, '.');
    while (ext) {
        const char *next = strchr(ext + 1, '.');
        size_t len = next ? (size_t)(next - ext - 1) : strlen(ext + 1);
        for (size_t s = n; s-- > 0 && len;) {
            size_t t = 0;
            while (t < sets[s]->ntypes &&
                   (strlen(sets[s]->types[t].ext) != len || strncasecmp(sets[s]->types[t].ext, ext + 1, len)))
                t++;
            if (t < sets[s]->ntypes) {
                type = sets[s]->types[t].type;
                break;
            }
        }
        ext = next;
    }
    if (type)
        h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, type, strlen(type), 1);
}

/* expires_filter(): none for errors, nor over an Expires already set;
 * into out, Apache's headers_out. */
static void expires(h2o_req_t *req, const respond_t *r, const htaccess_answer_t **sets, size_t n, h2o_headers_t *out,
                    const h2o_headers_t *theirs)
{
    int active = 0;
    for (size_t s = 0; s < n; s++)
        active = sets[s]->expires_active >= 0 ? sets[s]->expires_active : active;
    if (!active || (r->status ? r->status : req->res.status) >= 400 ||
        h2o_find_header(theirs, H2O_TOKEN_EXPIRES, -1) != -1)
        return;
    h2o_iovec_t ct = header_of(theirs, H2O_TOKEN_CONTENT_TYPE);
    size_t tlen = 0;
    while (tlen < ct.len && ct.base[tlen] != ';' && ct.base[tlen] != ' ')
        tlen++;
    const expires_code_t *code = NULL, *wild = NULL, *fallback = NULL;
    for (size_t s = n; s-- > 0 && !code;) {
        for (size_t t = 0; t < sets[s]->nby_type && !code; t++) {
            const char *bt = sets[s]->by_type[t].type;
            size_t blen = strlen(bt);
            if (blen == tlen && !strncasecmp(bt, ct.base, tlen))
                code = &sets[s]->by_type[t].code;
            else if (!wild && blen > 1 && bt[blen - 1] == '*' && tlen >= blen - 1 &&
                     !strncasecmp(bt, ct.base, blen - 1))
                wild = &sets[s]->by_type[t].code;
        }
        if (!fallback && sets[s]->expires_default.base)
            fallback = &sets[s]->expires_default;
    }
    code = code ? code : wild ? wild : fallback;
    if (code == NULL)
        return;
    time_t at = req->processed_at.at.tv_sec, base = at;
    if (code->base == 'M') {
        struct stat st;
        if (stat(r->file, &st) != 0)
            return; /* no file to date it from: nothing, as Apache */
        base = st.st_mtime;
    }
    time_t until = base + code->seconds < at ? at : base + code->seconds;
    char age[48];
    int alen = snprintf(age, sizeof(age), "max-age=%lld", (long long)(until - at));
    h2o_iovec_t cc = header_of(out, H2O_TOKEN_CACHE_CONTROL);
    h2o_iovec_t merged = cc.base
                             ? h2o_concat(&req->pool, cc, h2o_iovec_init(H2O_STRLIT(", ")), h2o_iovec_init(age, alen))
                             : h2o_strdup(&req->pool, age, (size_t)alen);
    h2o_set_header(&req->pool, out, H2O_TOKEN_CACHE_CONTROL, merged.base, merged.len, 1);
    struct tm gmt;
    gmtime_r(&until, &gmt);
    char *date = h2o_mem_alloc_pool(&req->pool, H2O_TIMESTR_RFC1123_LEN + 1);
    h2o_time2str_rfc1123(date, &gmt);
    h2o_set_header(&req->pool, out, H2O_TOKEN_EXPIRES, date, H2O_TIMESTR_RFC1123_LEN, 1);
}

/* Whether the comma-separated list has value as one of its members. */
static int listed(h2o_iovec_t list, const char *value)
{
    size_t vlen = strlen(value);
    for (size_t i = 0; i < list.len;) {
        while (i < list.len && (list.base[i] == ' ' || list.base[i] == ','))
            i++;
        size_t j = i;
        while (j < list.len && list.base[j] != ',')
            j++;
        size_t k = j;
        while (k > i && list.base[k - 1] == ' ')
            k--;
        if (k - i == vlen && memcmp(list.base + i, value, vlen) == 0)
            return 1;
        i = j;
    }
    return 0;
}

static void header_rule(h2o_req_t *req, h2o_headers_t *hs, const header_rule_t *h)
{
    size_t nlen = strlen(h->name), vlen = h->value ? strlen(h->value) : 0;
    ssize_t at = h2o_find_header_by_str(hs, h->name, nlen, -1);
    switch (h->action) {
    case HEADER_SETIFEMPTY:
        if (at != -1)
            return;
        /* fall through */
    case HEADER_SET:
    case HEADER_UNSET:
        while ((at = h2o_find_header_by_str(hs, h->name, nlen, -1)) != -1)
            h2o_delete_header(hs, at);
        if (h->action == HEADER_UNSET)
            return;
        break;
    case HEADER_MERGE:
        if (at != -1 && listed(hs->entries[at].value, h->value))
            return;
        /* fall through */
    case HEADER_APPEND:
        if (at != -1) {
            h2o_iovec_t *v = &hs->entries[at].value;
            *v = h2o_concat(&req->pool, *v, h2o_iovec_init(H2O_STRLIT(", ")), h2o_iovec_init(h->value, vlen));
            return;
        }
        break;
    case HEADER_ADD: break;
    }
    h2o_add_header_by_str(&req->pool, hs, h->name, nlen, 1, NULL, h->value, vlen);
}

/* ap_make_content_type(): text/plain and text/html without a charset. */
static void default_charset(h2o_req_t *req, const htaccess_answer_t **sets, size_t n)
{
    const char *charset = NULL;
    for (size_t s = 0; s < n; s++)
        charset = sets[s]->charset ? sets[s]->charset : charset;
    ssize_t i = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (charset == NULL || !*charset || i == -1)
        return;
    h2o_iovec_t *ct = &req->res.headers.entries[i].value;
    int text = (ct->len >= 10 && !strncasecmp(ct->base, "text/plain", 10)) ||
               (ct->len >= 9 && !strncasecmp(ct->base, "text/html", 9));
    if (!text || memmem(ct->base, ct->len, "charset=", 8) != NULL)
        return;
    *ct =
        h2o_concat(&req->pool, *ct, h2o_iovec_init(H2O_STRLIT("; charset=")), h2o_iovec_init(charset, strlen(charset)));
}

static void append_all(h2o_req_t *req, h2o_headers_t *to, const h2o_headers_t *from)
{
    if (from->size == 0)
        return;
    h2o_vector_reserve(&req->pool, to, to->size + from->size);
    memcpy(to->entries + to->size, from->entries, from->size * sizeof(*from->entries));
    to->size += from->size;
}

/* Apache keeps two tables: headers_out, which `Header` and mod_expires
 * change, and err_headers_out, which `Header always` changes and which
 * alone is kept on an answer Apache makes itself. A file's headers are in
 * the first; a script's (proxy_fcgi, as CGI) in the second, so that
 * `Header set X` beside a script's own X sends both, and only `Header
 * always` replaces or removes what a script said. The answer goes out
 * with the second table's headers, then the first's. */
static void on_setup(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    respond_t *r = (respond_t *)self;
    const htaccess_answer_t *sets[MAX_SETS];
    size_t n = htaccess_answer_chain(r->file, r->root_len, sets, MAX_SETS);
    if (r->is_static && !r->made_here && (r->status ? r->status : req->res.status) < 400)
        add_type(req, r, sets, n);
    h2o_headers_t theirs = req->res.headers, out = {0}, err = {0}, made = {0};
    h2o_headers_t *own = r->made_here ? &made : r->is_static ? &out : &err;
    *own = theirs;
    if (!r->made_here)
        expires(req, r, sets, n, &out, &theirs);
    for (size_t s = 0; s < n; s++)
        for (size_t i = 0; i < sets[s]->nheaders; i++)
            if (sets[s]->headers[i].always || !r->made_here)
                header_rule(req, sets[s]->headers[i].always ? &err : &out, &sets[s]->headers[i]);
    req->res.headers = made;
    append_all(req, &req->res.headers, &err);
    append_all(req, &req->res.headers, &out);
    default_charset(req, sets, n);
    h2o_setup_next_prefilter(self, req, slot);
}

void htaccess_respond_attach(const seam_request_t *r)
{
    if (r->rewritten == NULL || !r->rewritten->answers)
        return;
    const route_site_t *rs = &r->site->route;
    const char *file = r->route->file;
    if (r->kind != ROUTE_PHP && r->kind != ROUTE_STATIC) { /* the front's own answer: for the path asked */
        h2o_iovec_t path = r->rewritten->path.base ? r->rewritten->path : r->req->path_normalized;
        file = h2o_concat(&r->req->pool, h2o_iovec_init(rs->root, rs->root_len), path).base;
    }
    if (strncmp(file, rs->root, rs->root_len) != 0 || file[rs->root_len] != '/')
        return;
    respond_t *p = (respond_t *)h2o_add_prefilter(r->req, sizeof(*p));
    p->super.on_setup_ostream = on_setup;
    p->file = h2o_strdup(&r->req->pool, file, SIZE_MAX).base;
    p->root_len = rs->root_len;
    p->is_static = r->kind == ROUTE_STATIC;
    p->made_here = 0;
    p->status = 0;
    p->error_status = 0;
}

static respond_t *of(h2o_req_t *req)
{
    for (h2o_req_prefilter_t *p = req->prefilters; p; p = p->next)
        if (p->on_setup_ostream == on_setup)
            return (respond_t *)p;
    return NULL;
}

void htaccess_respond_made_here(h2o_req_t *req)
{
    respond_t *r = of(req);
    if (r)
        r->made_here = 1;
}

int htaccess_respond_status(h2o_req_t *req, int status)
{
    respond_t *r = of(req);
    if (r && r->error_status && status == 200)
        status = r->error_status;
    if (r)
        r->status = status;
    return status;
}

void htaccess_respond_error(h2o_req_t *req, int status, const char *file, size_t root_len)
{
    respond_t *r = of(req);
    if (r == NULL) {
        r = (respond_t *)h2o_add_prefilter(req, sizeof(*r));
        r->super.on_setup_ostream = on_setup;
    }
    r->file = h2o_strdup(&req->pool, file, SIZE_MAX).base;
    r->root_len = root_len;
    r->is_static = 0;
    r->made_here = 0;
    r->status = 0;
    r->error_status = status;
}

int htaccess_respond_error_status(h2o_req_t *req)
{
    respond_t *r = of(req);
    return r ? r->error_status : 0;
}
