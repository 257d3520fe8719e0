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

/* Why vc-fed does not run with cfg (nothing is deployed here), or NULL. */
struct vc_config;
const char *cli_fed_absent(const struct vc_config *cfg);

/* keys.c: the key directory ($VC_KEYS, or ~/.config/velocity/keys) and a
 * secret key from it. */
char *cli_key_dir(void);
int cli_key_load(const char *name, unsigned char sk[VC_RELEASE_SECRET], char *why, size_t wlen);

#endif
