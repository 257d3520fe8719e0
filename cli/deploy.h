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
    const char *git, *ref; /* --git URL|PATH and --ref REF: deploy_git.c */
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

/* deploy_hooks.c: site s's build hooks run in a copy of dir (*copy, to
 * walk instead; NULL without hooks), their output on stdout and in *log
 * (NULL without hooks). 0, or -1 with why. */
struct vc_site;
int deploy_build_hooks(const struct vc_site *s, const char *dir, char **copy, char **log, char *why, size_t wlen);
/* Removes the copy and frees its name. */
void deploy_build_cleanup(char *copy);
/* Prints release id's log from byte skip on. 0, or 1 (said on stderr). */
struct vc_config;
int deploy_print_log(void *zctx, const struct vc_config *cfg, const char *site, const char *id, size_t skip);

/* deploy_follow.c: the lines site's release hooks print in its pool,
 * printed as they come (from the bus) until deploy_follow_stop(), which
 * says how many. NULL if the bus cannot be read. */
typedef struct deploy_follow deploy_follow_t;
deploy_follow_t *deploy_follow_start(void *zctx, const struct vc_config *cfg, const char *site);
size_t deploy_follow_stop(deploy_follow_t *f);

/* deploy_git.c: ref (NULL: the default branch's head) of the repository
 * at url checked out, with its submodules, into *dir (made; the caller
 * removes it) and its commit's id into commit. 0, or -1 with why. */
int deploy_git_checkout(const char *url, const char *ref, char **dir, char *commit, size_t clen, char *why,
                        size_t wlen);

/* Why vc-fed does not run with cfg (nothing is deployed here), or NULL. */
struct vc_config;
const char *cli_fed_absent(const struct vc_config *cfg);

/* keys.c: the key directory ($VC_KEYS, or ~/.config/velocity/keys) and a
 * secret key from it. */
char *cli_key_dir(void);
int cli_key_load(const char *name, unsigned char sk[VC_RELEASE_SECRET], char *why, size_t wlen);

#endif
