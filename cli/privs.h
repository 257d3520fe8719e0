/*
 * privs: who each process of the suite runs as (docs/SECURITY.md).
 *
 * Started as root, `vc up` binds the ports, opens the store and prepares
 * the data directory, then starts every daemon as the suite's user
 * (`user`, default "vc") and the PHP pool as its own (`php.user`, default
 * "www-data"), with no capabilities: the change of uid clears them, and
 * the bounding set is emptied first so no set-user-ID program a script
 * runs can regain one. Started as anyone else, everything runs as that
 * user, as before; so it does with `allow_root = true`.
 */
#ifndef VC_CLI_PRIVS_H
#define VC_CLI_PRIVS_H

#include <sys/types.h>

#include "config.pb-c.h"
#include "vc_config.h"

typedef struct privs_pool {
    char name[40]; /* "default", or its name under pools */
    char user[64];
    uid_t uid;
    gid_t gid;
} privs_pool_t;

typedef struct privs {
    int drop;  /* root, and users to become */
    uid_t uid; /* the suite's user */
    gid_t gid;
    char user[64];
    privs_pool_t *pools; /* [0]: the default pool, then cfg->pools in order */
    size_t npools;
} privs_t;

/* Looks the users up. Returns 0, or -1 with the reason in err (a missing
 * user, or root where root is not allowed). Logs what it cannot do when
 * not started as root. */
int privs_resolve(privs_t *pv, const vc_config_t *cfg, char *err, size_t errlen);

void privs_fini(privs_t *pv);

/* Gives the data directory to the users who need each part: state, keys
 * and logs to the suite's user only (0700), each pool's socket directory
 * to that pool (group: the suite's, so fronts can connect), and its
 * sessions and temporary files to it alone. Refuses a data directory
 * the users cannot reach, and TLS keys the suite's user cannot read. Returns 0 or -1 with err. Unprivileged, it
 * only makes the pools' directories. */
int privs_prepare(const privs_t *pv, const vc_config_t *cfg, const char *data_dir, char *err, size_t errlen);

/* A deployed site's directory and its shared paths, made where missing
 * (docs/deploys.md); at start and on each reload. */
void privs_prepare_deploys(const privs_t *pv, const vc_config_t *cfg);

/* Writes the configuration version for each pool, which may not open
 * LMDB (vc_config_pool_file): readable by it, writable only by us, and
 * without the secrets (vc_config_for_pool): its scripts can read it. */
int privs_write_pool_config(const privs_t *pv, const vc_config_t *cfg, const char *data_dir, const Vc__ConfigVersion *v,
                            char *err, size_t errlen);

/* Started as root: refuses a directory (and each above it) owned by
 * another user than root or the suite's, or writable by others (a sticky
 * one like /tmp excepted), as sshd's StrictModes: whoever can write there
 * can plant a symlink the suite would follow as root. what: "data
 * directory". Returns 0 or -1 with err. */
int privs_check_tree(const privs_t *pv, const char *path, const char *what, char *err, size_t errlen);

/* The same, before `vc up --userns` goes into its namespace (where the
 * owners outside cannot be told apart): owned by root or by the user who
 * starts the suite, who is root inside. */
int privs_check_tree_outside(const char *path, const char *what, char *err, size_t errlen);

/* Hands a file the supervisor made (the TLS ticket keys) to the suite's user. */
void privs_give(const privs_t *pv, const char *path);

/* Started as root, the pool's user is its own: neither the suite's nor
 * another pool's. */
int privs_pool_user_is_own(const privs_t *pv, int pool);

/* In a child about to exec a daemon: becomes the suite's user (pool -1),
 * or that pool's (an index into pools). Exits with 126 and a message if
 * that fails. */
void privs_become(const privs_t *pv, int pool);

#endif
