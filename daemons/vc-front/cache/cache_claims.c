/*
 * Claims: collapsed forwarding across the front processes of a node
 * (front.processes > 1). Before a front sends the first miss for a page
 * to PHP it claims the page in a small LMDB environment of the fronts' own
 * (DATA/state/claims, apart from the cache's, so that a claim never waits
 * for vc-cache's write lock: a claim is a transaction of microseconds). A
 * front that finds another's claim does not ask PHP: its requests wait for
 * the entry to appear in the cache (cache_flight.c polls), or for the
 * claim to go (its answer was not storable, or its front died: then one
 * of them asks). A claim names its front's pid and lapses after
 * cache.lock_timeout, or when that pid is gone: a front killed mid-miss
 * holds nobody up for long. Claims need not survive a crash: the
 * environment is never synced.
 */
#include "cache_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <lmdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAP_SIZE (64u << 20)
#define REOPEN_MS 1000

typedef struct claim {
    int32_t pid;
    int64_t until_ms;
} claim_t;

static struct {
    MDB_env *env;
    MDB_dbi dbi;
    int broken; /* could not open: every front asks PHP itself */
    uint64_t next_try_ms;
} claims;

static int open_env(void)
{
    if (claims.env)
        return 1;
    if (claims.broken && vc_mono_ms() < claims.next_try_ms)
        return 0;
    claims.next_try_ms = vc_mono_ms() + REOPEN_MS;
    const vc_config_t *cfg = cache_front()->d.cfg;
    char *dir = vc_asprintf("%s/claims", cfg->state_dir);
    mkdir(dir, 0700);
    MDB_env *env = NULL;
    MDB_txn *txn = NULL;
    int rc = mdb_env_create(&env);
    if (rc == 0)
        rc = mdb_env_set_mapsize(env, MAP_SIZE);
    if (rc == 0)
        rc = mdb_env_open(env, dir, MDB_NOTLS | MDB_NOSYNC | MDB_NOMETASYNC, 0600);
    if (rc == 0)
        rc = mdb_txn_begin(env, NULL, 0, &txn);
    if (rc == 0)
        rc = mdb_dbi_open(txn, NULL, 0, &claims.dbi);
    if (rc == 0)
        rc = mdb_txn_commit(txn);
    else if (txn)
        mdb_txn_abort(txn);
    if (rc != 0) {
        if (!claims.broken)
            vc_log(VC_LOG_WARN, "cache",
                   "the claims in \"%s\" cannot be used (%s): each front process sends its "
                   "own first miss",
                   dir, mdb_strerror(rc));
        if (env)
            mdb_env_close(env);
        free(dir);
        claims.broken = 1;
        return 0;
    }
    free(dir);
    /* Readers of fronts that died are let go. */
    int dead;
    mdb_reader_check(env, &dead);
    claims.env = env;
    claims.broken = 0;
    return 1;
}

static int alive(int32_t pid)
{
    return pid == (int32_t)getpid() || kill(pid, 0) == 0 || errno == EPERM;
}

/* Whether v is a claim another live front holds now. */
static int held_by_other(const MDB_val *v, int64_t now)
{
    claim_t cl;
    if (v->mv_size != sizeof(cl))
        return 0;
    memcpy(&cl, v->mv_data, sizeof(cl));
    return cl.pid != (int32_t)getpid() && cl.until_ms > now && alive(cl.pid);
}

/* One front process has nobody to share a miss with. */
static int alone(void)
{
    return cache_front()->settings->processes <= 1;
}

int claim_take(const char *key, size_t klen)
{
    if (alone() || !open_env())
        return 1;
    MDB_txn *txn;
    if (mdb_txn_begin(claims.env, NULL, 0, &txn) != 0)
        return 1;
    int64_t now = cache_now_ms();
    MDB_val k = {klen, (void *)key}, v;
    int ours = 1;
    if (mdb_get(txn, claims.dbi, &k, &v) == 0 && held_by_other(&v, now)) {
        ours = 0;
    } else {
        claim_t cl = {(int32_t)getpid(), now + cache_settings()->lock_timeout_ms};
        v = (MDB_val){sizeof(cl), &cl};
        mdb_put(txn, claims.dbi, &k, &v, 0);
    }
    if (mdb_txn_commit(txn) != 0)
        return 1;
    return ours;
}

int claim_held(const char *key, size_t klen)
{
    if (alone() || !open_env())
        return 0;
    MDB_txn *txn;
    if (mdb_txn_begin(claims.env, NULL, MDB_RDONLY, &txn) != 0)
        return 0;
    MDB_val k = {klen, (void *)key}, v;
    int held = mdb_get(txn, claims.dbi, &k, &v) == 0 && held_by_other(&v, cache_now_ms());
    mdb_txn_abort(txn);
    return held;
}

void claim_release(const char *key, size_t klen)
{
    if (claims.env == NULL)
        return;
    MDB_txn *txn;
    if (mdb_txn_begin(claims.env, NULL, 0, &txn) != 0)
        return;
    MDB_val k = {klen, (void *)key}, v;
    claim_t cl;
    /* Ours only: after a lapse another front may have claimed it. */
    if (mdb_get(txn, claims.dbi, &k, &v) == 0 && v.mv_size == sizeof(cl) && (memcpy(&cl, v.mv_data, sizeof(cl)), 1) &&
        cl.pid == (int32_t)getpid())
        mdb_del(txn, claims.dbi, &k, NULL);
    mdb_txn_commit(txn);
}
