#include "vc_store.h"
#include "vc_test.h"
#include "vc_util.h"

static int put_many(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    int *round = arg;
    char val[4000];
    memset(val, 'x', sizeof(val));
    for (int i = 0; i < 100; i++) {
        unsigned char k[8];
        vc_store_u64_key((uint64_t)(*round * 100 + i), k);
        MDB_val key = {8, k}, v = {sizeof(val), val};
        int rc = mdb_put(txn, dbi, &key, &v, 0);
        if (rc)
            return vc_store_err(rc);
    }
    return 0;
}

static int count(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    MDB_stat st;
    mdb_stat(txn, dbi, &st);
    *(size_t *)arg = st.ms_entries;
    return 0;
}

static int fail_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    MDB_val k = {3, "abc"}, v = {3, "def"};
    mdb_put(txn, dbi, &k, &v, 0);
    return -VC_ERR_CONFIG; /* the write must not be committed */
}

int main(void)
{
    char *dir = vc_test_tmpdir();
    char err[256] = "";
    unsigned char k[8];
    vc_store_u64_key(0x0102030405060708ULL, k);
    CHECK(k[0] == 1 && k[7] == 8);
    CHECK(vc_store_u64_from_key(k) == 0x0102030405060708ULL);

    /* A 1 MiB map fills after ~250 values of 4 KB: it must grow. */
    vc_store_t *st = vc_store_open(dir, 1 << 20, err, sizeof(err));
    CHECK(st != NULL);
    for (int round = 0; round < 10; round++)
        CHECK(vc_store_write(st, "test", put_many, &round) == 0);
    size_t n = 0;
    CHECK(vc_store_read(st, "test", count, &n) == 0);
    CHECK(n == 1000);
    MDB_envinfo info;
    mdb_env_info(vc_store_env(st), &info);
    CHECK(info.me_mapsize > (1 << 20));

    /* A failing write leaves nothing behind. */
    CHECK(vc_store_write(st, "other", fail_fn, NULL) == -VC_ERR_CONFIG);
    CHECK(vc_store_read(st, "other", count, &n) == -VC_ERR_NOTFOUND);
    /* Reading a database nobody wrote: not found, not created. */
    CHECK(vc_store_read(st, "never", count, &n) == -VC_ERR_NOTFOUND);

    /* A second handle (another process would do the same) sees it all,
     * even opened with a smaller map than the file has grown to. */
    vc_store_t *st2 = vc_store_open(dir, 1 << 20, err, sizeof(err));
    CHECK(st2 != NULL);
    n = 0;
    CHECK(vc_store_read(st2, "test", count, &n) == 0 && n == 1000);
    vc_store_destroy(&st2);
    vc_store_destroy(&st);
    CHECK(st == NULL);

    /* A store from a newer schema is refused with a reason. */
    {
        st = vc_store_open(dir, 1 << 20, err, sizeof(err));
        MDB_txn *txn;
        MDB_dbi dbi;
        mdb_txn_begin(vc_store_env(st), NULL, 0, &txn);
        mdb_dbi_open(txn, VC_DB_META, 0, &dbi);
        unsigned char nine[8];
        vc_store_u64_key(99, nine);
        MDB_val key = {6, "schema"}, v = {8, nine};
        mdb_put(txn, dbi, &key, &v, 0);
        mdb_txn_commit(txn);
        vc_store_destroy(&st);
        CHECK(vc_store_open(dir, 1 << 20, err, sizeof(err)) == NULL);
        CHECK_CONTAINS(err, "schema 99");
    }
    /* A directory that cannot be made: an error, not a crash. */
    CHECK(vc_store_open("/proc/no/such/dir", 1 << 20, err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "failed while opening the state store");
    vc_test_rmtree(dir);
    free(dir);
    return vc_test_result("vc_store");
}
