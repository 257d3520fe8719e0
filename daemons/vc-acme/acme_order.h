/*
 * One certificate from an ACME CA (RFC 8555 7): the directory, the
 * account (made, or found again by its key: 7.3.1), an order for the
 * host names, their authorisations answered by HTTP-01 or TLS-ALPN-01
 * (RFC 8737), the finalisation
 * with a CSR for a new key, and the chain. Blocking: vc-acme runs it on a
 * thread of its own.
 */
#ifndef VC_ACME_ORDER_H
#define VC_ACME_ORDER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct acme_ca {
    const char *directory;        /* URL */
    const char *ca_bundle;        /* PEM trusted for the CA's HTTPS; NULL: the system's */
    long timeout_ms;              /* for one request to the CA, all of it; 0: 30 s */
    const char *email;            /* the account's contact; NULL or "": none */
    const char *account_key_path; /* made there (0600) if missing */
    const char *profile;          /* a profile to ask for (draft-aaron-acme-profiles), or NULL */
    const char *challenge;        /* "http-01", "tls-alpn-01" or "dns-01" */
    long dns_wait_ms;             /* dns-01: from the records set to the CA told to look */
    const char *eab_kid;          /* External Account Binding: the CA's key id, or NULL... */
    const char *eab_hmac_key;     /* ...and its MAC key (base64url) */
} acme_ca_t;

/* A challenge's answer published (put) or withdrawn, for the fronts:
 * http-01: name is the token, value the key authorisation (the front
 * answers /.well-known/acme-challenge/TOKEN); tls-alpn-01: name is the
 * host, value its challenge certificate and key (acme_x509.h); dns-01:
 * name is _acme-challenge.HOST, value the TXT record's text. 0, or -1
 * with err. */
typedef int (*acme_publish_fn)(void *arg, const char *type, const char *name, const char *value, int put, char *err,
                               size_t errlen);

/* What is ordered. */
typedef struct acme_want {
    const char *const *hosts;
    size_t nhosts;
    int rsa_bits;         /* 0: a P-256 key */
    const char *replaces; /* the ARI identifier of the certificate this one replaces (RFC 9773 5), or NULL */
} acme_want_t;

typedef struct acme_issued {
    char *cert_pem;       /* the chain, the certificate first */
    char *key_pem;        /* its private key */
    unsigned round_trips; /* requests this order sent */
    /* After a failure: the Retry-After of the CA's refusal in seconds
     * (-1: none) and its problem document (JSON, or NULL). */
    long retry_after;
    char *problem;
} acme_issued_t;

/* A CA's renewal information for one certificate (RFC 9773). */
typedef struct acme_renewal {
    int64_t start, end; /* the suggested window, unix seconds */
    long retry_after;   /* when to ask again, seconds; -1: the CA did not say */
} acme_renewal_t;

/* A client for one order at a time; it keeps the CA's directory, the
 * account's URL and the last nonce from one order to the next (for the
 * same CA and account key), and forgets them after a failure. stop, when
 * set, abandons what it is doing. */
typedef struct acme_client acme_client_t;
acme_client_t *acme_client_new(const atomic_int *stop);
void acme_client_free(acme_client_t **cl);

/* 0 and out filled, or -1 with err (the CA's problem, if it sent one)
 * and out's retry_after and problem. */
int acme_issue(acme_client_t *cl, const acme_ca_t *ca, const acme_want_t *want, acme_publish_fn publish, void *arg,
               acme_issued_t *out, char *err, size_t errlen);

/* The CA's renewal window for the certificate of ARI identifier cert_id:
 * 0 and out filled, 1 if the CA offers no renewal information (its
 * directory names no renewalInfo), or -1 with err. */
int acme_renewal_info(acme_client_t *cl, const acme_ca_t *ca, const char *cert_id, acme_renewal_t *out, char *err,
                      size_t errlen);
void acme_issued_free(acme_issued_t *i);

/* Revokes the first certificate of cert_pem (RFC 8555 7.6), signed with
 * the account's key; reason is a CRL reason code (RFC 5280 5.3.1), or -1
 * for none. 0, or -1 with err. */
int acme_revoke(acme_client_t *cl, const acme_ca_t *ca, const char *cert_pem, int reason, char *err, size_t errlen);

#endif
