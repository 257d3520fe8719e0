#include "conn.h"
#include "tls.h"
#include "tls_on_demand.h"
#include "front.h"
#include "vc_acme.h"
#include "vc_log.h"
#include "vc_selfsigned.h"
#include "vc_store.h"
#include "vc_tickets.h"
#include "vc_util.h"

#include <h2o.h>
#include <h2o/http2.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include <openssl/core_names.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct tls_entry {
    char *host;   /* lowercase, or NULL for the default */
    SSL_CTX *ctx; /* NULL: an ACME site with no certificate yet (the default's) */
} tls_entry_t;

/* A site whose certificate vc-acme keeps (vc_acme.h): its files are
 * watched, and a new pair replaces the context of its hosts' entries. */
typedef struct tls_acme {
    char *site, *crt, *key;
    size_t first, count; /* its entries in e */
    ino_t ino;           /* of the pair in service: the certificate's inode and time */
    struct timespec mtime;
    time_t not_after; /* of the certificate in service; 0: none yet */
} tls_acme_t;

struct tls {
    vc_store_t *store; /* vc-acme's TLS-ALPN-01 answers */
    tls_entry_t *e;
    size_t n;
    tls_acme_t *acme;
    size_t nacme;
    tls_on_demand_t *od; /* the default site has acme_on_demand */
    SSL_CTX *def;
    char *tickets_path;
    time_t tickets_mtime;
    vc_ticket_key_t keys[VC_TICKETS_KEEP];
    int nkeys;
};

/* One set of ticket keys per process, shared by every context. */
static tls_t *the_tls;

/* Encrypts new tickets with the newest key; decrypts with any key still
 * kept, asking for a fresh ticket when the key is not the newest. */
static int on_ticket(SSL *ssl, unsigned char name[16], unsigned char iv[16], EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx,
                     int enc)
{
    tls_t *t = the_tls;
    /* No keys (yet): no ticket, and the handshake goes on (-1 would end
     * every connection). */
    if (t == NULL || t->nkeys == 0)
        return 0;
    OSSL_PARAM params[3];
    const vc_ticket_key_t *k = NULL;
    int ret = 1;
    if (enc) {
        k = &t->keys[0];
        memcpy(name, k->name, 16);
        if (RAND_bytes(iv, 16) != 1)
            return -1;
        if (EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1)
            return -1;
    } else {
        for (int i = 0; i < t->nkeys && k == NULL; i++)
            if (memcmp(name, t->keys[i].name, 16) == 0) {
                k = &t->keys[i];
                ret = i == 0 ? 1 : 2;
            }
        if (k == NULL)
            return 0; /* unknown key: a full handshake */
        if (EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1)
            return -1;
    }
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, (void *)k->hmac, sizeof(k->hmac));
    params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "sha256", 0);
    params[2] = OSSL_PARAM_construct_end();
    if (EVP_MAC_CTX_set_params(hctx, params) != 1)
        return -1;
    return ret;
}

void tls_tickets_refresh(tls_t *t, int rotate)
{
    struct stat st;
    /* Run alone, no supervisor rotates them: the front does (fronts that
     * share the directory agree, the file being replaced whole). */
    if (t != NULL && t->tickets_path != NULL && rotate && vc_tickets_rotate(t->tickets_path, VC_TICKETS_ROTATE_S) > 0)
        vc_log(VC_LOG_INFO, "tls", "rotated the TLS session ticket keys");
    if (t == NULL || t->tickets_path == NULL || stat(t->tickets_path, &st) != 0 || st.st_mtime == t->tickets_mtime)
        return;
    vc_ticket_key_t keys[VC_TICKETS_KEEP];
    int n = vc_tickets_load(t->tickets_path, keys);
    if (n > 0) {
        memcpy(t->keys, keys, sizeof(keys));
        t->nkeys = n;
        t->tickets_mtime = st.st_mtime;
        vc_log(VC_LOG_INFO, "tls", "loaded %d session ticket keys", n);
    }
    OPENSSL_cleanse(keys, sizeof(keys));
}

static void log_ssl_error(const char *what, const char *path)
{
    unsigned long e = ERR_get_error();
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    vc_log(VC_LOG_ERR, "tls", "%s() failed while loading \"%s\": %s", what, path, buf);
}

/* quiet: failing is expected (a pair half written), said by the caller. */
SSL_CTX *tls_ctx_from_files(const char *cert, const char *key, int quiet)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        if (!quiet)
            log_ssl_error("SSL_CTX_use_certificate_chain_file", cert);
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        if (!quiet)
            log_ssl_error("SSL_CTX_use_PrivateKey_file", key);
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return NULL;
    }
    /* A session belongs to its certificate: the context id is the
     * certificate's digest, so no session resumes across certificates. */
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    X509_digest(SSL_CTX_get0_certificate(ctx), EVP_sha256(), md, &mdlen);
    SSL_CTX_set_session_id_context(ctx, md, mdlen > SSL_MAX_SID_CTX_LENGTH ? SSL_MAX_SID_CTX_LENGTH : mdlen);
    /* Resumption is by ticket (keys shared by every front process): an
     * in-process session cache would only cost a store per handshake and
     * a walk of the whole cache every 255 (as nginx's default "none"). */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_INTERNAL);
    h2o_ssl_register_alpn_protocols(ctx, h2o_http2_alpn_protocols);
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket);
    return ctx;
}

static SSL_CTX *make_ctx(const char *cert, const char *key)
{
    return tls_ctx_from_files(cert, key, 0);
}

/* The name the client gave the handshake, kept with its connection for
 * the 421 check (handler.c): h2o 2.2 has no getter for a socket's SSL,
 * and hangs its socket on the SSL's BIO. */
static void remember_sni(SSL *ssl, const char *name)
{
    BIO *bio = SSL_get_rbio(ssl);
    conn_state_t *c = bio ? conn_state_of(BIO_get_data(bio)) : NULL;
    if (c != NULL)
        snprintf(c->sni, sizeof(c->sni), "%s", name);
}

/* Marks the context of a TLS-ALPN-01 handshake (its app data). */
static const char acme_marker[] = "acme-tls/1";

static int on_sni(SSL *ssl, int *al, void *arg)
{
    tls_t *t = arg;
    if (SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)) == acme_marker)
        return SSL_TLSEXT_ERR_OK; /* the challenge's, chosen at the hello */
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (name == NULL)
        return SSL_TLSEXT_ERR_OK;
    remember_sni(ssl, name);
    /* As requests are routed (vc_config_site_for_host): the name itself,
     * else the longest wildcard over it. */
    const tls_entry_t *best = NULL;
    size_t len = strlen(name), best_len = 0;
    for (size_t i = 0; i < t->n; i++) {
        int m = t->e[i].host ? vc_host_match(t->e[i].host, name, len) : 0;
        if (m == 2) {
            best = &t->e[i];
            break;
        }
        if (m == 1 && strlen(t->e[i].host) > best_len) {
            best = &t->e[i];
            best_len = strlen(t->e[i].host);
        }
    }
    SSL_CTX *ctx = best ? best->ctx : t->od ? tls_on_demand_ctx(t->od, name) : NULL;
    if (ctx && ctx != SSL_get_SSL_CTX(ssl))
        SSL_set_SSL_CTX(ssl, ctx);
    return SSL_TLSEXT_ERR_OK;
}

static int on_client_hello(SSL *ssl, int *al, void *arg);

tls_t *tls_new(const vc_config_t *cfg)
{
    tls_t *t = vc_calloc(1, sizeof(*t));
    the_tls = t;
    char *dir = vc_asprintf("%s/tls", cfg->data_dir), *cert = NULL, *key = NULL;
    t->tickets_path = vc_asprintf("%s/tickets", dir);
    /* Run alone (no supervisor), a front makes the file itself. */
    vc_mkdirs(dir, 0700);
    vc_tickets_rotate(t->tickets_path, VC_TICKETS_ROTATE_S);
    tls_tickets_refresh(t, 0);
    int r = vc_selfsigned_ensure(dir, &cert, &key);
    free(dir);
    if (r == 0)
        t->def = make_ctx(cert, key);
    free(cert);
    free(key);
    if (t->def == NULL) {
        tls_destroy(&t);
        return NULL;
    }
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (s->acme_on_demand && t->od == NULL)
            t->od = tls_on_demand_new(cfg->data_dir);
        if (s->tls) { /* vc-acme's: watched, served once there */
            t->acme = vc_realloc(t->acme, (t->nacme + 1) * sizeof(*t->acme));
            t->acme[t->nacme++] = (tls_acme_t){.site = vc_strdup(s->name),
                                               .crt = vc_acme_cert_path(cfg->data_dir, s->name, "crt"),
                                               .key = vc_acme_cert_path(cfg->data_dir, s->name, "key"),
                                               .first = t->n,
                                               .count = s->nhosts};
            for (size_t h = 0; h < s->nhosts; h++) {
                t->e = vc_realloc(t->e, (t->n + 1) * sizeof(*t->e));
                t->e[t->n++] = (tls_entry_t){vc_strdup(s->hosts[h]), NULL};
            }
            continue;
        }
        if (s->tls_cert == NULL)
            continue;
        SSL_CTX *ctx = make_ctx(s->tls_cert, s->tls_key);
        if (ctx == NULL) {
            tls_destroy(&t);
            return NULL;
        }
        if (s->is_default) {
            SSL_CTX_free(t->def);
            t->def = ctx;
            SSL_CTX_up_ref(ctx);
        }
        for (size_t h = 0; h < s->nhosts; h++) {
            t->e = vc_realloc(t->e, (t->n + 1) * sizeof(*t->e));
            t->e[t->n].host = vc_strdup(s->hosts[h]);
            t->e[t->n].ctx = ctx;
            SSL_CTX_up_ref(ctx);
            t->n++;
        }
        SSL_CTX_free(ctx);
    }
    SSL_CTX_set_tlsext_servername_callback(t->def, on_sni);
    SSL_CTX_set_tlsext_servername_arg(t->def, t);
    SSL_CTX_set_client_hello_cb(t->def, on_client_hello, t);
    tls_acme_refresh(t);
    return t;
}

/* ---- TLS-ALPN-01 (RFC 8737) ------------------------------------------------- */

/* 1 if the ALPN extension's list names acme-tls/1. */
static int offers_acme_tls(const unsigned char *p, size_t len)
{
    if (len < 2 || (size_t)(p[0] << 8 | p[1]) != len - 2)
        return 0;
    for (size_t i = 2; i < len;) {
        size_t n = p[i];
        if (n == 0 || i + 1 + n > len)
            return 0;
        if (n == 10 && memcmp(p + i + 1, "acme-tls/1", 10) == 0)
            return 1;
        i += 1 + n;
    }
    return 0;
}

/* The server_name extension's host name, lowercase, into out. */
static int sni_of(const unsigned char *p, size_t len, char *out, size_t outlen)
{
    if (len < 5 || (size_t)(p[0] << 8 | p[1]) != len - 2 || p[2] != 0)
        return 0;
    size_t n = (size_t)(p[3] << 8 | p[4]);
    if (n == 0 || n >= outlen || 5 + n > len)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[5 + i];
        if (c <= ' ' || c >= 0x7f)
            return 0;
        out[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    out[n] = '\0';
    return 1;
}

static int select_acme_tls(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                           unsigned inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    static const unsigned char want[] = "\x0a"
                                        "acme-tls/1";
    unsigned char *o;
    if (SSL_select_next_proto(&o, outlen, want, sizeof(want) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    *out = o;
    return SSL_TLSEXT_ERR_OK;
}

typedef struct alpn_lookup {
    const char *host;
    char *pem;
} alpn_lookup_t;

static int alpn_read_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    alpn_lookup_t *l = arg;
    MDB_val k = {strlen(l->host), (void *)l->host}, v;
    if (mdb_get(txn, dbi, &k, &v) != 0 || v.mv_size > 16384)
        return -1;
    l->pem = vc_malloc(v.mv_size + 1);
    memcpy(l->pem, v.mv_data, v.mv_size);
    l->pem[v.mv_size] = '\0';
    return 0;
}

/* A context serving the challenge certificate and key in pem, choosing
 * acme-tls/1, or NULL. */
static SSL_CTX *challenge_ctx(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    EVP_PKEY *k = x ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    SSL_CTX *ctx = x && k ? SSL_CTX_new(TLS_server_method()) : NULL;
    if (ctx && (SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, k) != 1)) {
        SSL_CTX_free(ctx);
        ctx = NULL;
    }
    if (ctx) {
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_alpn_select_cb(ctx, select_acme_tls, NULL);
        SSL_CTX_set_app_data(ctx, (void *)acme_marker);
    }
    X509_free(x);
    EVP_PKEY_free(k);
    ERR_clear_error();
    return ctx;
}

/* A CA checking TLS-ALPN-01 offers acme-tls/1 for the name: it gets the
 * challenge certificate vc-acme published, if there is one. Any other
 * hello goes on as it came. */
static int on_client_hello(SSL *ssl, int *al, void *arg)
{
    (void)al;
    tls_t *t = arg;
    const unsigned char *p;
    size_t len;
    char host[256];
    if (t->store == NULL ||
        !SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p, &len) ||
        !offers_acme_tls(p, len) || !SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &len) ||
        !sni_of(p, len, host, sizeof(host)))
        return SSL_CLIENT_HELLO_SUCCESS;
    alpn_lookup_t l = {host, NULL};
    vc_store_read(t->store, VC_DB_ACME_ALPN, alpn_read_fn, &l);
    SSL_CTX *ctx = l.pem ? challenge_ctx(l.pem) : NULL;
    if (l.pem) {
        OPENSSL_cleanse(l.pem, strlen(l.pem));
        free(l.pem);
    }
    if (ctx) {
        SSL_set_SSL_CTX(ssl, ctx);
        SSL_CTX_free(ctx); /* the SSL holds it */
        vc_log(VC_LOG_INFO, "tls", "answered a TLS-ALPN-01 check for \"%s\"", host);
    }
    return SSL_CLIENT_HELLO_SUCCESS;
}

void tls_metrics(const tls_t *t, FILE *out)
{
    if (t == NULL || t->nacme == 0)
        return;
    fprintf(out, "# HELP vc_acme_certificate_days_left Days until the certificate vc-acme keeps for a site expires, "
                 "as this front serves it.\n# TYPE vc_acme_certificate_days_left gauge\n");
    time_t now = time(NULL);
    for (size_t i = 0; i < t->nacme; i++)
        if (t->acme[i].not_after)
            fprintf(out, "vc_acme_certificate_days_left{site=\"%s\"} %.2f\n", t->acme[i].site,
                    (double)(t->acme[i].not_after - now) / 86400.0);
}

void tls_attach(tls_t *t, vc_store_t *store, vc_bus_t *bus)
{
    t->store = store;
    if (t->od)
        tls_on_demand_set_bus(t->od, bus);
}

void tls_acme_refresh(tls_t *t)
{
    for (size_t i = 0; t && i < t->nacme; i++) {
        tls_acme_t *a = &t->acme[i];
        struct stat cs, ks;
        if (stat(a->crt, &cs) != 0 || stat(a->key, &ks) != 0)
            continue;
        if (cs.st_ino == a->ino && cs.st_mtim.tv_sec == a->mtime.tv_sec && cs.st_mtim.tv_nsec == a->mtime.tv_nsec)
            continue;
        /* A pair that does not agree (vc-acme writes the key, then the
         * certificate) is tried again at the next second. */
        SSL_CTX *ctx = tls_ctx_from_files(a->crt, a->key, 1);
        if (ctx == NULL)
            continue;
        /* Connections keep the context they began with (a reference
         * each); new handshakes get the new one. */
        for (size_t k = a->first; k < a->first + a->count; k++) {
            if (t->e[k].ctx)
                SSL_CTX_free(t->e[k].ctx);
            t->e[k].ctx = ctx;
            SSL_CTX_up_ref(ctx);
        }
        SSL_CTX_free(ctx);
        a->ino = cs.st_ino;
        a->mtime = cs.st_mtim;
        struct tm tm;
        if (ASN1_TIME_to_tm(X509_get0_notAfter(SSL_CTX_get0_certificate(ctx)), &tm) == 1)
            a->not_after = timegm(&tm);
        vc_log(VC_LOG_NOTICE, "tls", "serving the certificate vc-acme keeps for \"%s\" (%s)", a->site, a->crt);
    }
}

void tls_destroy(tls_t **pt)
{
    tls_t *t = *pt;
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->e[i].host);
        if (t->e[i].ctx)
            SSL_CTX_free(t->e[i].ctx);
    }
    free(t->e);
    for (size_t i = 0; i < t->nacme; i++) {
        free(t->acme[i].site);
        free(t->acme[i].crt);
        free(t->acme[i].key);
    }
    free(t->acme);
    tls_on_demand_destroy(&t->od);
    if (t->def)
        SSL_CTX_free(t->def);
    free(t->tickets_path);
    OPENSSL_cleanse(t->keys, sizeof(t->keys));
    if (the_tls == t)
        the_tls = NULL;
    free(t);
    *pt = NULL;
}

SSL_CTX *tls_default_ctx(tls_t *t)
{
    return t->def;
}
