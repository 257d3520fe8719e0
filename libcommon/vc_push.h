/*
 * vc_push: a signed release handed to one vc-fed (docs/deploys.md), the
 * same way whoever sends it: `vc deploy` to its node's vc-fed over the
 * control socket, and a node's vc-fed to another node's over NATS. It
 * sends the manifest (as a delta against the node's current one when it
 * can), then only the files the node asks for (each as a librsync delta
 * against the node's file at the same path when that is less than half
 * the bytes), then asks the node to check everything and count the
 * release staged.
 *
 * Linked by vc and vc-fed only (the vc_delta library).
 */
#ifndef VC_PUSH_H
#define VC_PUSH_H

#include "control.pb-c.h"
#include "vc_release.h"

#include <stddef.h>
#include <stdint.h>

/* One command to the vc-fed pushed to: 0 and *r (the caller frees it, ok
 * or not), or -1 with *r NULL when it did not answer (why said). */
typedef int (*vc_push_call_fn)(void *arg, const char *verb, const char *const *args, size_t nargs, const void *payload,
                               size_t plen, Vc__Reply **r, char *why, size_t wlen);

typedef struct vc_push {
    /* What is pushed. */
    const vc_release_t *rel; /* the manifest, parsed: its site and id */
    const char *text;        /* the manifest as signed */
    size_t len;
    const char *sig_hex;
    const char *root; /* the files: a deployer's tree, or a node's staged release */
    vc_push_call_fn call;
    void *arg;
    /* Called once the node said what it needs (done 0), then after each
     * file sent; may be NULL. */
    void (*progress)(const struct vc_push *p, size_t done);
    void *progress_arg;
    /* What happened. */
    char base[VC_RELEASE_ID_MAX + 1]; /* the manifest went as a delta against this release's ("" whole) */
    uint64_t manifest_bytes, sent, received, need_bytes;
    size_t nneed;
    uint64_t linked; /* files the node had already */
    char why[1024];  /* when it failed */
    int refused;     /* it failed because the node answered no (not: it could not be reached) */
} vc_push_t;

/* Stages the release on the node: 0, or -1 with p->why. */
int vc_push_stage(vc_push_t *p);

#endif
