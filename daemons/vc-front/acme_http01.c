/*
 * ACME's HTTP-01 answers (RFC 8555 8.3): GET /.well-known/acme-challenge/
 * TOKEN on any host is answered from what vc-acme published for the CA
 * (acme_http01 in LMDB), as text/plain, and never reaches PHP. It is asked
 * before the site's redirects, so a site that sends HTTP to HTTPS still
 * passes (a CA follows that redirect, but a site whose certificate is not
 * there yet cannot answer it over TLS).
 */
#include "front.h"
#include "handler.h"
#include "seam.h"
#include "vc_log.h"
#include "vc_store.h"
#include "vc_util.h"

#include <string.h>

#define PREFIX "/.well-known/acme-challenge/"
#define MAX_TOKEN 256

typedef struct lookup {
    const char *token;
    size_t len;
    char *key_auth; /* malloc'd */
} lookup_t;

static int read_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    lookup_t *l = arg;
    MDB_val k = {l->len, (void *)l->token}, v;
    if (mdb_get(txn, dbi, &k, &v) != 0 || v.mv_size > 1024)
        return -1;
    l->key_auth = vc_malloc(v.mv_size + 1);
    memcpy(l->key_auth, v.mv_data, v.mv_size);
    l->key_auth[v.mv_size] = '\0';
    return 0;
}

/* A token is base64url (RFC 8555 8.3: at least 128 bits of it). */
static int token_ok(const char *t, size_t len)
{
    if (len == 0 || len > MAX_TOKEN)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = t[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

static int take(const seam_request_t *r, void *state)
{
    (void)state;
    h2o_req_t *req = r->req;
    h2o_iovec_t path = req->path_normalized;
    size_t pl = sizeof(PREFIX) - 1;
    if (path.len < pl || memcmp(path.base, PREFIX, pl) != 0)
        return 0;
    const char *tok = path.base + pl;
    size_t len = path.len - pl;
    lookup_t l = {tok, len, NULL};
    vc_store_t *st = token_ok(tok, len) ? front_store(r->f) : NULL;
    if (st)
        vc_store_read(st, VC_DB_ACME_HTTP01, read_fn, &l);
    if (l.key_auth == NULL) {
        front_send_error(r->f, r->site, req, 404, "no such ACME challenge\n");
        return 1;
    }
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/plain"));
    h2o_iovec_t body = h2o_strdup(&req->pool, l.key_auth, SIZE_MAX);
    free(l.key_auth);
    h2o_send_inline(req, body.base, body.len);
    return 1;
}

static const seam_backend_t acme_http01 = {
    .name = "acme-http01",
    .stage = SEAM_EARLY,
    .order = 10, /* before everything a site says */
    .take = take,
};
SEAM_BACKEND(acme_http01)
