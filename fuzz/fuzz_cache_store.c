/* vc-cache's store past the parser (daemons/vc-cache/store.c): any
 * sequence of offers from fronts (any key, status, headers, tags, body,
 * times, invalidations, hits reported for recency) and purges of every
 * kind, into a real LMDB store
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
        switch (kind % 7) {
        case 0:
        case 1: {
            Vc__CacheStore *o = vc__cache_store__unpack(NULL, len, rec);
            if (o) {
                /* As vc-cache takes them: hits to move, or an offer. */
                if (o->n_touch)
                    cache_store_touch(cs, o->touch, o->n_touch);
                else
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
        case 5: cache_store_maintain(cs); break;
        default: cache_store_purge(cs, PURGE_ALL, NULL, kind & 0x80); break;
        }
    }
    char err[256];
    long entries = cache_store_check(cs, err, sizeof(err));
    cache_counts_t n;
    cache_store_counts(cs, &n);
    if (entries < 0 || n.entries != (uint64_t)entries ||
        n.bytes > (uint64_t)cfg.max_size + (uint64_t)cfg.max_object * 2)
        abort();
    return 0;
}
