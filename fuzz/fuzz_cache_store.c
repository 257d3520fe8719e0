/* vc-cache's store past the parser (daemons/vc-cache/store.c): any
 * sequence of offers from fronts (any key, status, headers, tags, body,
 * times, invalidations) and purges of every kind, into a real LMDB store
 * with a small cache.max_size, so eviction runs too. After each input the
 * databases must agree: the count of entries is the meta's, every
 * eviction row and tag row names an entry that exists and lists it, and
 * every entry reads back whole.
 *
 * An input is records (fuzz/records.h): a kind byte, then its bytes. */
#include "records.h"
#include "store.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static vc_store_t *st;
static cache_store_t *cs;
static cache_settings_t cfg;
static char dir[] = "/tmp/vc-fuzz-cache-XXXXXX";

/* The store's directory goes with the process. */
static void remove_dir(void)
{
    char *p = vc_asprintf("%s/data.mdb", dir);
    unlink(p);
    free(p);
    p = vc_asprintf("%s/lock.mdb", dir);
    unlink(p);
    free(p);
    rmdir(dir);
}

static void setup(void)
{
    vc_log_set_level(0);
    if (mkdtemp(dir) == NULL)
        abort();
    atexit(remove_dir);
    char err[256];
    st = vc_store_open(dir, 8u << 20, err, sizeof(err));
    if (st == NULL)
        abort();
    static char *strip[] = {"utm_*"};
    cfg.enabled = 1;
    cfg.max_size = 64 * 1024;
    cfg.max_object = 16 * 1024;
    cfg.strip_params = strip;
    cfg.nstrip_params = 1;
    cs = cache_store_new(st, &cfg);
    if (cs == NULL)
        abort();
}

typedef struct check {
    uint64_t entries;
} check_t;

static int count_rows(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    check_t *c = arg;
    MDB_dbi tags, seq, meta;
    if (mdb_dbi_open(txn, VC_DB_CACHE_TAGS, 0, &tags) || mdb_dbi_open(txn, VC_DB_CACHE_SEQ, 0, &seq) ||
        mdb_dbi_open(txn, VC_DB_CACHE_META, 0, &meta))
        abort();
    MDB_cursor *cur;
    MDB_val k, v;
    uint64_t n = 0;
    mdb_cursor_open(txn, dbi, &cur);
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        vc_cache_entry_t e;
        if (vc_cache_entry_parse(v.mv_data, v.mv_size, &e) != 0)
            abort(); /* only whole entries are written */
        unsigned char sk[8];
        vc_store_u64_key(e.seq, sk);
        MDB_val s = {8, sk}, sv;
        if (mdb_get(txn, seq, &s, &sv) != 0 || sv.mv_size != k.mv_size || memcmp(sv.mv_data, k.mv_data, k.mv_size))
            abort(); /* its eviction row names it */
        n++;
    }
    mdb_cursor_close(cur);
    /* Every eviction row and tag row names an entry that is there. */
    MDB_dbi others[2] = {seq, tags};
    for (int d = 0; d < 2; d++) {
        mdb_cursor_open(txn, others[d], &cur);
        for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            MDB_val ev;
            if (mdb_get(txn, dbi, &v, &ev) != 0)
                abort();
        }
        mdb_cursor_close(cur);
    }
    MDB_val mk = {7, "entries"}, mv;
    uint64_t meta_n = 0;
    if (mdb_get(txn, meta, &mk, &mv) == 0 && mv.mv_size == 8)
        memcpy(&meta_n, mv.mv_data, 8);
    if (meta_n != n)
        abort(); /* the count says what is there */
    c->entries = n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (st == NULL)
        setup();
    size_t at = 0;
    fuzz_record_t r;
    while (fuzz_next_record(data, size, &at, &r)) {
        uint8_t kind = r.kind;
        const uint8_t *rec = r.p;
        size_t len = r.len;
        char value[300];
        size_t vl = len < sizeof(value) - 1 ? len : sizeof(value) - 1;
        memcpy(value, rec, vl);
        value[vl] = '\0';
        switch (kind % 6) {
        case 0:
        case 1: {
            Vc__CacheStore *o = vc__cache_store__unpack(NULL, len, rec);
            if (o) {
                cache_store_put(cs, &o, 1);
                vc__cache_store__free_unpacked(o, NULL);
            }
            break;
        }
        case 2:
            if (kind & 0x40) {
                /* A site's PHP: its own hosts only. */
                static char *hosts[] = {"host", "127.0.0.1:8080"};
                cache_store_purge_hosts(cs, PURGE_TAG, value, kind & 0x80, hosts, 2);
            } else {
                cache_store_purge(cs, PURGE_TAG, value, kind & 0x80);
            }
            break;
        case 3: cache_store_purge(cs, PURGE_URL, value, kind & 0x80); break;
        case 4: cache_store_purge(cs, PURGE_PREFIX, value, kind & 0x80); break;
        default: cache_store_purge(cs, PURGE_ALL, NULL, kind & 0x80); break;
        }
    }
    check_t c = {0};
    vc_store_read(st, VC_DB_CACHE, count_rows, &c);
    cache_counts_t n;
    cache_store_counts(cs, &n);
    if (n.entries != c.entries || n.bytes > (uint64_t)cfg.max_size + (uint64_t)cfg.max_object * 2)
        abort();
    return 0;
}
