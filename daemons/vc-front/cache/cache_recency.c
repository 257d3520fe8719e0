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
} recency;

static void on_flush(h2o_timeout_entry_t *entry)
{
    Vc__CacheStore cs = VC__CACHE_STORE__INIT;
    cs.touch = recency.keys;
    cs.n_touch = recency.n;
    cache_push(recency.f, &cs);
    cache_stats.touches += recency.n;
    for (size_t i = 0; i < recency.n; i++)
        free(recency.keys[i].data);
    recency.n = 0;
    memset(recency.slots, 0, sizeof(recency.slots));
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
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    if (recency.n == TOUCH_MAX)
        return;
    uint64_t h = hash_of(key, klen) + 1;
    size_t i = h % SLOTS;
    while (recency.slots[i] != 0) {
        if (recency.slots[i] == h)
            return; /* noted already (or a collision: one report lost) */
        i = (i + 1) % SLOTS;
    }
    recency.slots[i] = h;
    recency.keys[recency.n].data = vc_malloc(klen);
    memcpy(recency.keys[recency.n].data, key, klen);
    recency.keys[recency.n++].len = klen;
    if (!h2o_timeout_is_linked(&recency.flush)) {
        recency.f = f;
        recency.ctx = req->conn->ctx;
        recency.flush.cb = on_flush;
        h2o_timeout_link(recency.ctx->loop, &recency.ctx->one_sec_timeout, &recency.flush);
    }
}
