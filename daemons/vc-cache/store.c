#include "store_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

/* Eviction goes below the limit by this share, so a full cache is not
 * evicted one entry per offer. */
#define EVICT_TO_PERCENT 90

int open_dbs(MDB_txn *txn, MDB_dbi cache, dbs_t *d)
{
    d->cache = cache;
    int rc = mdb_dbi_open(txn, VC_DB_CACHE_TAGS, MDB_CREATE, &d->tags);
    if (rc == 0)
        rc = mdb_dbi_open(txn, VC_DB_CACHE_SEQ, MDB_CREATE, &d->seq);
    if (rc == 0)
        rc = mdb_dbi_open(txn, VC_DB_CACHE_META, MDB_CREATE, &d->meta);
    if (rc == 0)
        rc = mdb_dbi_open(txn, VC_DB_CACHE_SOFT, MDB_CREATE, &d->soft);
    return rc ? vc_store_err(rc) : 0;
}

uint64_t meta_get(MDB_txn *txn, const dbs_t *d, const char *name)
{
    MDB_val k = {strlen(name), (void *)name}, v;
    uint64_t n = 0;
    if (mdb_get(txn, d->meta, &k, &v) == 0 && v.mv_size == 8)
        memcpy(&n, v.mv_data, 8);
    return n;
}

int meta_put(MDB_txn *txn, const dbs_t *d, const char *name, uint64_t n)
{
    MDB_val k = {strlen(name), (void *)name}, v = {8, &n};
    return vc_store_err(mdb_put(txn, d->meta, &k, &v, 0));
}

void read_meta(MDB_txn *txn, const dbs_t *d, delta_t *x)
{
    x->entries = meta_get(txn, d, "entries");
    x->bytes = meta_get(txn, d, "bytes");
    x->seq = meta_get(txn, d, VC_CACHE_META_SEQ);
    x->epoch = meta_get(txn, d, VC_CACHE_META_EPOCH);
    x->soft_tags = meta_get(txn, d, VC_CACHE_META_SOFT_TAGS);
    x->soft_all_ms = (int64_t)meta_get(txn, d, VC_CACHE_META_SOFT_ALL);
}

/* A write transaction's start: the databases, and the counts as they are. */
int store_begin(MDB_txn *txn, MDB_dbi cache, dbs_t *d, delta_t *x)
{
    int r = open_dbs(txn, cache, d);
    memset(x, 0, sizeof(*x));
    if (r == 0)
        read_meta(txn, d, x);
    return r;
}

int write_meta(MDB_txn *txn, const dbs_t *d, const delta_t *x)
{
    int r = meta_put(txn, d, "entries", x->entries);
    if (r == 0)
        r = meta_put(txn, d, "bytes", x->bytes);
    if (r == 0)
        r = meta_put(txn, d, VC_CACHE_META_SEQ, x->seq);
    if (r == 0)
        r = meta_put(txn, d, VC_CACHE_META_EPOCH, x->epoch);
    if (r == 0)
        r = meta_put(txn, d, VC_CACHE_META_SOFT_TAGS, x->soft_tags);
    if (r == 0)
        r = meta_put(txn, d, VC_CACHE_META_SOFT_ALL, (uint64_t)x->soft_all_ms);
    return r;
}

/* tag NUL hash(key): short whatever the key's length. */
size_t tag_row(const char *tag, size_t tlen, const void *key, size_t klen, unsigned char *out)
{
    memcpy(out, tag, tlen);
    out[tlen] = '\0';
    crypto_generichash(out + tlen + 1, TAG_HASH, key, klen, NULL, 0);
    return tlen + 1 + TAG_HASH;
}

/* Removes key's entry with its tag and eviction rows. key must not point
 * into the map (it changes under the deletes). 1 if there was one, 0 if
 * not, or a negative error. */
int drop_entry(MDB_txn *txn, const dbs_t *d, const void *key, size_t klen, delta_t *x)
{
    MDB_val k = {klen, (void *)key}, v;
    int rc = mdb_get(txn, d->cache, &k, &v);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc != 0)
        return vc_store_err(rc);
    size_t size = v.mv_size;
    vc_cache_entry_t e;
    char *tags = NULL;
    if (vc_cache_entry_parse(v.mv_data, v.mv_size, &e) == 0) {
        /* The value is only valid until the first delete: its tags are
         * copied out first. */
        uint64_t seq = e.seq;
        size_t tlen = (size_t)(e.body - (const char *)e.tags);
        tags = vc_malloc(tlen + 1);
        memcpy(tags, e.tags, tlen);
        e.tags = (const unsigned char *)tags;
        unsigned char sk[8];
        vc_store_u64_key(seq, sk);
        MDB_val s = {8, sk};
        mdb_del(txn, d->seq, &s, NULL);
        size_t pos = 0;
        uint32_t i = 0;
        const char *t;
        size_t tl;
        while (vc_cache_entry_tag(&e, &pos, &i, &t, &tl))
            if (tl > 0 && tl <= VC_CACHE_TAG_MAX) {
                unsigned char row[VC_CACHE_TAG_MAX + 1 + TAG_HASH];
                MDB_val r = {tag_row(t, tl, key, klen, row), row};
                mdb_del(txn, d->tags, &r, NULL);
            }
        free(tags);
    }
    rc = mdb_del(txn, d->cache, &k, NULL);
    if (rc != 0)
        return vc_store_err(rc);
    x->bytes -= x->bytes < size + klen ? x->bytes : size + klen;
    x->entries -= x->entries > 0;
    return 1;
}

/* Keys (copied: they change under the deletes) of dbi's rows whose key
 * starts with prefix; for tags the value is the entry's key. */
void push_key(char ***out, size_t **lens, size_t *n, const void *data, size_t len)
{
    /* The arrays hold 64, then each power of two: they grow when full,
     * whoever filled them. */
    if (*n == 0 || (*n >= 64 && (*n & (*n - 1)) == 0)) {
        size_t cap = *n ? *n * 2 : 64;
        *out = vc_realloc(*out, cap * sizeof(char *));
        *lens = vc_realloc(*lens, cap * sizeof(size_t));
    }
    (*out)[*n] = vc_malloc(len + 1);
    memcpy((*out)[*n], data, len);
    (*lens)[(*n)++] = len;
}

int store_collect(MDB_txn *txn, MDB_dbi dbi, const void *prefix, size_t plen, int values, char ***out, size_t **lens,
                  size_t *n)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != 0)
        return vc_store_err(rc);
    MDB_val k = {plen, (void *)prefix}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, plen ? MDB_SET_RANGE : MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
            break;
        const MDB_val *take = values ? &v : &k;
        push_key(out, lens, n, take->mv_data, take->mv_size);
    }
    mdb_cursor_close(cur);
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : vc_store_err(rc);
}

/* key's entry's sequence number and status (0: a marker of variants):
 * 1, or 0 if there is none. */
static int entry_seq(MDB_txn *txn, const dbs_t *d, const void *key, size_t klen, uint64_t *seq, uint32_t *status)
{
    MDB_val k = {klen, (void *)key}, v;
    vc_cache_entry_t e;
    if (mdb_get(txn, d->cache, &k, &v) != 0 || vc_cache_entry_parse(v.mv_data, v.mv_size, &e) != 0)
        return 0;
    *seq = e.seq;
    *status = e.status;
    return 1;
}

/* Drops base's variants (keys base SEP ..., vc_cache.h) written at or
 * before sequence number upto (UINT64_MAX: all). */
int drop_variants(MDB_txn *txn, const dbs_t *d, const void *base, size_t blen, uint64_t upto, delta_t *x)
{
    char prefix[VC_CACHE_KEY_MAX + 1];
    if (blen >= sizeof(prefix))
        return 0;
    memcpy(prefix, base, blen);
    prefix[blen] = VC_CACHE_VARIANT_SEP;
    char **keys = NULL;
    size_t *lens = NULL, n = 0;
    int r = store_collect(txn, d->cache, prefix, blen + 1, 0, &keys, &lens, &n);
    for (size_t i = 0; i < n; i++) {
        uint64_t seq;
        uint32_t status;
        if (r >= 0 && (upto == UINT64_MAX || !entry_seq(txn, d, keys[i], lens[i], &seq, &status) || seq <= upto))
            r = drop_entry(txn, d, keys[i], lens[i], x);
        free(keys[i]);
    }
    free(keys);
    free(lens);
    return r < 0 ? r : 0;
}

static int has_header(const Vc__CacheStore *o, const char *name)
{
    for (size_t i = 0; i < o->n_headers; i++)
        if (strcasecmp(o->headers[i]->name, name) == 0)
            return 1;
    return 0;
}

/* Writes an entry with its eviction and tag rows (none there before). */
static int write_entry(MDB_txn *txn, const dbs_t *d, const void *key, size_t klen, const vc_cache_entry_in_t *in,
                       delta_t *x)
{
    size_t size = vc_cache_entry_size(in);
    MDB_val k = {klen, (void *)key}, v = {size, NULL};
    int rc = mdb_put(txn, d->cache, &k, &v, MDB_RESERVE);
    if (rc == 0)
        vc_cache_entry_write(in, v.mv_data);
    unsigned char sk[8];
    vc_store_u64_key(in->seq, sk);
    MDB_val s = {8, sk};
    if (rc == 0)
        rc = mdb_put(txn, d->seq, &s, &k, 0);
    for (size_t i = 0; i < in->ntags && rc == 0; i++) {
        unsigned char row[VC_CACHE_TAG_MAX + 1 + TAG_HASH];
        MDB_val tr = {tag_row(in->tags[i], in->tag_lens[i], key, klen, row), row};
        rc = mdb_put(txn, d->tags, &tr, &k, 0);
    }
    if (rc != 0)
        return vc_store_err(rc);
    x->bytes += size + klen;
    x->entries++;
    return 0;
}

/* The marker at base that says which headers its answers vary on: kept if
 * it says the same, else replaced (with the variants of another list, or
 * the entry that did not vary). */
static int put_marker(MDB_txn *txn, const dbs_t *d, const Vc__CacheStore *o, delta_t *x)
{
    const void *base = o->vary_base.data;
    size_t blen = o->vary_base.len, vl = strlen(o->vary);
    MDB_val k = {blen, (void *)base}, v;
    vc_cache_entry_t e;
    vc_cache_header_t h;
    size_t pos = 0;
    uint32_t i = 0;
    if (mdb_get(txn, d->cache, &k, &v) == 0 && vc_cache_entry_parse(v.mv_data, v.mv_size, &e) == 0 && e.status == 0 &&
        vc_cache_entry_header(&e, &pos, &i, &h) && h.value_len == vl && memcmp(h.value, o->vary, vl) == 0)
        return 0;
    int r = drop_entry(txn, d, base, blen, x);
    if (r >= 0)
        r = drop_variants(txn, d, base, blen, UINT64_MAX, x);
    if (r < 0)
        return r;
    vc_cache_header_t vary = {"Vary", o->vary, 4, vl};
    vc_cache_entry_in_t in = {
        .status = 0,
        .stored_ms = o->stored_ms,
        .fresh_ms = o->fresh_ms,
        .stale_ms = o->stale_ms,
        .error_ms = o->error_ms,
        .seq = ++x->seq,
        .nheaders = 1,
        .headers = &vary,
    };
    return write_entry(txn, d, base, blen, &in, x);
}

/* A variant's key is its base, the separator, and more. */
static int variant_ok(const Vc__CacheStore *o)
{
    size_t blen = o->vary_base.len, vl = strlen(o->vary);
    return blen > 0 && blen < o->key.len && memcmp(o->key.data, o->vary_base.data, blen) == 0 &&
           o->key.data[blen] == VC_CACHE_VARIANT_SEP && !memchr(o->vary_base.data, VC_CACHE_VARIANT_SEP, blen) &&
           vl > 0 && vl < VC_CACHE_VARY_LIST_MAX;
}

static int put_one(MDB_txn *txn, const dbs_t *d, const cache_settings_t *cfg, const Vc__CacheStore *o, delta_t *x)
{
    size_t klen = o->key.len;
    if (o->invalidate) {
        /* The page, and its variants if it has any, as written before
         * the front sent this (before_seq; 0: whenever): what PHP
         * answered since, offered by another front before this came, is
         * newer than the change and stays. A marker of variants stays
         * too: a variant it names that is gone is a miss. */
        uint64_t upto = o->before_seq ? o->before_seq : UINT64_MAX, seq;
        uint32_t status;
        if (klen == 0 || klen > VC_CACHE_KEY_MAX || !entry_seq(txn, d, o->key.data, klen, &seq, &status))
            return 0;
        int r = status == 0 || seq > upto ? 0 : drop_entry(txn, d, o->key.data, klen, x);
        x->invalidated += r > 0 || status == 0;
        if (r >= 0)
            r = drop_variants(txn, d, o->key.data, klen, upto, x);
        return r < 0 ? r : 0;
    }
    if (klen == 0 || klen > VC_CACHE_KEY_MAX || o->body.len > (uint64_t)cfg->max_object || o->status < 100 ||
        o->status > 599 || o->n_headers > 1000 || o->fresh_ms < o->stored_ms || o->stale_ms < o->fresh_ms ||
        o->error_ms < o->stale_ms || (o->vary_base.len && !variant_ok(o))) {
        x->refused++;
        return 0;
    }
    int r = o->vary_base.len ? put_marker(txn, d, o, x) : 0;
    if (r >= 0 && !o->vary_base.len) {
        /* The page varied before, and no more: its variants go too. */
        MDB_val k = {klen, o->key.data}, v;
        vc_cache_entry_t e;
        if (mdb_get(txn, d->cache, &k, &v) == 0 && vc_cache_entry_parse(v.mv_data, v.mv_size, &e) == 0 && e.status == 0)
            r = drop_variants(txn, d, o->key.data, klen, UINT64_MAX, x);
    }
    if (r >= 0)
        r = drop_entry(txn, d, o->key.data, klen, x);
    if (r < 0)
        return r;
    vc_cache_header_t *hs = vc_calloc(o->n_headers + 1, sizeof(*hs));
    size_t nh = 0;
    for (size_t i = 0; i < o->n_headers; i++) {
        size_t nl = strlen(o->headers[i]->name);
        if (nl == 0 || nl > 1024 || o->headers[i]->value.len > 65536)
            continue;
        hs[nh++] = (vc_cache_header_t){o->headers[i]->name, (const char *)o->headers[i]->value.data, nl,
                                       o->headers[i]->value.len};
    }
    /* An ETag on every body: a client that has it gets a 304 from the
     * front. Weak: the front may compress what it sends. */
    char etag[40];
    if (!has_header(o, "etag")) {
        unsigned char h[8];
        crypto_generichash(h, sizeof(h), o->body.data, o->body.len, NULL, 0);
        int n = snprintf(etag, sizeof(etag), "W/\"vc-");
        for (size_t i = 0; i < sizeof(h); i++)
            n += snprintf(etag + n, sizeof(etag) - (size_t)n, "%02x", h[i]);
        snprintf(etag + n, sizeof(etag) - (size_t)n, "\"");
        hs[nh++] = (vc_cache_header_t){"ETag", etag, 4, strlen(etag)};
    }
    const char *tags[VC_CACHE_TAGS_MAX];
    size_t tag_lens[VC_CACHE_TAGS_MAX], nt = 0;
    for (size_t i = 0; i < o->n_tags && nt < VC_CACHE_TAGS_MAX; i++) {
        size_t tl = strlen(o->tags[i]);
        if (tl > 0 && tl <= VC_CACHE_TAG_MAX) {
            tags[nt] = o->tags[i];
            tag_lens[nt++] = tl;
        }
    }
    vc_cache_entry_in_t in = {
        .status = o->status,
        .stored_ms = o->stored_ms,
        .fresh_ms = o->fresh_ms,
        .stale_ms = o->stale_ms,
        .error_ms = o->error_ms,
        .seq = ++x->seq,
        .nheaders = nh,
        .headers = hs,
        .ntags = nt,
        .tags = tags,
        .tag_lens = tag_lens,
        .body = o->body.data,
        .body_len = o->body.len,
    };
    r = write_entry(txn, d, o->key.data, klen, &in, x);
    free(hs);
    if (r == 0)
        x->stored++;
    return r;
}

/* The oldest entries go until the bytes are under the limit's share. */
static int evict(MDB_txn *txn, const dbs_t *d, const cache_settings_t *cfg, delta_t *x)
{
    uint64_t limit = (uint64_t)cfg->max_size, target = limit / 100 * EVICT_TO_PERCENT;
    if (x->bytes <= limit)
        return 0;
    while (x->bytes > target) {
        MDB_cursor *cur;
        int rc = mdb_cursor_open(txn, d->seq, &cur);
        if (rc != 0)
            return vc_store_err(rc);
        MDB_val sk, key;
        rc = mdb_cursor_get(cur, &sk, &key, MDB_FIRST);
        char kb[VC_CACHE_KEY_MAX];
        size_t klen = rc == 0 && key.mv_size <= sizeof(kb) ? key.mv_size : 0;
        if (klen)
            memcpy(kb, key.mv_data, klen);
        if (rc == 0 && klen == 0)
            mdb_cursor_del(cur, 0); /* a row no entry can have */
        mdb_cursor_close(cur);
        if (rc == MDB_NOTFOUND) {
            x->bytes = 0; /* nothing left to count */
            break;
        }
        if (rc != 0)
            return vc_store_err(rc);
        if (klen == 0)
            continue;
        int r = drop_entry(txn, d, kb, klen, x);
        if (r < 0)
            return r;
        if (r == 0) {
            /* A row whose entry is gone: drop the row itself. */
            unsigned char first[8];
            memcpy(first, sk.mv_data, sk.mv_size == 8 ? 8 : 0);
            MDB_val s = {8, first};
            if (sk.mv_size == 8)
                mdb_del(txn, d->seq, &s, NULL);
        }
        x->evicted += r > 0;
    }
    return 0;
}

typedef struct put_ctx {
    cache_store_t *cs;
    Vc__CacheStore *const *offers;
    size_t n;
    delta_t x;
} put_ctx_t;

static int put_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    put_ctx_t *p = arg;
    dbs_t d;
    int r = store_begin(txn, dbi, &d, &p->x);
    if (r < 0)
        return r;
    for (size_t i = 0; i < p->n && r >= 0; i++)
        r = put_one(txn, &d, p->cs->cfg, p->offers[i], &p->x);
    if (r >= 0)
        r = evict(txn, &d, p->cs->cfg, &p->x);
    if (r >= 0)
        r = write_meta(txn, &d, &p->x);
    return r;
}

void store_apply(cache_store_t *cs, const delta_t *x)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    cs->c.entries = x->entries;
    cs->c.bytes = x->bytes;
    cs->c.stored += x->stored;
    cs->c.evicted += x->evicted;
    cs->c.purged += x->purged;
    cs->c.soft_tags = x->soft_tags;
    cs->c.refused += x->refused;
    cs->c.invalidated += x->invalidated;
}

int cache_store_put(cache_store_t *cs, Vc__CacheStore *const *offers, size_t n)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    put_ctx_t p = {.cs = cs, .offers = offers, .n = n};
    int r = vc_store_write(cs->st, VC_DB_CACHE, put_txn, &p);
    if (r < 0) {
        vc_log(VC_LOG_ERR, "store", "could not store %zu answers: %s", n, vc_strerror(r));
        return r;
    }
    store_apply(cs, &p.x);
    return 0;
}

/* ---- life ---------------------------------------------------------------- */

typedef struct counts_ctx {
    delta_t x;
} counts_ctx_t;

static int read_counts(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    dbs_t d;
    int r = open_dbs(txn, dbi, &d);
    if (r == 0)
        read_meta(txn, &d, &((counts_ctx_t *)arg)->x);
    return r;
}

cache_store_t *cache_store_new(vc_store_t *st, const cache_settings_t *cfg)
{
    cache_store_t *cs = vc_calloc(1, sizeof(*cs));
    cs->magic = CACHE_STORE_MAGIC;
    cs->st = st;
    cs->cfg = cfg;
    /* The databases exist from the start (the fronts open them), with
     * the counts a previous run left. */
    counts_ctx_t c = {0};
    if (vc_store_write(st, VC_DB_CACHE, read_counts, &c) < 0) {
        free(cs);
        return NULL;
    }
    cs->c.entries = c.x.entries;
    cs->c.bytes = c.x.bytes;
    cs->c.soft_tags = c.x.soft_tags;
    return cs;
}

void cache_store_set_settings(cache_store_t *cs, const cache_settings_t *cfg)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    cs->cfg = cfg;
}

void cache_store_destroy(cache_store_t **pcs)
{
    free(*pcs);
    *pcs = NULL;
}

void cache_store_counts(cache_store_t *cs, cache_counts_t *out)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    *out = cs->c;
}

/* ---- recency ------------------------------------------------------------- */

typedef struct touch_ctx {
    cache_store_t *cs;
    const ProtobufCBinaryData *keys;
    size_t n;
    delta_t x;
} touch_ctx_t;

/* key's entry moves to the recent end of the eviction order. */
static int touch_one(MDB_txn *txn, const dbs_t *d, const void *key, size_t klen, delta_t *x)
{
    MDB_val k = {klen, (void *)key}, v;
    vc_cache_entry_t e;
    if (klen == 0 || klen > VC_CACHE_KEY_MAX || mdb_get(txn, d->cache, &k, &v) != 0 ||
        vc_cache_entry_parse(v.mv_data, v.mv_size, &e) != 0)
        return 0; /* gone since (purged, evicted): nothing to move */
    /* Copied before any write: v is valid only until the next one. */
    char *copy = vc_malloc(v.mv_size);
    memcpy(copy, v.mv_data, v.mv_size);
    unsigned char sk[8];
    vc_store_u64_key(e.seq, sk);
    MDB_val s = {8, sk};
    int rc = mdb_del(txn, d->seq, &s, NULL);
    vc_cache_entry_set_seq(copy, ++x->seq);
    MDB_val nv = {v.mv_size, copy};
    if (rc == 0 || rc == MDB_NOTFOUND)
        rc = mdb_put(txn, d->cache, &k, &nv, 0);
    free(copy);
    vc_store_u64_key(x->seq, sk);
    if (rc == 0)
        rc = mdb_put(txn, d->seq, &s, &k, 0);
    return rc ? vc_store_err(rc) : 0;
}

static int touch_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    touch_ctx_t *t = arg;
    dbs_t d;
    int r = store_begin(txn, dbi, &d, &t->x);
    for (size_t i = 0; i < t->n && r >= 0; i++)
        r = touch_one(txn, &d, t->keys[i].data, t->keys[i].len, &t->x);
    if (r >= 0)
        r = write_meta(txn, &d, &t->x);
    return r;
}

int cache_store_touch(cache_store_t *cs, const ProtobufCBinaryData *keys, size_t n)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    touch_ctx_t t = {.cs = cs, .keys = keys, .n = n};
    int r = vc_store_write(cs->st, VC_DB_CACHE, touch_txn, &t);
    if (r == 0)
        store_apply(cs, &t.x);
    return r;
}

static int lease_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    dbs_t d;
    delta_t x;
    int r = store_begin(txn, dbi, &d, &x);
    return r < 0 ? r : meta_put(txn, &d, VC_CACHE_META_LEASE, *(const uint64_t *)arg);
}

int cache_store_lease(cache_store_t *cs, uint64_t until_ms)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    return vc_store_write(cs->st, VC_DB_CACHE, lease_txn, &until_ms);
}
