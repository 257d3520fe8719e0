/*
 * ACME's HTTP-01 answers (RFC 8555 8.3): GET /.well-known/acme-challenge/
 * TOKEN on any host is answered from what vc-acme published for the CA
 * (acme_http01 in LMDB), as text/plain, and never reaches PHP. It is asked
 * before the site's redirects, so a site that sends HTTP to HTTPS still
 * passes (a CA follows that redirect, but a site whose certificate is not
 * there yet cannot answer it over TLS).
 *
 * A token vc-acme did not publish may be another client's: certbot
 * --webroot writes ROOT/.well-known/acme-challenge/TOKEN, as it would for
 * nginx. Such a file (at most 4 KiB) is the answer, before the redirects
 * too; with none there, the answer is 404, so the path never reaches PHP.
 */
#include "core/front.h"
#include "core/handler.h"
#include "core/node_store.h"
#include "core/seam.h"
#include "vc_log.h"
#include "vc_store.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "/.well-known/acme-challenge/"
#define MAX_TOKEN 256
#define MAX_FILE 4096

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

/* ROOT/PATH if it is a regular file of at most MAX_FILE bytes (malloc'd). */
static char *webroot_answer(const char *root, h2o_iovec_t path)
{
    char *file = vc_asprintf("%s%.*s", root, (int)path.len, path.base);
    char *text = NULL;
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size <= MAX_FILE) {
        text = vc_malloc((size_t)sb.st_size + 1);
        ssize_t n = read(fd, text, (size_t)sb.st_size);
        if (n < 0) {
            free(text);
            text = NULL;
        } else {
            text[n] = '\0';
        }
    }
    if (fd >= 0)
        close(fd);
    free(file);
    return text;
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
    if (l.key_auth == NULL && token_ok(tok, len) && r->site->conf->root)
        l.key_auth = webroot_answer(r->site->conf->root, path);
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
