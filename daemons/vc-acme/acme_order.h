/*
 * One certificate from an ACME CA (RFC 8555 7): the directory, the
 * account (made, or found again by its key: 7.3.1), an order for the
 * host names, their authorisations answered by HTTP-01, the finalisation
 * with a CSR for a new key, and the chain. Blocking: vc-acme runs it on a
 * thread of its own.
 */
#ifndef VC_ACME_ORDER_H
#define VC_ACME_ORDER_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct acme_ca {
    const char *directory;        /* URL */
    const char *ca_bundle;        /* PEM trusted for the CA's HTTPS; NULL: the system's */
    const char *email;            /* the account's contact; NULL or "": none */
    const char *account_key_path; /* made there (0600) if missing */
    const char *profile;          /* a profile to ask for (draft-aaron-acme-profiles), or NULL */
} acme_ca_t;

/* An HTTP-01 answer published (put) or withdrawn: the front answers
 * /.well-known/acme-challenge/TOKEN with key_auth. 0, or -1. */
typedef int (*acme_http01_fn)(void *arg, const char *token, const char *key_auth, int put);

typedef struct acme_issued {
    char *cert_pem; /* the chain, the certificate first */
    char *key_pem;  /* its private key */
    unsigned round_trips;
} acme_issued_t;

/* 0 and out filled, or -1 with err (the CA's problem, if it sent one).
 * rsa_bits 0: a P-256 key. stop, when set, abandons the order. */
int acme_issue(const acme_ca_t *ca, const char *const *hosts, size_t nhosts, int rsa_bits, acme_http01_fn http01,
               void *arg, const atomic_int *stop, acme_issued_t *out, char *err, size_t errlen);
void acme_issued_free(acme_issued_t *i);

/* The CSR for hosts (the first is also the subject's CN), signed with key,
 * as DER in base64url (malloc'd); NULL if it cannot be made. */
struct evp_pkey_st;
char *acme_csr_b64(struct evp_pkey_st *key, const char *const *hosts, size_t nhosts);

#endif
