/*
 * Recency for eviction: vc-cache evicts the entries with the lowest
 * sequence first, and an entry gets a new one when a front reports it was
 * hit. Reporting every hit would be a write a hit; a front reports only
 * hits on entries in the older half of the eviction order (an entry moved
 * lately is not moved again until half the cache has been stored or moved
 * after it: Varnish's lru_interval, by position instead of time), each key
 * once, in one message a second (at most TOUCH_MAX keys: more are left for
 * the next hits to report).
 */
#include "cache_internal.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

#include "cache.pb-c.h"

#define TOUCH_MAX 1024
#define SLOTS (2 * TOUCH_MAX) /* a set of hashes, open addressing */

static struct {
    front_t *f;
    h2o_context_t *ctx;
    ProtobufCBinaryData keys[TOUCH_MAX];
    size_t n;
    uint64_t slots[SLOTS]; /* hash + 1 of each key noted; 0: free */
    h2o_timeout_entry_t flush;
} t;

static void on_flush(h2o_timeout_entry_t *entry)
{
    Vc__CacheStore cs = VC__CACHE_STORE__INIT;
    cs.touch = t.keys;
    cs.n_touch = t.n;
    cache_push(t.f, &cs);
    cache_stats.touches += t.n;
    for (size_t i = 0; i < t.n; i++)
        free(t.keys[i].data);
    t.n = 0;
    memset(t.slots, 0, sizeof(t.slots));
}

static uint64_t hash_of(const char *key, size_t klen)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < klen; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
    return h + (h == UINT64_MAX); /* never 0 once 1 is added */
}

void cache_recency_note(front_t *f, h2o_req_t *req, const char *key, size_t klen)
{
    if (t.n == TOUCH_MAX)
        return;
    uint64_t h = hash_of(key, klen) + 1;
    size_t i = h % SLOTS;
    while (t.slots[i] != 0) {
        if (t.slots[i] == h)
            return; /* noted already (or a collision: one report lost) */
        i = (i + 1) % SLOTS;
    }
    t.slots[i] = h;
    t.keys[t.n].data = vc_malloc(klen);
    memcpy(t.keys[t.n].data, key, klen);
    t.keys[t.n++].len = klen;
    if (!h2o_timeout_is_linked(&t.flush)) {
        t.f = f;
        t.ctx = req->conn->ctx;
        t.flush.cb = on_flush;
        h2o_timeout_link(t.ctx->loop, &t.ctx->one_sec_timeout, &t.flush);
    }
}
