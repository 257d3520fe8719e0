/*
 * librsync's deltas, in memory and bounded (docs/deploys.md): a node
 * sends the signature of what it has, the deployer a delta against it,
 * and the node rebuilds the new bytes, which it then checks against the
 * signed manifest's hash. A delta is outside input: what it rebuilds is
 * capped, so a small delta cannot ask for gigabytes.
 *
 * Linked by vc and vc-fed only (the vc_delta library), not by every
 * daemon.
 */
#ifndef VC_DELTA_H
#define VC_DELTA_H

#include <stddef.h>

/* What a job reads: a file (fd >= 0, read to its end) or bytes. */
typedef struct vc_delta_in {
    int fd;
    const void *data;
    size_t len;
} vc_delta_in_t;

/* A buffer the caller frees. */
typedef struct vc_delta_out {
    unsigned char *data;
    size_t len;
} vc_delta_out_t;

/* The signature of the basis. 0, or -1. */
int vc_delta_signature(vc_delta_in_t basis, vc_delta_out_t *sig);
/* A delta from the signature to the new bytes; -1 if it would pass max
 * (then sending the bytes whole is cheaper) or the signature is bad. */
int vc_delta_make(const void *sig, size_t sig_len, vc_delta_in_t new_bytes, size_t max, vc_delta_out_t *delta);
/* The new bytes from the basis (a file) and the delta; -1 if the delta is
 * malformed or rebuilds more than max bytes. */
int vc_delta_apply(int basis_fd, const void *delta, size_t delta_len, size_t max, vc_delta_out_t *out);
/* The same with the basis in memory. */
int vc_delta_apply_mem(const void *basis, size_t basis_len, const void *delta, size_t delta_len, size_t max,
                       vc_delta_out_t *out);

#endif
