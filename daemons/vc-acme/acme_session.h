/*
 * What acme_order.c and acme_authz.c share: the client that lives across
 * orders (its CA's directory, account and last nonce are kept, so a second
 * order does not read them again), and one order's session over it.
 */
#ifndef VC_ACME_SESSION_H
#define VC_ACME_SESSION_H

#include "acme_http.h"
#include "acme_order.h"

struct acme_client {
    acme_conn_t c;
    char *directory; /* the URL the kept state is for */
    char *key_path;  /* the account key's */
    json_t *dir;     /* the directory object; NULL: read it */
    EVP_PKEY *account;
    char *kid; /* the account URL; NULL: look it up */
};

typedef struct session {
    acme_client_t *cl;
    const acme_ca_t *ca;
    char *err;
    size_t errlen;
} session_t;

/* POST-as-GET of url until its status is none of waiting: first after
 * first_wait_s, then as Retry-After says, else every default_wait_s, for at
 * most POLL_LIMIT_S. The object (a new reference), or NULL with the error. */
#define POLL_LIMIT_S 180
json_t *acme_poll(session_t *s, const char *url, const char *const *waiting, long first_wait_s, long default_wait_s);

/* Sleeps ms, a tenth of a second at a time, so that a stop is not kept
 * waiting. 0, or -1 if stopped (s->err says so). */
int acme_wait(session_t *s, long ms);

/* The order's authorisations (a JSON array of URLs) answered: each
 * pending one's answer published (for DNS-01, then the propagation wait),
 * the CA told to check them, then all of them waited for together (as
 * certbot does: a second, then Retry-After or 3 s), then the answers
 * withdrawn. 0 once all are valid, or -1 with the first
 * failure (the CA's problem). */
int acme_authorize_all(session_t *s, const json_t *urls, acme_publish_fn publish, void *arg);

#endif
