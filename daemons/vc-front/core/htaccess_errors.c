/*
 * ErrorDocument (htaccess_errors.h).
 */
#include "vc_util.h"
#include "htaccess_errors.h"
#include "htaccess_answer.h"
#include "htaccess_respond.h"
#include "rewrite.h"
#include "route.h"
#include "seam.h"
#include "vc_log.h"

#include <stdio.h>
#include <string.h>

#define MAX_SETS 256

static const char *reason_of(int status)
{
    return status == 403 ? "Forbidden" : status == 404 ? "Not Found" : status == 410 ? "Gone" : "Error";
}

/* The nearest directory's document for status, copied into req's pool
 * (the file it comes from may be compiled again while a script runs). */
static int document_of(const site_rt_t *s, h2o_req_t *req, int status, error_doc_t *out)
{
    const route_site_t *rs = &s->route;
    h2o_iovec_t p = req->path_normalized;
    char file[PATH_MAX];
    if (p.len == 0 || p.base[0] != '/' || rs->root_len + p.len + 1 > sizeof(file))
        return 0;
    memcpy(file, rs->root, rs->root_len);
    memcpy(file + rs->root_len, p.base, p.len);
    file[rs->root_len + p.len] = '\0';
    const htaccess_answer_t *sets[MAX_SETS];
    size_t n = htaccess_answer_chain(file, rs->root_len, sets, MAX_SETS);
    const error_doc_t *doc = NULL;
    for (size_t i = 0; i < n; i++)
        for (size_t e = 0; e < sets[i]->nerrors; e++)
            if (sets[i]->errors[e].status == status)
                doc = &sets[i]->errors[e];
    if (doc == NULL || doc->kind == ERROR_DOC_DEFAULT)
        return 0;
    *out = *doc;
    out->value = h2o_strdup(&req->pool, doc->value, SIZE_MAX).base;
    return 1;
}

/* A local URL: its file served, or its script run, for status. */
static int serve(front_t *f, site_rt_t *s, h2o_req_t *req, int status, const char *url)
{
    static route_t rt; /* one request at a time: the dispatch copies what it keeps */
    char path[PATH_MAX];
    size_t len;
    const char *q = strchr(url, '?');
    if (rewrite_decode_path(url, q ? (size_t)(q - url) : strlen(url), path, sizeof(path), &len) != 0)
        return 0;
    route_kind_t kind = route_resolve(&s->route, path, len, &rt);
    if (kind == ROUTE_STATIC) {
        htaccess_respond_error(req, status, rt.file, s->route.root_len);
        const char *dot = strrchr(rt.file, '.');
        h2o_mimemap_type_t *type = h2o_mimemap_get_type_by_extension(
            req->pathconf->mimemap, dot ? h2o_iovec_init(dot + 1, strlen(dot + 1)) : h2o_iovec_init(H2O_STRLIT("")));
        return h2o_file_send(req, status, reason_of(status), rt.file, type->data.mimetype, 0) == 0;
    }
    if (kind != ROUTE_PHP)
        return 0;
    htaccess_respond_error(req, status, rt.file, s->route.root_len);
    htaccess_rewritten_t rw;
    memset(&rw, 0, sizeof(rw));
    if (q) {
        rw.query_set = 1;
        rw.query = h2o_iovec_init(q + 1, strlen(q + 1));
    }
    /* As Apache's internal redirect: where the client went. */
    const char **names = h2o_mem_alloc_pool(&req->pool, sizeof(char *)),
               **values = h2o_mem_alloc_pool(&req->pool, sizeof(char *));
    names[0] = "REDIRECT_URL";
    values[0] = h2o_strdup(&req->pool, req->path_normalized.base, req->path_normalized.len).base;
    rw.names = names;
    rw.values = values;
    rw.nvars = 1;
    seam_request_t sr = {.f = f,
                         .site = s,
                         .req = req,
                         .https = req->scheme == &H2O_URL_SCHEME_HTTPS,
                         .kind = ROUTE_PHP,
                         .route = &rt,
                         .rewritten = &rw,
                         .error_document = 1};
    return seam_dispatch(SEAM_ROUTED, &sr);
}

int htaccess_error_document(front_t *f, site_rt_t *s, h2o_req_t *req, int status)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    error_doc_t doc;
    if (s == NULL || !s->conf->htaccess || htaccess_respond_error_status(req) || !document_of(s, req, status, &doc))
        return 0;
    switch (doc.kind) {
    case ERROR_DOC_TEXT:
        req->res.status = status;
        req->res.reason = reason_of(status);
        h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE,
                       H2O_STRLIT("text/html; charset=iso-8859-1"), 1);
        h2o_send_inline(req, doc.value, strlen(doc.value));
        return 1;
    case ERROR_DOC_URL: h2o_send_redirect(req, 302, "Found", doc.value, strlen(doc.value)); return 1;
    case ERROR_DOC_PATH:
        if (serve(f, s, req, status, doc.value))
            return 1;
        htaccess_respond_made_here(req); /* the plain answer after all */
        vc_log(VC_LOG_INFO, "htaccess", "%d for %.*s: its ErrorDocument %s could not be served", status,
               (int)req->path_normalized.len, req->path_normalized.base, doc.value);
        return 0;
    default: return 0;
    }
}
