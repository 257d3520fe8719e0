/*
 * vc deploy, vc rollback, vc releases (docs/deploys.md): the deployer's
 * side of vc-fed.
 */
#ifndef VC_CLI_DEPLOY_H
#define VC_CLI_DEPLOY_H

#include "vc_release.h"

#include <stddef.h>
#include <stdint.h>

typedef struct deploy {
    const char *site, *dir, *key_name, *message;
    char **exclude;
    size_t nexclude;
    char *root; /* dir, resolved */
    vc_release_t rel;
    char *text; /* the manifest */
    size_t len;
    uint64_t bytes; /* of every file */
} deploy_t;

/* Walks d->dir into d->rel and d->text. 0, or -1 with why. */
int deploy_build(deploy_t *d, char *why, size_t wlen);

/* A call to vc-fed (deploy.c); prints why it failed unless quiet. 0 or -1. */
struct vc_config;
struct Vc__Reply;
struct Vc__Record;
struct vc_delta_out;
int deploy_call(void *zctx, const struct vc_config *cfg, const char *verb, const char *const *args, size_t nargs,
                const void *payload, size_t plen, struct Vc__Reply **r, int quiet);

/* deploy_delta.c: the manifest as a delta against the current release's
 * (0, with base named), and a needed file as a delta against what vc-fed
 * has at its path (0 if sent and taken; else it goes whole). */
int deploy_manifest_delta(void *zctx, const struct vc_config *cfg, const deploy_t *d, struct vc_delta_out *delta,
                          char *base, size_t blen, uint64_t *received);
int deploy_send_delta(void *zctx, const struct vc_config *cfg, const deploy_t *d, int fd, const struct Vc__Record *need,
                      const struct Vc__Reply *stage, uint64_t *sent);

/* keys.c: the key directory ($VC_KEYS, or ~/.config/velocity/keys) and a
 * secret key from it. */
char *cli_key_dir(void);
int cli_key_load(const char *name, unsigned char sk[VC_RELEASE_SECRET], char *why, size_t wlen);

#endif
