#include "acme_order.h"
#include "acme_x509.h"
#include "acme_http.h"
#include "acme_parse.h"
#include "acme_session.h"
#include "jws.h"
#include "vc_log.h"
#include "vc_util.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir_url(session_t *s, const char *name)
{
    const char *u = json_string_value(json_object_get(s->cl->dir, name));
    if (u == NULL)
        snprintf(s->err, s->errlen, "the directory %s names no %s", s->ca->directory, name);
    return u;
}

static int directory(session_t *s)
{
    if (s->cl->dir)
        return 0;
    acme_resp_t r;
    if (acme_get(&s->cl->c, s->ca->directory, &r, s->err, s->errlen) < 0 || !json_is_object(r.json)) {
        if (r.json == NULL && r.status >= 200 && r.status < 300)
            snprintf(s->err, s->errlen, "the directory %s is not a JSON object", s->ca->directory);
        acme_resp_free(&r);
        return -1;
    }
    s->cl->dir = json_incref(r.json);
    acme_resp_free(&r);
    const char *nn = dir_url(s, "newNonce");
    if (nn == NULL || dir_url(s, "newAccount") == NULL || dir_url(s, "newOrder") == NULL)
        return -1;
    free(s->cl->c.new_nonce_url);
    s->cl->c.new_nonce_url = vc_strdup(nn);
    return 0;
}

/* newAccount with the key: made, or the one it has (200 and Location). */
static int account(session_t *s)
{
    acme_client_t *cl = s->cl;
    if (cl->kid)
        return 0;
    if (cl->account == NULL) {
        char err[256];
        cl->account = jws_key_load_or_make(cl->key_path, 0, err, sizeof(err));
        if (cl->account == NULL) {
            snprintf(s->err, s->errlen, "%s", err);
            return -1;
        }
    }
    json_t *p = json_pack("{s:b}", "termsOfServiceAgreed", 1);
    if (s->ca->email && s->ca->email[0]) {
        char *m = vc_asprintf("mailto:%s", s->ca->email);
        json_object_set_new(p, "contact", json_pack("[s]", m));
        free(m);
    }
    if (s->ca->eab_kid && s->ca->eab_kid[0]) {
        char *eab = jws_eab(cl->account, s->ca->eab_kid, s->ca->eab_hmac_key, dir_url(s, "newAccount"));
        json_t *e = eab ? json_loads(eab, 0, NULL) : NULL;
        free(eab);
        if (e == NULL) {
            json_decref(p);
            snprintf(s->err, s->errlen, "acme.eab_hmac_key is not base64url");
            return -1;
        }
        json_object_set_new(p, "externalAccountBinding", e);
    }
    char *payload = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    acme_resp_t r;
    int rc = acme_post(&cl->c, cl->account, NULL, dir_url(s, "newAccount"), payload, NULL, &r, s->err, s->errlen);
    free(payload);
    if (rc == 0 && r.location == NULL) {
        snprintf(s->err, s->errlen, "newAccount gave no account URL");
        rc = -1;
    }
    if (rc == 0)
        cl->kid = vc_strdup(r.location);
    acme_resp_free(&r);
    return rc;
}

/* Finalised with a CSR for a new key, waited for, and downloaded. */
static int finalize(session_t *s, json_t *order, const char *order_url, const acme_want_t *w, acme_issued_t *out)
{
    static const char *const processing[] = {"pending", "ready", "processing", NULL};
    const char *fin = json_string_value(json_object_get(order, "finalize"));
    if (fin == NULL) {
        snprintf(s->err, s->errlen, "the order names no finalize URL");
        return -1;
    }
    EVP_PKEY *key = jws_key_new(w->rsa_bits);
    char *csr = key ? acme_csr_b64(key, w->hosts, w->nhosts) : NULL;
    if (csr == NULL) {
        EVP_PKEY_free(key);
        snprintf(s->err, s->errlen, "no CSR could be made");
        return -1;
    }
    char *payload = vc_asprintf("{\"csr\":\"%s\"}", csr);
    free(csr);
    acme_client_t *cl = s->cl;
    acme_resp_t r;
    int rc = acme_post(&cl->c, cl->account, cl->kid, fin, payload, NULL, &r, s->err, s->errlen);
    free(payload);
    /* The answer is the order: often valid at once, with no poll. */
    const char *now = rc == 0 ? json_string_value(json_object_get(r.json, "status")) : NULL;
    json_t *done = now && !strcmp(now, "valid") && json_object_get(r.json, "certificate") ? json_incref(r.json)
                   : rc == 0 ? acme_poll(s, order_url, processing, 1, 1)
                             : NULL;
    acme_resp_free(&r);
    const char *st = done ? json_string_value(json_object_get(done, "status")) : NULL;
    const char *cert_url = done ? json_string_value(json_object_get(done, "certificate")) : NULL;
    rc = -1;
    if (done && (st == NULL || strcmp(st, "valid") != 0 || cert_url == NULL)) {
        const json_t *e = json_object_get(done, "error"); /* why, if the CA says */
        const char *type = json_string_value(json_object_get(e, "type"));
        const char *detail = json_string_value(json_object_get(e, "detail"));
        snprintf(s->err, s->errlen, "the order is %s after finalisation%s%s%s%s", st ? st : "of no status",
                 type ? ": " : "", type ? type : "", detail ? ": " : "", detail ? detail : "");
    } else if (done) {
        if (acme_post(&cl->c, cl->account, cl->kid, cert_url, NULL, "application/pem-certificate-chain", &r, s->err,
                      s->errlen) == 0) {
            if (r.body && strstr(r.body, "-----BEGIN CERTIFICATE-----")) {
                out->cert_pem = vc_strdup(r.body);
                out->key_pem = jws_key_pem(key);
                rc = 0;
            } else {
                snprintf(s->err, s->errlen, "%s is not a PEM chain", cert_url);
            }
        }
        acme_resp_free(&r);
    }
    json_decref(done);
    EVP_PKEY_free(key);
    return rc;
}

acme_client_t *acme_client_new(const atomic_int *stop)
{
    acme_client_t *cl = vc_calloc(1, sizeof(*cl));
    acme_conn_init(&cl->c, NULL, stop);
    return cl;
}

/* What is kept of the CA, forgotten: after a failure, or for another CA. */
static void forget(acme_client_t *cl, int account_too)
{
    json_decref(cl->dir);
    cl->dir = NULL;
    free(cl->kid);
    cl->kid = NULL;
    free(cl->c.nonce);
    cl->c.nonce = NULL;
    if (account_too) {
        EVP_PKEY_free(cl->account);
        cl->account = NULL;
    }
}

void acme_client_free(acme_client_t **pcl)
{
    acme_client_t *cl = *pcl;
    if (cl == NULL)
        return;
    forget(cl, 1);
    free(cl->directory);
    free(cl->key_path);
    acme_conn_fini(&cl->c);
    free(cl);
    *pcl = NULL;
}

/* The kept state is for one CA and account key: another forgets it. */
static void use_ca(acme_client_t *cl, const acme_ca_t *ca)
{
    if (cl->directory == NULL || strcmp(cl->directory, ca->directory) != 0 ||
        strcmp(cl->key_path, ca->account_key_path) != 0) {
        forget(cl, 1);
        free(cl->directory);
        free(cl->key_path);
        cl->directory = vc_strdup(ca->directory);
        cl->key_path = vc_strdup(ca->account_key_path);
    }
    cl->c.ca_bundle = ca->ca_bundle; /* borrowed for the call */
    cl->c.timeout_ms = ca->timeout_ms;
    cl->c.failed_retry_after = -1;
    free(cl->c.failed_problem);
    cl->c.failed_problem = NULL;
}

static int is_problem(const acme_conn_t *c, const char *type)
{
    json_t *j = c->failed_problem ? json_loads(c->failed_problem, 0, NULL) : NULL;
    const char *t = json_string_value(json_object_get(j, "type"));
    int is = t && strcmp(t, type) == 0;
    json_decref(j);
    return is;
}

/* newOrder: the order and its URL, or -1. A CA that will not let this
 * order replace the old certificate (RFC 9773 5: it was replaced
 * already) is asked again without replaces. */
static int new_order(session_t *s, const acme_want_t *w, json_t **order, char **order_url)
{
    acme_client_t *cl = s->cl;
    const char *replaces = w->replaces && json_object_get(cl->dir, "renewalInfo") ? w->replaces : NULL;
    for (;;) {
        json_t *ids = json_array();
        for (size_t i = 0; i < w->nhosts; i++)
            json_array_append_new(ids, json_pack("{s:s, s:s}", "type", "dns", "value", w->hosts[i]));
        json_t *p = json_pack("{s:o}", "identifiers", ids);
        if (s->ca->profile && s->ca->profile[0])
            json_object_set_new(p, "profile", json_string(s->ca->profile));
        if (replaces)
            json_object_set_new(p, "replaces", json_string(replaces));
        char *payload = json_dumps(p, JSON_COMPACT);
        json_decref(p);
        acme_resp_t r;
        int rc = acme_post(&cl->c, cl->account, cl->kid, dir_url(s, "newOrder"), payload, NULL, &r, s->err, s->errlen);
        free(payload);
        if (rc < 0 && replaces && is_problem(&cl->c, "urn:ietf:params:acme:error:alreadyReplaced")) {
            acme_resp_free(&r);
            replaces = NULL;
            continue;
        }
        *order_url = rc == 0 && r.location ? vc_strdup(r.location) : NULL;
        *order = rc == 0 && json_is_object(r.json) ? json_incref(r.json) : NULL;
        acme_resp_free(&r);
        if (rc == 0 && (*order == NULL || *order_url == NULL)) {
            snprintf(s->err, s->errlen, "newOrder gave no order");
            rc = -1;
        }
        return rc;
    }
}

int acme_issue(acme_client_t *cl, const acme_ca_t *ca, const acme_want_t *want, acme_publish_fn publish, void *arg,
               acme_issued_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    use_ca(cl, ca);
    unsigned trips = cl->c.round_trips;
    session_t s = {.cl = cl, .ca = ca, .err = err, .errlen = errlen};
    int rc = -1;
    json_t *order = NULL;
    char *order_url = NULL;
    if (directory(&s) == 0 && account(&s) == 0 && new_order(&s, want, &order, &order_url) == 0 &&
        acme_authorize_all(&s, json_object_get(order, "authorizations"), publish, arg) == 0)
        rc = finalize(&s, order, order_url, want, out);
    out->retry_after = -1;
    if (rc < 0) {
        out->retry_after = cl->c.failed_retry_after;
        out->problem = cl->c.failed_problem ? vc_strdup(cl->c.failed_problem) : NULL;
        forget(cl, 0); /* the next order starts from the directory */
    }
    cl->c.ca_bundle = NULL;
    out->round_trips = cl->c.round_trips - trips;
    free(order_url);
    json_decref(order);
    return rc;
}

int acme_renewal_info(acme_client_t *cl, const acme_ca_t *ca, const char *cert_id, acme_renewal_t *out, char *err,
                      size_t errlen)
{
    use_ca(cl, ca);
    session_t s = {.cl = cl, .ca = ca, .err = err, .errlen = errlen};
    int rc = directory(&s);
    const char *base = rc == 0 ? json_string_value(json_object_get(cl->dir, "renewalInfo")) : NULL;
    if (rc == 0 && base == NULL) {
        rc = 1;
    } else if (rc == 0) {
        /* An unauthenticated GET of renewalInfo/ID (RFC 9773 4.1). */
        char *url = vc_asprintf("%s%s%s", base, base[strlen(base) - 1] == '/' ? "" : "/", cert_id);
        acme_resp_t r;
        rc = acme_get(&cl->c, url, &r, err, errlen);
        if (rc == 0 && acme_renewal_window(r.json, &out->start, &out->end) < 0) {
            snprintf(err, errlen, "%s gave no usable suggestedWindow", url);
            rc = -1;
        }
        out->retry_after = acme_retry_after(&r, -1);
        acme_resp_free(&r);
        free(url);
    }
    if (rc < 0)
        forget(cl, 0);
    cl->c.ca_bundle = NULL;
    return rc;
}

int acme_revoke(acme_client_t *cl, const acme_ca_t *ca, const char *cert_pem, int reason, char *err, size_t errlen)
{
    use_ca(cl, ca);
    session_t s = {.cl = cl, .ca = ca, .err = err, .errlen = errlen};
    BIO *b = BIO_new_mem_buf(cert_pem, -1);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    unsigned char *der = NULL;
    int n = x ? i2d_X509(x, &der) : -1;
    X509_free(x);
    int rc = -1;
    if (n <= 0) {
        snprintf(err, errlen, "the certificate in service cannot be read");
    } else if (directory(&s) == 0 && account(&s) == 0 && dir_url(&s, "revokeCert")) {
        char *cert = jws_b64url(der, (size_t)n);
        json_t *p = json_pack("{s:s}", "certificate", cert);
        if (reason >= 0)
            json_object_set_new(p, "reason", json_integer(reason));
        char *payload = json_dumps(p, JSON_COMPACT);
        acme_resp_t r;
        rc = acme_post(&cl->c, cl->account, cl->kid, dir_url(&s, "revokeCert"), payload, NULL, &r, err, errlen);
        acme_resp_free(&r);
        free(payload);
        json_decref(p);
        free(cert);
    }
    OPENSSL_free(der);
    if (rc < 0)
        forget(cl, 0);
    cl->c.ca_bundle = NULL;
    return rc;
}

void acme_issued_free(acme_issued_t *i)
{
    free(i->cert_pem);
    free(i->problem);
    if (i->key_pem) {
        sodium_memzero(i->key_pem, strlen(i->key_pem));
        free(i->key_pem);
    }
    memset(i, 0, sizeof(*i));
}
