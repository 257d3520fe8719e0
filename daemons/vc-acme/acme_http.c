#include "acme_http.h"
#include "acme_parse.h"
#include "jws.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A CA's answer is small: an order lists its authorisations, a chain is a
 * few certificates. More is refused, not buffered. */
#define MAX_BODY (1 << 20)
#define REQUEST_TIMEOUT_MS 30000

void acme_conn_init(acme_conn_t *c, const char *ca_bundle, const atomic_int *stop)
{
    memset(c, 0, sizeof(*c));
    c->curl = curl_easy_init();
    c->ca_bundle = ca_bundle;
    c->stop = stop;
    c->failed_retry_after = -1;
}

void acme_conn_fini(acme_conn_t *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->nonce);
    free(c->new_nonce_url);
    free(c->failed_problem);
    memset(c, 0, sizeof(*c));
}

void acme_resp_free(acme_resp_t *r)
{
    free(r->body);
    free(r->location);
    free(r->retry_after);
    json_decref(r->json);
    memset(r, 0, sizeof(*r));
}

typedef struct sink {
    acme_conn_t *c;
    acme_resp_t *r;
    int too_big;
} sink_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    sink_t *s = arg;
    size_t len = size * n;
    if (s->r->len + len > MAX_BODY) {
        s->too_big = 1;
        return 0;
    }
    s->r->body = vc_realloc(s->r->body, s->r->len + len + 1);
    memcpy(s->r->body + s->r->len, p, len);
    s->r->len += len;
    s->r->body[s->r->len] = '\0';
    return len;
}

static void keep(char **slot, char *v)
{
    if (v) {
        free(*slot);
        *slot = v;
    }
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    sink_t *s = arg;
    size_t len = size * n;
    keep(&s->c->nonce, acme_header_value(p, len, "Replay-Nonce"));
    keep(&s->r->location, acme_header_value(p, len, "Location"));
    keep(&s->r->retry_after, acme_header_value(p, len, "Retry-After"));
    return len;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    const acme_conn_t *conn = arg;
    return conn->stop && atomic_load(conn->stop);
}

static int request(acme_conn_t *c, const char *method, const char *url, const char *body, const char *accept,
                   acme_resp_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    if (c->curl == NULL) {
        snprintf(err, errlen, "curl_easy_init() failed");
        return -1;
    }
    sink_t s = {c, r, 0};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *h = NULL;
    if (body)
        h = curl_slist_append(h, "Content-Type: application/jose+json");
    if (accept) {
        char *a = vc_asprintf("Accept: %s", accept);
        h = curl_slist_append(h, a);
        free(a);
    }
    h = curl_slist_append(h, "Expect:");
    CURL *cu = c->curl;
    curl_easy_reset(cu);
    curl_easy_setopt(cu, CURLOPT_URL, url);
    curl_easy_setopt(cu, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(cu, CURLOPT_USERAGENT, "vc-acme");
    curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, c->timeout_ms > 0 ? c->timeout_ms : (long)REQUEST_TIMEOUT_MS);
    curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(cu, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(cu, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(cu, CURLOPT_HEADERDATA, &s);
    curl_easy_setopt(cu, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(cu, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(cu, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(cu, CURLOPT_ERRORBUFFER, errbuf);
    if (c->ca_bundle)
        curl_easy_setopt(cu, CURLOPT_CAINFO, c->ca_bundle);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(cu, CURLOPT_NOBODY, 1L);
    else if (body)
        curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
    c->round_trips++;
    c->failed_retry_after = -1; /* what a refusal said is kept only while it is the last answer */
    free(c->failed_problem);
    c->failed_problem = NULL;
    CURLcode rc = curl_easy_perform(cu);
    curl_slist_free_all(h);
    curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &r->status);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s %s: %s", method, url,
                 s.too_big   ? "an answer over 1 MiB"
                 : errbuf[0] ? errbuf
                             : curl_easy_strerror(rc));
        return -1;
    }
    char *ct = NULL;
    curl_easy_getinfo(cu, CURLINFO_CONTENT_TYPE, &ct);
    if (r->body && ct && (strstr(ct, "json") != NULL))
        r->json = json_loadb(r->body, r->len, 0, NULL);
    if (r->status < 200 || r->status > 299) {
        acme_problem_text(r->json, r->status, url, err, errlen);
        c->failed_retry_after = acme_retry_after_value(r->retry_after, -1);
        c->failed_problem = r->json && r->len <= 4096 ? json_dumps(r->json, JSON_COMPACT) : NULL;
        return -1;
    }
    if (ct && strstr(ct, "json") && r->json == NULL && r->len > 0) { /* empty (a revocation's answer) is fine */
        snprintf(err, errlen, "%s answered JSON that does not parse", url);
        return -1;
    }
    return 0;
}

int acme_get(acme_conn_t *c, const char *url, acme_resp_t *r, char *err, size_t errlen)
{
    return request(c, "GET", url, NULL, NULL, r, err, errlen);
}

static int is_bad_nonce(const acme_resp_t *r)
{
    const char *type = r->json ? json_string_value(json_object_get(r->json, "type")) : NULL;
    return r->status == 400 && type && strcmp(type, "urn:ietf:params:acme:error:badNonce") == 0;
}

int acme_post(acme_conn_t *c, EVP_PKEY *key, const char *kid, const char *url, const char *payload, const char *accept,
              acme_resp_t *r, char *err, size_t errlen)
{
    for (int attempt = 0;; attempt++) {
        if (c->nonce == NULL) {
            acme_resp_t h;
            if (c->new_nonce_url == NULL) {
                snprintf(err, errlen, "no newNonce URL (the directory was not read)");
                return -1;
            }
            int rc = request(c, "HEAD", c->new_nonce_url, NULL, NULL, &h, err, errlen);
            acme_resp_free(&h);
            if (rc < 0)
                return -1;
            if (c->nonce == NULL) {
                snprintf(err, errlen, "%s gave no Replay-Nonce", c->new_nonce_url);
                return -1;
            }
        }
        char *nonce = c->nonce;
        c->nonce = NULL; /* used once */
        char *jws = jws_sign(key, kid, nonce, url, payload);
        free(nonce);
        if (jws == NULL) {
            snprintf(err, errlen, "the request to %s could not be signed", url);
            return -1;
        }
        int rc = request(c, "POST", url, jws, accept, r, err, errlen);
        free(jws);
        /* A rejected nonce (Pebble refuses 5 % of them) is tried again
         * with the one the error brought. */
        if (rc < 0 && attempt < 3 && is_bad_nonce(r)) {
            acme_resp_free(r);
            continue;
        }
        return rc;
    }
}

long acme_retry_after(const acme_resp_t *r, long fallback)
{
    return acme_retry_after_value(r->retry_after, fallback);
}
