/*
 * The consistency walk (vc cache check, and the fuzz target after every
 * input): the databases must agree.
 */
#include "store_internal.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct check_ctx {
    uint64_t entries;
    char *err;
    size_t errlen;
} check_ctx_t;

static int bad(check_ctx_t *c, const char *what, const MDB_val *key)
{
    snprintf(c->err, c->errlen, "%s: %.*s", what, (int)(key->mv_size > 200 ? 200 : key->mv_size),
             (const char *)key->mv_data);
    return -EINVAL;
}

static int check_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    check_ctx_t *c = arg;
    dbs_t d;
    int r = open_dbs(txn, dbi, &d);
    if (r < 0)
        return r;
    MDB_cursor *cur;
    MDB_val k, v;
    uint64_t n = 0;
    if (mdb_cursor_open(txn, dbi, &cur) != 0)
        return -EIO;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && r == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        vc_cache_entry_t e;
        unsigned char sk[8];
        if (vc_cache_entry_parse(v.mv_data, v.mv_size, &e) != 0) {
            r = bad(c, "an entry that does not read whole", &k);
            break;
        }
        vc_store_u64_key(e.seq, sk);
        MDB_val s = {8, sk}, sv;
        if (mdb_get(txn, d.seq, &s, &sv) != 0 || sv.mv_size != k.mv_size || memcmp(sv.mv_data, k.mv_data, k.mv_size))
            r = bad(c, "an entry without its eviction row", &k);
        n++;
    }
    mdb_cursor_close(cur);
    /* Every eviction row and tag row names an entry that is there. */
    MDB_dbi others[2] = {d.seq, d.tags};
    for (int i = 0; i < 2 && r == 0; i++) {
        if (mdb_cursor_open(txn, others[i], &cur) != 0)
            return -EIO;
        for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            MDB_val ev;
            if (mdb_get(txn, dbi, &v, &ev) != 0) {
                r = bad(c, i ? "a tag row for no entry" : "an eviction row for no entry", &v);
                break;
            }
        }
        mdb_cursor_close(cur);
    }
    if (r == 0 && meta_get(txn, &d, "entries") != n) {
        snprintf(c->err, c->errlen, "%llu entries, counted as %llu", (unsigned long long)n,
                 (unsigned long long)meta_get(txn, &d, "entries"));
        r = -EINVAL;
    }
    c->entries = n;
    return r;
}

long cache_store_check(cache_store_t *cs, char *err, size_t errlen)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    check_ctx_t c = {.err = err, .errlen = errlen};
    *err = '\0';
    int r = vc_store_read(cs->st, VC_DB_CACHE, check_txn, &c);
    if (r < 0 && *err == '\0')
        snprintf(err, errlen, "%s", vc_strerror(r));
    return r < 0 ? -1 : (long)c.entries;
}
