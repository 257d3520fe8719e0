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
    char cert_id[256];     /* its ARI identifier (RFC 9773 4.1); "": it has none */
    char directory[512];   /* the CA that issued it: asked for its window, told of its revocation */
    int64_t ari_next;      /* when to ask the CA for its renewal window next; 0: at once */
    int64_t window_start;  /* the window the CA last suggested; 0: none */
    int64_t window_end;
} cert_state_t;

/* 0, or -1 if the site has none yet (s zeroed). */
int certs_state_read(vc_store_t *st, const char *site, cert_state_t *s);
int certs_state_write(vc_store_t *st, const char *site, const cert_state_t *s);

/* The sites in the schedule whose names begin with prefix (malloc'd, in
 * order): on-demand hosts' ("on-demand/HOST"). */
size_t certs_names(vc_store_t *st, const char *prefix, char ***names);
void certs_names_free(char **names, size_t n);

/* Writes the key (0600) and the chain to temporary files, then renames
 * the key and then the chain into place, and fills s's dates, issuer, ARI
 * identifier and renew_at from the chain's first certificate (its renewal
 * window is asked for anew). 0, or -1 with err: then what was in service
 * stays, on disk and in s (a full disk among the causes). */
int certs_install(const char *data_dir, const char *site, const char *cert_pem, const char *key_pem, cert_state_t *s,
                  char *err, size_t errlen);

/* 1 if the site's key and certificate files are there and agree; 0 if
 * not (none yet, or a kill came between the two writes). */
int certs_pair_agrees(const char *data_dir, const char *site);

#endif
