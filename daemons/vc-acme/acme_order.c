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
static int finalize(session_t *s, json_t *order, const char *order_url, const char *const *hosts, size_t nhosts,
                    int rsa_bits, acme_issued_t *out)
{
    static const char *const processing[] = {"pending", "ready", "processing", NULL};
    const char *fin = json_string_value(json_object_get(order, "finalize"));
    if (fin == NULL) {
        snprintf(s->err, s->errlen, "the order names no finalize URL");
        return -1;
    }
    EVP_PKEY *key = jws_key_new(rsa_bits);
    char *csr = key ? acme_csr_b64(key, hosts, nhosts) : NULL;
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
        snprintf(s->err, s->errlen, "the order is %s after finalisation", st ? st : "of no status");
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

int acme_issue(acme_client_t *cl, const acme_ca_t *ca, const char *const *hosts, size_t nhosts, int rsa_bits,
               acme_publish_fn publish, void *arg, acme_issued_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (cl->directory == NULL || strcmp(cl->directory, ca->directory) != 0 ||
        strcmp(cl->key_path, ca->account_key_path) != 0) {
        forget(cl, 1);
        free(cl->directory);
        free(cl->key_path);
        cl->directory = vc_strdup(ca->directory);
        cl->key_path = vc_strdup(ca->account_key_path);
    }
    cl->c.ca_bundle = ca->ca_bundle; /* borrowed for the call */
    unsigned trips = cl->c.round_trips;
    session_t s = {.cl = cl, .ca = ca, .err = err, .errlen = errlen};
    int rc = -1;
    json_t *order = NULL;
    char *order_url = NULL;
    if (directory(&s) < 0 || account(&s) < 0)
        goto done;
    json_t *ids = json_array();
    for (size_t i = 0; i < nhosts; i++)
        json_array_append_new(ids, json_pack("{s:s, s:s}", "type", "dns", "value", hosts[i]));
    json_t *p = json_pack("{s:o}", "identifiers", ids);
    if (ca->profile && ca->profile[0])
        json_object_set_new(p, "profile", json_string(ca->profile));
    char *payload = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    acme_resp_t r;
    int posted = acme_post(&cl->c, cl->account, cl->kid, dir_url(&s, "newOrder"), payload, NULL, &r, err, errlen);
    free(payload);
    order_url = r.location ? vc_strdup(r.location) : NULL;
    order = r.json ? json_incref(r.json) : NULL;
    acme_resp_free(&r);
    if (posted < 0 || order == NULL || order_url == NULL) {
        if (posted == 0)
            snprintf(err, errlen, "newOrder gave no order");
        goto done;
    }
    if (acme_authorize_all(&s, json_object_get(order, "authorizations"), publish, arg) == 0)
        rc = finalize(&s, order, order_url, hosts, nhosts, rsa_bits, out);
done:
    if (rc < 0)
        forget(cl, 0); /* the next order starts from the directory */
    cl->c.ca_bundle = NULL;
    out->round_trips = cl->c.round_trips - trips;
    free(order_url);
    json_decref(order);
    return rc;
}
void acme_issued_free(acme_issued_t *i)
{
    free(i->cert_pem);
    if (i->key_pem) {
        sodium_memzero(i->key_pem, strlen(i->key_pem));
        free(i->key_pem);
    }
    memset(i, 0, sizeof(*i));
}
