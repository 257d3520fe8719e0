/*
 * The cache in LMDB, as its only writer keeps it (libcommon/vc_cache.h
 * has the layout): offers stored in batches, one transaction each; the
 * least recently used entries evicted past cache.max_size (the fronts
 * report hits); purges by URL, prefix, tag
 * or everything, hard (gone) or soft (stale: the next request refreshes
 * it). A transaction is all or nothing: a crash at any point leaves the
 * entries as they were before it or after it.
 */
#ifndef VC_CACHE_STORE_H
#define VC_CACHE_STORE_H

#include "cache.pb-c.h"
#include "vc_cache.h"
#include "vc_store.h"

typedef struct cache_store cache_store_t;

typedef struct cache_counts {
    uint64_t entries, bytes;          /* now */
    uint64_t stored, evicted, purged; /* since start */
    uint64_t refused;                 /* offers that were not storable */
    uint64_t invalidated;             /* entries dropped for an unsafe method */
    uint64_t soft_tags;               /* soft purges by tag not yet applied entry by entry */
} cache_counts_t;

typedef enum { PURGE_URL, PURGE_PREFIX, PURGE_TAG, PURGE_ALL } purge_kind_t;

/* cfg is borrowed and must outlive the store (it may be replaced with
 * cache_store_set_settings). */
cache_store_t *cache_store_new(vc_store_t *st, const cache_settings_t *cfg);
void cache_store_destroy(cache_store_t **pcs);
void cache_store_set_settings(cache_store_t *cs, const cache_settings_t *cfg);

/* Stores the offers in one transaction, then evicts down to max_size. 0,
 * or a negative error (nothing of the batch is stored). */
int cache_store_put(cache_store_t *cs, Vc__CacheStore *const *offers, size_t n);

/* Purges entries: PURGE_URL by the URL's key (both schemes), PURGE_PREFIX
 * every key that starts with the URL (both schemes), PURGE_TAG by tag,
 * PURGE_ALL everything (value ignored). soft: kept, but stale. Returns the
 * entries purged, or a negative error. */
long cache_store_purge(cache_store_t *cs, purge_kind_t kind, const char *value, int soft);
/* The same, of the entries whose key's host is one of hosts[0..n) only (a
 * host without a port matches the key's host with any port). */
long cache_store_purge_hosts(cache_store_t *cs, purge_kind_t kind, const char *value, int soft, char *const *hosts,
                             size_t nhosts);

/* The cache's lease (VC_CACHE_META_LEASE): its fronts answer from it
 * until vc_boot_ms() reaches until_ms; 0 holds it. */
int cache_store_lease(cache_store_t *cs, uint64_t until_ms);

/* A slice of the background work: soft purges by tag applied to their
 * entries (purge.c). Called about once a second. 0, or a negative error. */
int cache_store_maintain(cache_store_t *cs);

/* The entries of keys were hit lately: they move to the recent end of the
 * eviction order (least recently used first out). 0, or a negative error. */
int cache_store_touch(cache_store_t *cs, const ProtobufCBinaryData *keys, size_t n);

void cache_store_counts(cache_store_t *cs, cache_counts_t *out);

/* What is stored for url (both schemes; its variants too), a record an
 * entry, into reply (show.c). 0, or a negative error (-EINVAL: not a URL). */
struct Vc__Reply;
int cache_store_show(cache_store_t *cs, const char *url, struct Vc__Reply *reply);

/* Whether the databases agree: every entry reads whole and has its
 * eviction row, every eviction and tag row names an entry, the count is
 * what is there. The entries, or -1 with what is wrong in err. */
long cache_store_check(cache_store_t *cs, char *err, size_t errlen);

#endif
