#include "vc_store.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <protobuf-c/protobuf-c.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct vc_store {
    MDB_env *env;
    char *dir;
};

int vc_store_err(int rc)
{
    if (rc == 0)
        return 0;
    if (rc == MDB_NOTFOUND)
        return -VC_ERR_NOTFOUND;
    if (rc == MDB_MAP_FULL)
        return -ENOSPC; /* vc_store_write grows the map on this one */
    if (rc > 0 && rc < 1000)
        return -rc; /* an errno value */
    return -VC_ERR_STORE;
}

void vc_store_u64_key(uint64_t v, unsigned char out[8])
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)(v & 0xff);
}

uint64_t vc_store_u64_from_key(const void *key)
{
    const unsigned char *k = key;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | k[i];
    return v;
}

static int check_schema(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
    char *err = ((char **)ctx)[0];
    size_t errlen = (size_t)((char **)ctx)[1];
    MDB_val k = {6, "schema"}, v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND) {
        unsigned char buf[8];
        vc_store_u64_key(VC_STORE_SCHEMA, buf);
        MDB_val nv = {8, buf};
        return vc_store_err(mdb_put(txn, dbi, &k, &nv, 0));
    }
    if (rc != 0)
        return vc_store_err(rc);
    if (v.mv_size != 8 || vc_store_u64_from_key(v.mv_data) != VC_STORE_SCHEMA) {
        snprintf(err, errlen, "state store has schema %llu, this build reads %d",
                 v.mv_size == 8 ? (unsigned long long)vc_store_u64_from_key(v.mv_data) : 0ULL, VC_STORE_SCHEMA);
        return -VC_ERR_STORE;
    }
    return 0;
}

/* docs/running.md, "Damaged state". */
#define WAY_OUT                                                                                                        \
    ": stop the suite and move the state directory away (mv DATA/state DATA/state.damaged); the next start makes a "   \
    "new "                                                                                                             \
    "store from the configuration files. What it held is lost: the stored configuration versions and the event "       \
    "journal"

vc_store_t *vc_store_open(const char *dir, size_t map_size, char *err, size_t errlen)
{
    int r = vc_mkdirs(dir, 0700);
    if (r < 0) {
        snprintf(err, errlen, "mkdir() failed while opening the state store \"%s\": %s", dir, vc_strerror(r));
        return NULL;
    }
    /* An empty data file is read by LMDB as a new store, silently: the
     * configuration versions and the journal would be gone without a word.
     * A store being made is empty too, from its creation until its first
     * pages are written in mdb_env_open(): the daemons of a suite open it
     * at once, so the look and the open are made under a lock of the
     * directory, and a second opener finds the store whole. */
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (dirfd >= 0 && flock(dirfd, LOCK_EX) < 0 && errno == EINTR)
        ;
    char *data = vc_asprintf("%s/data.mdb", dir);
    struct stat fst;
    int empty = stat(data, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_size == 0;
    free(data);
    if (empty) {
        snprintf(err, errlen, "the state store \"%s/data.mdb\" is empty (damaged)%s", dir, WAY_OUT);
        if (dirfd >= 0)
            close(dirfd);
        return NULL;
    }
    vc_store_t *st = vc_calloc(1, sizeof(*st));
    st->dir = vc_strdup(dir);
    int rc = mdb_env_create(&st->env);
    if (rc == 0)
        rc = mdb_env_set_maxdbs(st->env, 32);
    if (rc == 0)
        rc = mdb_env_set_maxreaders(st->env, 1022);
    if (rc == 0)
        rc = mdb_env_set_mapsize(st->env, map_size);
    /* NOTLS: a read transaction is not tied to a thread, so a ZeroMQ or PHP
     * thread switch cannot strand a reader slot. */
    if (rc == 0)
        rc = mdb_env_open(st->env, dir, MDB_NOTLS, 0600);
    if (dirfd >= 0)
        close(dirfd); /* and its lock */
    if (rc != 0) {
        snprintf(err, errlen, "mdb_env_open() failed while opening the state store \"%s\": %s%s", dir, mdb_strerror(rc),
                 rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH || rc == MDB_CORRUPTED ? WAY_OUT : "");
        vc_store_destroy(&st);
        return NULL;
    }
    /* A data file shorter than the pages its meta page counts (cut by a
     * full disk or a copy): LMDB maps it and the first read past its end
     * is SIGBUS, with nothing logged. */
    MDB_envinfo info;
    MDB_stat est;
    mdb_filehandle_t dfd;
    if (mdb_env_info(st->env, &info) == 0 && mdb_env_stat(st->env, &est) == 0 && mdb_env_get_fd(st->env, &dfd) == 0 &&
        fstat(dfd, &fst) == 0 && (uint64_t)fst.st_size < ((uint64_t)info.me_last_pgno + 1) * est.ms_psize) {
        snprintf(err, errlen, "the state store \"%s/data.mdb\" is cut short (%lld bytes, its pages need %llu)%s", dir,
                 (long long)fst.st_size, ((unsigned long long)info.me_last_pgno + 1) * est.ms_psize, WAY_OUT);
        vc_store_destroy(&st);
        return NULL;
    }
    /* LMDB sets close-on-exec on every descriptor but the data file's:
     * without this, every process the holder starts (each daemon, PHP
     * and its workers) inherited data.mdb open read-write. */
    mdb_filehandle_t fd;
    if (mdb_env_get_fd(st->env, &fd) == 0)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    /* A process killed inside a read transaction leaves its reader slot
     * behind; clearing it here keeps old pages from being pinned forever. */
    int dead = 0;
    mdb_reader_check(st->env, &dead);
    if (dead > 0)
        vc_log(VC_LOG_NOTICE, "store", "cleared %d stale reader slots in \"%s\"", dead, dir);
    void *ctx[2] = {err, (void *)errlen};
    if (vc_store_write(st, VC_DB_META, check_schema, ctx) < 0) {
        if (err[0] == '\0')
            snprintf(err, errlen, "cannot write the schema version into \"%s\"", dir);
        vc_store_destroy(&st);
        return NULL;
    }
    return st;
}

void vc_store_destroy(vc_store_t **pst)
{
    vc_store_t *st = *pst;
    if (st == NULL)
        return;
    if (st->env)
        mdb_env_close(st->env);
    free(st->dir);
    free(st);
    *pst = NULL;
}

MDB_env *vc_store_env(vc_store_t *st)
{
    return st->env;
}

/* Another process grew the map: adopt its size (0 means "read it from the
 * file"). Only safe with no transaction open in this process, which holds
 * because every transaction here is scoped to one call. */
static int adopt_map_size(vc_store_t *st)
{
    return mdb_env_set_mapsize(st->env, 0);
}

static int begin(vc_store_t *st, unsigned flags, MDB_txn **txn)
{
    /* Another process may grow the map again between our adopting its
     * size and beginning (a writer filling it fast): adopt until it holds. */
    int rc = mdb_txn_begin(st->env, NULL, flags, txn);
    for (int i = 0; i < 16 && rc == MDB_MAP_RESIZED; i++) {
        adopt_map_size(st);
        rc = mdb_txn_begin(st->env, NULL, flags, txn);
    }
    return rc;
}

int vc_store_write(vc_store_t *st, const char *db, vc_store_write_fn fn, void *ctx)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        MDB_txn *txn;
        MDB_dbi dbi;
        int rc = begin(st, 0, &txn);
        if (rc != 0)
            return vc_store_err(rc);
        rc = mdb_dbi_open(txn, db, MDB_CREATE, &dbi);
        if (rc != 0) {
            mdb_txn_abort(txn);
            return vc_store_err(rc);
        }
        int r = fn(txn, dbi, ctx);
        if (r == -ENOSPC) {
            mdb_txn_abort(txn);
            rc = MDB_MAP_FULL;
        } else if (r < 0) {
            mdb_txn_abort(txn);
            return r;
        } else {
            rc = mdb_txn_commit(txn);
            if (rc == 0)
                return r;
        }
        if (rc != MDB_MAP_FULL)
            return vc_store_err(rc);
        MDB_envinfo info;
        mdb_env_info(st->env, &info);
        size_t grown = info.me_mapsize * 2;
        vc_log(VC_LOG_NOTICE, "store", "map of \"%s\" is full, growing it to %zu MiB", st->dir, grown >> 20);
        rc = mdb_env_set_mapsize(st->env, grown);
        if (rc != 0)
            return vc_store_err(rc);
    }
    return -VC_ERR_STORE;
}

int vc_store_read(vc_store_t *st, const char *db, vc_store_read_fn fn, void *ctx)
{
    MDB_txn *txn;
    MDB_dbi dbi;
    int rc = begin(st, MDB_RDONLY, &txn);
    if (rc != 0)
        return vc_store_err(rc);
    rc = mdb_dbi_open(txn, db, 0, &dbi);
    if (rc != 0) {
        mdb_txn_abort(txn);
        return vc_store_err(rc);
    }
    int r = fn(txn, dbi, ctx);
    mdb_txn_abort(txn);
    return r;
}

int vc_store_put_proto(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, const ProtobufCMessage *m)
{
    if (m == NULL) {
        int rc = mdb_del(txn, dbi, k, NULL);
        return rc == MDB_NOTFOUND ? -VC_ERR_NOTFOUND : vc_store_err(rc);
    }
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = vc_malloc(len ? len : 1);
    protobuf_c_message_pack(m, buf);
    MDB_val v = {len, buf};
    int rc = vc_store_err(mdb_put(txn, dbi, k, &v, 0));
    free(buf);
    return rc;
}
