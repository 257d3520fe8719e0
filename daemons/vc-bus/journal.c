#include "journal.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

struct journal {
    vc_store_t *st;
    uint64_t max;
    uint32_t seq;
    uint64_t count;    /* entries in the database after the last append */
    uint64_t appended; /* since start */
};

struct append_ctx {
    journal_t *j;
    uint64_t time_us;
    const void *env;
    size_t len;
};

static int append_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    struct append_ctx *c = arg;
    unsigned char key[12];
    vc_store_u64_key(c->time_us, key);
    uint32_t seq = c->j->seq;
    key[8] = (unsigned char)(seq >> 24);
    key[9] = (unsigned char)(seq >> 16);
    key[10] = (unsigned char)(seq >> 8);
    key[11] = (unsigned char)seq;
    MDB_val k = {sizeof(key), key}, v = {c->len, (void *)c->env};
    int rc = mdb_put(txn, dbi, &k, &v, 0);
    if (rc)
        return vc_store_err(rc);
    MDB_stat stat;
    mdb_stat(txn, dbi, &stat);
    uint64_t n = stat.ms_entries;
    if (n > c->j->max) {
        MDB_cursor *cur;
        if ((rc = mdb_cursor_open(txn, dbi, &cur)) != 0)
            return vc_store_err(rc);
        while (n > c->j->max && mdb_cursor_get(cur, &k, &v, MDB_FIRST) == 0 && mdb_cursor_del(cur, 0) == 0)
            n--;
        mdb_cursor_close(cur);
    }
    c->j->count = n;
    return 0;
}

journal_t *journal_new(vc_store_t *st, uint64_t max)
{
    journal_t *j = vc_calloc(1, sizeof(*j));
    j->st = st;
    j->max = max ? max : 1;
    return j;
}

void journal_destroy(journal_t **pj)
{
    free(*pj);
    *pj = NULL;
}

int journal_append(journal_t *j, uint64_t time_us, const void *env, size_t len)
{
    struct append_ctx c = {j, time_us, env, len};
    j->seq++;
    int r = vc_store_write(j->st, VC_DB_EVENTS, append_fn, &c);
    if (r == 0)
        j->appended++;
    return r;
}

uint64_t journal_count(journal_t *j)
{
    return j->count;
}

uint64_t journal_appended(journal_t *j)
{
    return j->appended;
}
