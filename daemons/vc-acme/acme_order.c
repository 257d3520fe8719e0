#include "acme_order.h"
#include "acme_http.h"
#include "acme_parse.h"
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

/* How long an authorisation or an order may stay pending or processing
 * (Pebble's validation waits up to 15 s; Let's Encrypt's, seconds). */
#define POLL_LIMIT_S 180

typedef struct session {
    const acme_ca_t *ca;
    acme_conn_t c;
    EVP_PKEY *account;
    char *kid;
    json_t *dir;
    char *err;
    size_t errlen;
} session_t;

static const char *dir_url(session_t *s, const char *name)
{
    const char *u = json_string_value(json_object_get(s->dir, name));
    if (u == NULL)
        snprintf(s->err, s->errlen, "the directory %s names no %s", s->ca->directory, name);
    return u;
}

static int directory(session_t *s)
{
    acme_resp_t r;
    if (acme_get(&s->c, s->ca->directory, &r, s->err, s->errlen) < 0 || !json_is_object(r.json)) {
        if (r.json == NULL && r.status >= 200 && r.status < 300)
            snprintf(s->err, s->errlen, "the directory %s is not a JSON object", s->ca->directory);
        acme_resp_free(&r);
        return -1;
    }
    s->dir = json_incref(r.json);
    acme_resp_free(&r);
    const char *nn = dir_url(s, "newNonce");
    if (nn == NULL || dir_url(s, "newAccount") == NULL || dir_url(s, "newOrder") == NULL)
        return -1;
    s->c.new_nonce_url = vc_strdup(nn);
    return 0;
}

/* newAccount with the key: made, or the one it has (200 and Location). */
static int account(session_t *s)
{
    char err[256];
    s->account = jws_key_load_or_make(s->ca->account_key_path, 0, err, sizeof(err));
    if (s->account == NULL) {
        snprintf(s->err, s->errlen, "%s", err);
        return -1;
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
    int rc = acme_post(&s->c, s->account, NULL, dir_url(s, "newAccount"), payload, NULL, &r, s->err, s->errlen);
    free(payload);
    if (rc == 0 && r.location == NULL) {
        snprintf(s->err, s->errlen, "newAccount gave no account URL");
        rc = -1;
    }
    if (rc == 0)
        s->kid = vc_strdup(r.location);
    acme_resp_free(&r);
    return rc;
}

/* POST-as-GET of url until its status is none of the waiting ones;
 * the object (a new reference), or NULL. */
static json_t *poll_until(session_t *s, const char *url, const char *const *waiting)
{
    for (uint64_t until = vc_mono_ms() + POLL_LIMIT_S * 1000;;) {
        acme_resp_t r;
        if (acme_post(&s->c, s->account, s->kid, url, NULL, NULL, &r, s->err, s->errlen) < 0 || r.json == NULL) {
            if (r.json == NULL && r.status / 100 == 2)
                snprintf(s->err, s->errlen, "%s is not JSON", url);
            acme_resp_free(&r);
            return NULL;
        }
        const char *st = json_string_value(json_object_get(r.json, "status"));
        int wait = 0;
        for (size_t i = 0; st && waiting[i]; i++)
            wait |= strcmp(st, waiting[i]) == 0;
        if (!wait) {
            json_t *o = json_incref(r.json);
            acme_resp_free(&r);
            return o;
        }
        long sec = acme_retry_after(&r, 1);
        acme_resp_free(&r);
        if (vc_mono_ms() + (uint64_t)sec * 1000 > until) {
            snprintf(s->err, s->errlen, "%s still %s after %d s", url, st, POLL_LIMIT_S);
            return NULL;
        }
        for (long ms = sec * 1000; ms > 0; ms -= 100) { /* stoppable */
            if (s->c.stop && atomic_load(s->c.stop)) {
                snprintf(s->err, s->errlen, "stopped");
                return NULL;
            }
            usleep(100000);
        }
    }
}

/* The error an authorisation's failed challenge carries. */
static void challenge_error(session_t *s, json_t *authz, const char *host)
{
    json_t *ch;
    size_t i;
    json_array_foreach(json_object_get(authz, "challenges"), i, ch)
    {
        json_t *e = json_object_get(ch, "error");
        if (e) {
            snprintf(s->err, s->errlen, "%s: %s: %s", host, json_string_value(json_object_get(e, "type")),
                     json_string_value(json_object_get(e, "detail")));
            return;
        }
    }
    snprintf(s->err, s->errlen, "%s: the authorisation is %s", host,
             json_string_value(json_object_get(authz, "status")));
}

/* One authorisation: its HTTP-01 challenge published and answered, then
 * waited for. */
static int authorize(session_t *s, const char *url, acme_http01_fn http01, void *arg)
{
    static const char *const pending[] = {"pending", NULL};
    acme_resp_t r;
    if (acme_post(&s->c, s->account, s->kid, url, NULL, NULL, &r, s->err, s->errlen) < 0) {
        acme_resp_free(&r);
        return -1;
    }
    json_t *a = r.json;
    const char *st = json_string_value(json_object_get(a, "status"));
    if (st && strcmp(st, "valid") == 0) { /* authorised before, still valid */
        acme_resp_free(&r);
        return 0;
    }
    const char *host, *token, *ch_url;
    if (acme_http01_of(a, &host, &token, &ch_url) < 0) {
        snprintf(s->err, s->errlen, "%s offers no usable http-01 challenge", url);
        acme_resp_free(&r);
        return -1;
    }
    char *thumb = jws_thumbprint(s->account);
    char *key_auth = vc_asprintf("%s.%s", token, thumb);
    free(thumb);
    char *tok = vc_strdup(token), *host_copy = vc_strdup(host), *chu = vc_strdup(ch_url);
    acme_resp_free(&r);
    int rc = -1;
    if (http01(arg, tok, key_auth, 1) < 0) {
        snprintf(s->err, s->errlen, "%s: the HTTP-01 answer could not be published", host_copy);
        goto done;
    }
    acme_resp_t cr;
    int posted = acme_post(&s->c, s->account, s->kid, chu, "{}", NULL, &cr, s->err, s->errlen);
    acme_resp_free(&cr);
    if (posted < 0)
        goto withdraw;
    json_t *done = poll_until(s, url, pending);
    if (done) {
        const char *fin = json_string_value(json_object_get(done, "status"));
        if (fin && strcmp(fin, "valid") == 0)
            rc = 0;
        else
            challenge_error(s, done, host_copy);
        json_decref(done);
    }
withdraw:
    http01(arg, tok, key_auth, 0);
done:
    free(key_auth);
    free(tok);
    free(host_copy);
    free(chu);
    return rc;
}

char *acme_csr_b64(EVP_PKEY *key, const char *const *hosts, size_t nhosts)
{
    X509_REQ *req = X509_REQ_new();
    X509_NAME *name = X509_NAME_new();
    char *san = vc_strdup("");
    for (size_t i = 0; i < nhosts; i++) {
        char *next = vc_asprintf("%s%sDNS:%s", san, i ? "," : "", hosts[i]);
        free(san);
        san = next;
    }
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)hosts[0], -1, -1, 0);
    X509_REQ_set_subject_name(req, name);
    X509_REQ_set_pubkey(req, key);
    STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
    char *out = NULL;
    if (ext && sk_X509_EXTENSION_push(exts, ext) && X509_REQ_add_extensions(req, exts) &&
        X509_REQ_sign(req, key, EVP_sha256()) > 0) {
        unsigned char *der = NULL;
        int len = i2d_X509_REQ(req, &der);
        if (len > 0)
            out = jws_b64url(der, (size_t)len);
        OPENSSL_free(der);
    }
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    free(san);
    X509_NAME_free(name);
    X509_REQ_free(req);
    return out;
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
    acme_resp_t r;
    int rc = acme_post(&s->c, s->account, s->kid, fin, payload, NULL, &r, s->err, s->errlen);
    free(payload);
    acme_resp_free(&r);
    json_t *done = rc == 0 ? poll_until(s, order_url, processing) : NULL;
    const char *st = done ? json_string_value(json_object_get(done, "status")) : NULL;
    const char *cert_url = done ? json_string_value(json_object_get(done, "certificate")) : NULL;
    rc = -1;
    if (done && (st == NULL || strcmp(st, "valid") != 0 || cert_url == NULL)) {
        snprintf(s->err, s->errlen, "the order is %s after finalisation", st ? st : "of no status");
    } else if (done) {
        if (acme_post(&s->c, s->account, s->kid, cert_url, NULL, "application/pem-certificate-chain", &r, s->err,
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

int acme_issue(const acme_ca_t *ca, const char *const *hosts, size_t nhosts, int rsa_bits, acme_http01_fn http01,
               void *arg, const atomic_int *stop, acme_issued_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    session_t s = {.ca = ca, .err = err, .errlen = errlen};
    acme_conn_init(&s.c, ca->ca_bundle, stop);
    int rc = -1;
    json_t *order = NULL;
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
    int posted = acme_post(&s.c, s.account, s.kid, dir_url(&s, "newOrder"), payload, NULL, &r, err, errlen);
    free(payload);
    char *order_url = r.location ? vc_strdup(r.location) : NULL;
    order = r.json ? json_incref(r.json) : NULL;
    acme_resp_free(&r);
    if (posted < 0 || order == NULL || order_url == NULL) {
        if (posted == 0)
            snprintf(err, errlen, "newOrder gave no order");
        free(order_url);
        goto done;
    }
    json_t *az;
    size_t i;
    int ok = 1;
    json_array_foreach(json_object_get(order, "authorizations"), i, az)
    {
        const char *u = json_string_value(az);
        if (u == NULL || authorize(&s, u, http01, arg) < 0) {
            if (u == NULL)
                snprintf(err, errlen, "the order lists an authorisation that is not a URL");
            ok = 0;
            break;
        }
    }
    if (ok)
        rc = finalize(&s, order, order_url, hosts, nhosts, rsa_bits, out);
    free(order_url);
done:
    out->round_trips = s.c.round_trips;
    json_decref(order);
    json_decref(s.dir);
    EVP_PKEY_free(s.account);
    free(s.kid);
    acme_conn_fini(&s.c);
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
