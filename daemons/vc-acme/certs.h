/*
 * A site's certificate: installed where the fronts read it (vc_acme.h),
 * and its schedule, kept in LMDB (acme_certs) so that a restart knows
 * when to renew and how long to wait after a failure.
 */
#ifndef VC_ACME_CERTS_H
#define VC_ACME_CERTS_H

#include "vc_store.h"

#include <stdint.h>

typedef struct cert_state {
    char hosts[2048];   /* as last ordered, space-separated */
    int64_t not_before; /* unix seconds; 0: none issued yet */
    int64_t not_after;
    int64_t renew_at;      /* when a third of its lifetime is left */
    int64_t next_try;      /* after a failure: not before */
    unsigned failures;     /* in a row */
    char issuer[256];      /* the issuer's CN */
    char last_error[1024]; /* "" after a success */
} cert_state_t;

/* 0, or -1 if the site has none yet (s zeroed). */
int certs_state_read(vc_store_t *st, const char *site, cert_state_t *s);
int certs_state_write(vc_store_t *st, const char *site, const cert_state_t *s);

/* Writes the key (0600) and then the chain, each whole (a temporary file
 * renamed), and fills s's dates, issuer and renew_at from the chain's first
 * certificate. 0, or -1 with err; what was in service stays if it fails. */
int certs_install(const char *data_dir, const char *site, const char *cert_pem, const char *key_pem, cert_state_t *s,
                  char *err, size_t errlen);

#endif
