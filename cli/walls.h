/*
 * Walls around a pool: its own mount namespace and a system call filter
 * (walls.c).
 */
#ifndef VC_CLI_WALLS_H
#define VC_CLI_WALLS_H

#include <stddef.h>

#include "vc_config.h"

typedef struct walls_ctx {
    const vc_config_t *cfg;
    int pool; /* 0: the default, then cfg->pools in order */
    const char *data_dir, *conf_dir, *bin_dir;
} walls_ctx_t;

/* In the pool's process, before it changes user and runs vc-php: the
 * walls its configuration asks for ("auto": the namespace where one can
 * be made). *mounted: 1 when it is in a mount namespace of its own. 0,
 * or -1 with the reason in err. */
int walls_raise(const walls_ctx_t *w, int *mounted, char *err, size_t errlen);
/* The wall the pool would get from w->cfg, as text: what stays writable,
 * what is hidden, what is covered, and the switches. A reload compares
 * the running configuration's with the new one's, and replaces the pools
 * whose walls changed (a site added, removed or moved). Owned by the
 * caller. */
char *walls_plan_text(const walls_ctx_t *w);
/* At start: the walls asked for can be raised here (a user namespace for
 * an unprivileged start); logs the pools that go without the namespace
 * "auto" would give. 0, or -1 with the reason. */
int walls_check(const vc_config_t *cfg, char *err, size_t errlen);
/* A mount namespace can be made here (tried once, in a child). */
int walls_namespace_possible(void);

#endif
