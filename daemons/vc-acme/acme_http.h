/*
 * ACME's HTTP (RFC 8555 6): GETs of the directory, and signed POSTs, each
 * with a fresh nonce (the last answer's Replay-Nonce, or newNonce's). A
 * badNonce error is tried again once with the nonce it brought (6.5); a
 * problem document (RFC 7807) becomes the error's text. Round trips are
 * counted, to compare with other clients.
 */
#ifndef VC_ACME_HTTP_H
#define VC_ACME_HTTP_H

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdatomic.h>

typedef struct acme_resp {
    long status;
    char *body; /* NUL-terminated */
    size_t len;
    char *location, *retry_after;
    json_t *json; /* the body, if it is JSON; else NULL */
} acme_resp_t;

typedef struct acme_conn {
    CURL *curl;
    const char *ca_bundle;  /* PEM of the CAs trusted for the server's HTTPS; NULL: the system's */
    long timeout_ms;        /* for one request, all of it; 0: REQUEST_TIMEOUT_MS */
    char *nonce;            /* the next request's */
    char *new_nonce_url;    /* from the directory */
    unsigned round_trips;   /* requests sent */
    const atomic_int *stop; /* non-zero: a request on its way is abandoned */
    /* The last answer that was not 2xx: its Retry-After in seconds (-1:
     * none) and its problem document (compact JSON, or NULL), so a
     * rate limit is waited out and reported as the CA worded it. */
    long failed_retry_after;
    char *failed_problem;
} acme_conn_t;

void acme_conn_init(acme_conn_t *c, const char *ca_bundle, const atomic_int *stop);
void acme_conn_fini(acme_conn_t *c);
void acme_resp_free(acme_resp_t *r);

/* 0, or -1 with err (no answer, or one that is not 2xx: its problem). */
int acme_get(acme_conn_t *c, const char *url, acme_resp_t *r, char *err, size_t errlen);
/* A JWS of payload (NULL: POST-as-GET) to url, signed with key as kid
 * (NULL: with the jwk). accept: an Accept header, or NULL. */
int acme_post(acme_conn_t *c, EVP_PKEY *key, const char *kid, const char *url, const char *payload, const char *accept,
              acme_resp_t *r, char *err, size_t errlen);

/* Seconds a Retry-After asks for (delta-seconds or an HTTP date), or
 * fallback if there is none or it cannot be read. */
long acme_retry_after(const acme_resp_t *r, long fallback);

#endif
