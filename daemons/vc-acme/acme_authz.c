#include "acme_parse.h"
#include "acme_session.h"
#include "acme_x509.h"
#include "jws.h"
#include "vc_log.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_AUTHZ 100 /* an order's names: Let's Encrypt allows 100 */

int acme_wait(session_t *s, long ms)
{
    for (; ms > 0; ms -= 100) {
        if (s->cl->c.stop && atomic_load(s->cl->c.stop)) {
            snprintf(s->err, s->errlen, "stopped");
            return -1;
        }
        usleep(ms < 100 ? (useconds_t)ms * 1000 : 100000);
    }
    return 0;
}

static int is_one_of(const char *st, const char *const *list)
{
    for (size_t i = 0; st && list[i]; i++)
        if (strcmp(st, list[i]) == 0)
            return 1;
    return 0;
}

json_t *acme_poll(session_t *s, const char *url, const char *const *waiting, long first_wait_s, long default_wait_s)
{
    uint64_t until = vc_mono_ms() + POLL_LIMIT_S * 1000;
    if (acme_wait(s, first_wait_s * 1000) < 0)
        return NULL;
    for (;;) {
        acme_resp_t r;
        acme_client_t *cl = s->cl;
        if (acme_post(&cl->c, cl->account, cl->kid, url, NULL, NULL, &r, s->err, s->errlen) < 0 || r.json == NULL) {
            if (r.json == NULL && r.status / 100 == 2)
                snprintf(s->err, s->errlen, "%s is not JSON", url);
            acme_resp_free(&r);
            return NULL;
        }
        const char *st = json_string_value(json_object_get(r.json, "status"));
        if (!is_one_of(st, waiting)) {
            json_t *o = json_incref(r.json);
            acme_resp_free(&r);
            return o;
        }
        long sec = acme_retry_after(&r, default_wait_s);
        acme_resp_free(&r);
        if (vc_mono_ms() + (uint64_t)sec * 1000 > until) {
            snprintf(s->err, s->errlen, "%s still %s after %d s", url, st, POLL_LIMIT_S);
            return NULL;
        }
        if (acme_wait(s, sec * 1000) < 0)
            return NULL;
    }
}

/* One authorisation being answered. */
typedef struct pending {
    char *url, *host, *name, *value; /* value: what was published under name */
    char *challenge;                 /* the challenge's URL, to tell the CA to check */
    const char *type;
    int done;
} pending_t;

/* The error an authorisation's failed challenge carries. */
static void challenge_error(session_t *s, const json_t *authz, const char *host)
{
    const json_t *ch;
    size_t i;
    json_array_foreach(json_object_get(authz, "challenges"), i, ch)
    {
        const json_t *e = json_object_get(ch, "error");
        if (e) {
            snprintf(s->err, s->errlen, "%s: %s: %s", host, json_string_value(json_object_get(e, "type")),
                     json_string_value(json_object_get(e, "detail")));
            return;
        }
    }
    snprintf(s->err, s->errlen, "%s: the authorisation is %s", host,
             json_string_value(json_object_get(authz, "status")));
}

/* DNS-01's record (RFC 8555 8.4): the name under which the TXT record
 * goes, and its value, base64url(SHA-256(key authorisation)). A
 * wildcard's authorisation names the domain under the wildcard. */
static void dns01_record(const char *host, const char *key_auth, char **name, char **value)
{
    unsigned char md[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(md, (const unsigned char *)key_auth, strlen(key_auth));
    *name = vc_asprintf("_acme-challenge.%s", host);
    *value = jws_b64url(md, sizeof(md));
}

/* Reads the authorisation at url; if it is not valid yet, publishes its
 * challenge's answer. 1 (p filled: to be answered), 0 (valid already),
 * or -1. */
static int start(session_t *s, const char *url, acme_publish_fn publish, void *arg, pending_t *p)
{
    acme_client_t *cl = s->cl;
    acme_resp_t r;
    if (acme_post(&cl->c, cl->account, cl->kid, url, NULL, NULL, &r, s->err, s->errlen) < 0) {
        acme_resp_free(&r);
        return -1;
    }
    const char *st = json_string_value(json_object_get(r.json, "status"));
    if (st && strcmp(st, "valid") == 0) { /* authorised before, still valid */
        acme_resp_free(&r);
        return 0;
    }
    const char *type = s->ca->challenge, *host, *token, *ch_url;
    if (acme_challenge_of(r.json, type, &host, &token, &ch_url) < 0) {
        snprintf(s->err, s->errlen, "%s offers no usable %s challenge", url, type);
        acme_resp_free(&r);
        return -1;
    }
    char *thumb = jws_thumbprint(cl->account);
    char *key_auth = vc_asprintf("%s.%s", token, thumb ? thumb : "");
    free(thumb);
    *p = (pending_t){.url = vc_strdup(url), .host = vc_strdup(host), .challenge = vc_strdup(ch_url), .type = type};
    if (strcmp(type, "tls-alpn-01") == 0) {
        p->name = vc_strdup(host);
        p->value = acme_alpn_cert(host, key_auth);
    } else if (strcmp(type, "dns-01") == 0) {
        dns01_record(host, key_auth, &p->name, &p->value);
    } else {
        p->name = vc_strdup(token);
        p->value = vc_strdup(key_auth);
    }
    free(key_auth);
    acme_resp_free(&r);
    char why[512] = "";
    if (p->value == NULL || publish(arg, type, p->name, p->value, 1, why, sizeof(why)) < 0) {
        snprintf(s->err, s->errlen, "%s: the %s answer could not be published%s%s", p->host, type, why[0] ? ": " : "",
                 why);
        return -1;
    }
    return 1;
}

/* Tells the CA to check each published answer. 0, or -1. */
static int answer_all(session_t *s, pending_t *p, size_t n)
{
    acme_client_t *cl = s->cl;
    for (size_t i = 0; i < n; i++) {
        acme_resp_t cr;
        int rc = acme_post(&cl->c, cl->account, cl->kid, p[i].challenge, "{}", NULL, &cr, s->err, s->errlen);
        acme_resp_free(&cr);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static void pending_free(pending_t *p, acme_publish_fn publish, void *arg)
{
    if (p->value) {
        char why[512];
        if (publish(arg, p->type, p->name, p->value, 0, why, sizeof(why)) < 0)
            vc_log(VC_LOG_WARN, "order", "%s: the %s answer could not be withdrawn: %s", p->host, p->type, why);
        sodium_memzero(p->value, strlen(p->value)); /* a key, for tls-alpn-01 */
    }
    free(p->url);
    free(p->challenge);
    free(p->host);
    free(p->name);
    free(p->value);
}

/* Polls each pending authorisation until none is. 0 if all are valid. */
static int poll_all(session_t *s, pending_t *p, size_t n)
{
    acme_client_t *cl = s->cl;
    uint64_t until = vc_mono_ms() + POLL_LIMIT_S * 1000;
    long wait_s = 1; /* a first second for the CA to check */
    for (size_t left = n; left > 0;) {
        if (acme_wait(s, wait_s * 1000) < 0)
            return -1;
        wait_s = 0;
        for (size_t i = 0; i < n; i++) {
            if (p[i].done)
                continue;
            acme_resp_t r;
            if (acme_post(&cl->c, cl->account, cl->kid, p[i].url, NULL, NULL, &r, s->err, s->errlen) < 0) {
                acme_resp_free(&r);
                return -1;
            }
            const char *st = json_string_value(json_object_get(r.json, "status"));
            if (st == NULL || strcmp(st, "pending") != 0) {
                int valid = st && strcmp(st, "valid") == 0;
                if (!valid)
                    challenge_error(s, r.json, p[i].host);
                acme_resp_free(&r);
                if (!valid)
                    return -1;
                p[i].done = 1;
                left--;
                continue;
            }
            long ra = acme_retry_after(&r, 3);
            if (ra > wait_s)
                wait_s = ra;
            acme_resp_free(&r);
        }
        if (left && vc_mono_ms() + (uint64_t)wait_s * 1000 > until) {
            snprintf(s->err, s->errlen, "authorisations still pending after %d s", POLL_LIMIT_S);
            return -1;
        }
    }
    return 0;
}

int acme_authorize_all(session_t *s, const json_t *urls, acme_publish_fn publish, void *arg)
{
    size_t n = json_array_size(urls);
    if (n > MAX_AUTHZ) {
        snprintf(s->err, s->errlen, "the order lists %zu authorisations", n);
        return -1;
    }
    pending_t *p = vc_calloc(n + 1, sizeof(*p));
    size_t np = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *u = json_string_value(json_array_get(urls, i));
        if (u == NULL) {
            snprintf(s->err, s->errlen, "the order lists an authorisation that is not a URL");
            rc = -1;
            break;
        }
        int started = start(s, u, publish, arg, &p[np]);
        if (started != 0)
            np++; /* published (or half made): withdrawn below */
        if (started < 0)
            rc = -1;
    }
    /* DNS-01: every record is set before the CA is told to look, and
     * given the time to reach its resolvers. */
    if (rc == 0 && np > 0 && strcmp(s->ca->challenge, "dns-01") == 0)
        rc = acme_wait(s, s->ca->dns_wait_ms);
    if (rc == 0 && np > 0)
        rc = answer_all(s, p, np);
    if (rc == 0 && np > 0)
        rc = poll_all(s, p, np);
    for (size_t i = 0; i < np; i++)
        pending_free(&p[i], publish, arg);
    free(p);
    return rc;
}
