/*
 * What the store's files share (store.c: offers, eviction, recency, life;
 * purge.c: purges and soft purges; check.c: the consistency walk). Every
 * function here runs inside a write transaction vc_store_write opened, on
 * the databases open_dbs found.
 */
#ifndef VC_CACHE_STORE_INTERNAL_H
#define VC_CACHE_STORE_INTERNAL_H

#include "store.h"

#define TAG_HASH 16 /* bytes of a key's hash in a tag row */

/* Soft purges by tag not yet applied entry by entry, the one being
 * applied, and how far (purge.c). */
typedef struct soft_progress {
    char tag[VC_CACHE_TAG_MAX + 1];                     /* "" when none is under way */
    unsigned char row[VC_CACHE_TAG_MAX + 1 + TAG_HASH]; /* the last tag row done */
    size_t row_len;
} soft_progress_t;

struct cache_store {
#define CACHE_STORE_MAGIC 0x63737472u /* "cstr": checked by every module the store is handed to */
    unsigned magic;
    vc_store_t *st;
    const cache_settings_t *cfg;
    cache_counts_t c;
    soft_progress_t soft;
};

typedef struct dbs {
    MDB_dbi cache, tags, seq, meta, soft;
} dbs_t;

/* What one write transaction changes, applied to the counts only once it
 * commits (vc_store_write may run it twice: a full map is grown first). */
typedef struct delta {
    uint64_t entries, bytes, seq, epoch, soft_tags;
    int64_t soft_all_ms;
    uint64_t stored, evicted, purged, refused, invalidated;
} delta_t;

int open_dbs(MDB_txn *txn, MDB_dbi cache, dbs_t *d);
uint64_t meta_get(MDB_txn *txn, const dbs_t *d, const char *name);
int meta_put(MDB_txn *txn, const dbs_t *d, const char *name, uint64_t n);
void read_meta(MDB_txn *txn, const dbs_t *d, delta_t *x);
/* A write transaction's start: the databases, and the counts as they are. */
int store_begin(MDB_txn *txn, MDB_dbi cache, dbs_t *d, delta_t *x);
int write_meta(MDB_txn *txn, const dbs_t *d, const delta_t *x);
/* Applies a committed transaction's delta to the counts. */
void store_apply(cache_store_t *cs, const delta_t *x);
/* tag NUL hash(key): short whatever the key's length. */
size_t tag_row(const char *tag, size_t tlen, const void *key, size_t klen, unsigned char *out);
/* Removes key's entry with its tag and eviction rows. key must not point
 * into the map. 1 if there was one, 0 if not, or a negative error. */
int drop_entry(MDB_txn *txn, const dbs_t *d, const void *key, size_t klen, delta_t *x);

/* Appends a copy of data to the arrays (which grow as they need: start
 * them NULL, NULL, 0). */
void push_key(char ***out, size_t **lens, size_t *n, const void *data, size_t len);
/* Keys (copied) of dbi's rows whose key starts with prefix; for values,
 * the rows' values (a tag row's entry key). 0, or a negative error. */
int store_collect(MDB_txn *txn, MDB_dbi dbi, const void *prefix, size_t plen, int values, char ***out, size_t **lens,
                  size_t *n);
/* Drops base's variants (keys base SEP ..., vc_cache.h) written at or
 * before sequence number upto (UINT64_MAX: all). */
int drop_variants(MDB_txn *txn, const dbs_t *d, const void *base, size_t blen, uint64_t upto, delta_t *x);

#endif
