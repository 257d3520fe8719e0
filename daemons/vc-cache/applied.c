/* The purges from other nodes applied here (applied.h). */
#include "applied.h"
#include "vc_cache.h"
#include "vc_util.h"

#include <errno.h>
#include <string.h>

/* ORIGIN "\0" ID: both names are short (a node's name, a purge's id). */
static int key_of(const char *origin, const char *id, char *buf, size_t cap, MDB_val *k)
{
    size_t o = strlen(origin), i = strlen(id);
    if (o + 1 + i > cap || o + 1 + i > 511)
        return -ENAMETOOLONG;
    memcpy(buf, origin, o + 1);
    memcpy(buf + o + 1, id, i);
    k->mv_data = buf;
    k->mv_size = o + 1 + i;
    return 0;
}

typedef struct lookup {
    MDB_val k;
    int64_t at_ms;
    long n;
} lookup_t;

static int seen_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    lookup_t *l = arg;
    MDB_val v;
    int rc = mdb_get(txn, dbi, &l->k, &v);
    return rc == 0 ? 1 : rc == MDB_NOTFOUND ? 0 : vc_store_err(rc);
}

int applied_seen(vc_store_t *st, const char *origin, const char *id)
{
    char buf[512];
    lookup_t l = {0};
    int r = key_of(origin, id, buf, sizeof(buf), &l.k);
    if (r < 0)
        return r;
    r = vc_store_read(st, VC_DB_CACHE_APPLIED, seen_txn, &l);
    return r == -VC_ERR_NOTFOUND ? 0 : r; /* no such database yet: nothing applied */
}

static int note_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    lookup_t *l = arg;
    uint64_t at = (uint64_t)l->at_ms;
    MDB_val v = {sizeof(at), &at};
    return vc_store_err(mdb_put(txn, dbi, &l->k, &v, 0));
}

int applied_note(vc_store_t *st, const char *origin, const char *id, int64_t now_ms)
{
    char buf[512];
    lookup_t l = {.at_ms = now_ms};
    int r = key_of(origin, id, buf, sizeof(buf), &l.k);
    return r < 0 ? r : vc_store_write(st, VC_DB_CACHE_APPLIED, note_txn, &l);
}

static int forget_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    lookup_t *l = arg;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != 0)
        return vc_store_err(rc);
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        uint64_t at = 0;
        if (v.mv_size == sizeof(at))
            memcpy(&at, v.mv_data, sizeof(at));
        if ((int64_t)at < l->at_ms && mdb_cursor_del(cur, 0) == 0)
            l->n++;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : vc_store_err(rc);
}

long applied_forget(vc_store_t *st, int64_t before_ms)
{
    lookup_t l = {.at_ms = before_ms};
    int r = vc_store_write(st, VC_DB_CACHE_APPLIED, forget_txn, &l);
    return r < 0 ? r : l.n;
}
