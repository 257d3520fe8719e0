/*
 * Purges (store.h): by URL, prefix or tag, or everything; hard (the
 * entries go) or soft (they stay, stale: served while refreshed).
 *
 * A soft purge of a tag or of everything is one row, whatever the count:
 * cache_soft[tag], or cache_meta's "soft_all", says when it was made, and
 * a reader takes an entry stored before it as stale (vc_cache.h). So a
 * soft purge of 100,000 entries commits in milliseconds. Each tag's mark
 * is then applied entry by entry in the background (cache_store_maintain,
 * a slice a second) and dropped once done.
 */
#include "store_internal.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entries a slice of the background application softens at most. */
#define SOFT_SLICE 2000

typedef struct purge_ctx {
    cache_store_t *cs;
    purge_kind_t kind;
    const char *value;
    int soft;
    char *const *hosts; /* none: every host */
    size_t nhosts;
    delta_t x;
} purge_ctx_t;

/* Whether key ("scheme://host/...") is on one of p's hosts. */
static int on_hosts(const purge_ctx_t *p, const char *key, size_t klen)
{
    if (p->nhosts == 0)
        return 1;
    const char *h = memmem(key, klen, "://", 3);
    if (h == NULL)
        return 0;
    h += 3;
    const char *end = memchr(h, '/', klen - (size_t)(h - key));
    size_t hl = end ? (size_t)(end - h) : klen - (size_t)(h - key);
    const char *colon = hl && h[0] != '[' ? memchr(h, ':', hl) : NULL;
    size_t name = colon ? (size_t)(colon - h) : hl;
    for (size_t i = 0; i < p->nhosts; i++) {
        size_t l = strlen(p->hosts[i]);
        if ((l == hl && memcmp(h, p->hosts[i], l) == 0) || (l == name && memcmp(h, p->hosts[i], l) == 0))
            return 1;
    }
    return 0;
}

/* The entry stays, but is no longer fresh: the next request refreshes it.
 * Only if it was stored at or before before_ms (an entry stored since a
 * soft purge is not its). */
static int soften(MDB_txn *txn, const dbs_t *d, const void *key, size_t klen, int64_t before_ms)
{
    MDB_val k = {klen, (void *)key}, v;
    int rc = mdb_get(txn, d->cache, &k, &v);
    if (rc == MDB_NOTFOUND)
        return 0;
    vc_cache_entry_t e;
    if (rc != 0 || vc_cache_entry_parse(v.mv_data, v.mv_size, &e) != 0)
        return rc ? vc_store_err(rc) : 0;
    if (e.stored_ms > before_ms)
        return 0;
    if (e.fresh_ms == 0)
        return 1; /* already */
    char *copy = vc_malloc(v.mv_size);
    memcpy(copy, v.mv_data, v.mv_size);
    vc_cache_entry_set_fresh(copy, 0);
    MDB_val nv = {v.mv_size, copy};
    rc = mdb_put(txn, d->cache, &k, &nv, 0);
    free(copy);
    return rc ? vc_store_err(rc) : 1;
}

static int purge_key(MDB_txn *txn, const dbs_t *d, purge_ctx_t *p, const void *key, size_t klen)
{
    if (!on_hosts(p, key, klen))
        return 0;
    int r = p->soft ? soften(txn, d, key, klen, INT64_MAX) : drop_entry(txn, d, key, klen, &p->x);
    if (r > 0)
        p->x.purged++;
    return r;
}

typedef struct key_ref {
    const char *key;
    size_t len;
} key_ref_t;

/* LMDB's default order of keys: bytes, then the shorter first. */
static int key_order(const void *a, const void *b)
{
    const key_ref_t *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* "scheme://host/rest" split; 0, or -1 if it is not such a URL. */
static int split_url(const char *url, const char **host, size_t *hlen, const char **path, size_t *plen,
                     const char **query, size_t *qlen)
{
    const char *p = strstr(url, "://");
    if (p == NULL)
        return -1;
    *host = p + 3;
    const char *slash = strchr(*host, '/');
    *hlen = slash ? (size_t)(slash - *host) : strlen(*host);
    *path = slash ? slash : "/";
    const char *q = slash ? strchr(slash, '?') : NULL;
    *plen = q ? (size_t)(q - *path) : strlen(*path);
    *query = q ? q + 1 : "";
    *qlen = q ? strlen(q + 1) : 0;
    return *hlen ? 0 : -1;
}

/* Rows of dbi whose key starts with prefix. */
static uint64_t count_prefix(MDB_txn *txn, MDB_dbi dbi, const void *prefix, size_t plen)
{
    MDB_cursor *cur;
    uint64_t n = 0;
    if (mdb_cursor_open(txn, dbi, &cur) != 0)
        return 0;
    MDB_val k = {plen, (void *)prefix}, v;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
            break;
        n++;
    }
    mdb_cursor_close(cur);
    return n;
}

/* A soft purge of a tag, or of everything, as one mark. */
static int mark_soft(MDB_txn *txn, const dbs_t *d, purge_ctx_t *p)
{
    int64_t now = vc_wall_ms();
    if (p->kind == PURGE_ALL) {
        p->x.soft_all_ms = now;
        p->x.purged = p->x.entries;
        return 0;
    }
    size_t tl = strlen(p->value);
    if (tl == 0 || tl > VC_CACHE_TAG_MAX)
        return 0;
    char row[VC_CACHE_TAG_MAX + 1];
    memcpy(row, p->value, tl);
    row[tl] = '\0';
    p->x.purged = count_prefix(txn, d->tags, row, tl + 1);
    MDB_val k = {tl, row}, v = {sizeof(now), &now}, old;
    if (mdb_get(txn, d->soft, &k, &old) == MDB_NOTFOUND)
        p->x.soft_tags++;
    return vc_store_err(mdb_put(txn, d->soft, &k, &v, 0));
}

static int purge_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    purge_ctx_t *p = arg;
    const cache_settings_t *cfg = p->cs->cfg;
    dbs_t d;
    int r = store_begin(txn, dbi, &d, &p->x);
    if (r < 0)
        return r;
    char **keys = NULL;
    size_t *lens = NULL, n = 0;
    if (p->soft && p->nhosts == 0 && (p->kind == PURGE_TAG || p->kind == PURGE_ALL)) {
        r = mark_soft(txn, &d, p);
    } else if (p->kind == PURGE_TAG) {
        size_t tl = strlen(p->value);
        char row[VC_CACHE_TAG_MAX + 2];
        if (tl == 0 || tl > VC_CACHE_TAG_MAX)
            return 0;
        memcpy(row, p->value, tl);
        row[tl] = '\0';
        r = store_collect(txn, d.tags, row, tl + 1, 1, &keys, &lens, &n);
    } else if (p->kind == PURGE_ALL && !p->soft && p->nhosts == 0) {
        /* Everything goes: the databases are emptied, not walked. */
        MDB_dbi all[] = {d.cache, d.tags, d.seq, d.soft};
        for (size_t i = 0; i < VC_ARRAY_SIZE(all) && r >= 0; i++)
            r = vc_store_err(mdb_drop(txn, all[i], 0));
        p->x.purged = p->x.entries;
        p->x.entries = p->x.bytes = p->x.soft_tags = 0;
    } else if (p->kind == PURGE_ALL) {
        r = store_collect(txn, d.cache, "", 0, 0, &keys, &lens, &n);
    } else {
        const char *host, *path, *query;
        size_t hlen, plen, qlen;
        if (split_url(p->value, &host, &hlen, &path, &plen, &query, &qlen) < 0)
            return -EINVAL;
        static const char *const schemes[] = {"http", "https"};
        for (size_t s = 0; s < 2 && r >= 0; s++) {
            char key[VC_CACHE_KEY_MAX + 1];
            size_t klen;
            if (p->kind == PURGE_URL) {
                klen = vc_cache_key(schemes[s], host, hlen, path, plen, query, qlen, cfg->strip_params,
                                    cfg->nstrip_params, key, VC_CACHE_KEY_MAX);
                if (klen) {
                    push_key(&keys, &lens, &n, key, klen);
                    /* And its variants, if it varies. */
                    key[klen] = VC_CACHE_VARIANT_SEP;
                    r = store_collect(txn, d.cache, key, klen + 1, 0, &keys, &lens, &n);
                }
            } else {
                /* A prefix is taken as written, but for the host's case
                 * and default port, as in a key. */
                klen = vc_cache_key(schemes[s], host, hlen, path, plen, NULL, 0, NULL, 0, key, VC_CACHE_KEY_MAX);
                if (klen && qlen == 0)
                    r = store_collect(txn, d.cache, key, klen, 0, &keys, &lens, &n);
            }
        }
    }
    /* In the cache's own order (a tag's rows come in the order of their
     * keys' hashes): each page of entries is reached once, in turn. */
    key_ref_t *order = vc_malloc((n ? n : 1) * sizeof(*order));
    for (size_t i = 0; i < n; i++)
        order[i] = (key_ref_t){keys[i], lens[i]};
    qsort(order, n, sizeof(*order), key_order);
    for (size_t i = 0; i < n && r >= 0; i++)
        r = purge_key(txn, &d, p, order[i].key, order[i].len);
    free(order);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(lens);
    /* Answers a front keeps in memory from before now are not served
     * again (vc_cache.h). */
    p->x.epoch++;
    if (r >= 0)
        r = write_meta(txn, &d, &p->x);
    return r;
}

long cache_store_purge(cache_store_t *cs, purge_kind_t kind, const char *value, int soft)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    return cache_store_purge_hosts(cs, kind, value, soft, NULL, 0);
}

long cache_store_purge_hosts(cache_store_t *cs, purge_kind_t kind, const char *value, int soft, char *const *hosts,
                             size_t nhosts)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    purge_ctx_t p = {
        .cs = cs, .kind = kind, .value = value ? value : "", .soft = soft, .hosts = hosts, .nhosts = nhosts};
    int r = vc_store_write(cs->st, VC_DB_CACHE, purge_txn, &p);
    if (r < 0)
        return r;
    store_apply(cs, &p.x);
    return (long)p.x.purged;
}

/* ---- soft marks applied in the background ------------------------------- */

typedef struct maintain_ctx {
    cache_store_t *cs;
    size_t budget;
    delta_t x;
} maintain_ctx_t;

static int maintain_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    maintain_ctx_t *m = arg;
    soft_progress_t *sp = &m->cs->soft;
    dbs_t d;
    int r = store_begin(txn, dbi, &d, &m->x);
    if (r < 0 || m->x.soft_tags == 0)
        return r;
    MDB_val k, v;
    MDB_cursor *cur;
    if (sp->tag[0] == '\0') {
        /* The first mark: from its first row. */
        if (mdb_cursor_open(txn, d.soft, &cur) != 0)
            return -EIO;
        int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
        mdb_cursor_close(cur);
        if (rc != 0 || k.mv_size == 0 || k.mv_size > VC_CACHE_TAG_MAX) {
            m->x.soft_tags = 0; /* the count was wrong: there are none */
            return write_meta(txn, &d, &m->x);
        }
        memcpy(sp->tag, k.mv_data, k.mv_size);
        sp->tag[k.mv_size] = '\0';
        memcpy(sp->row, k.mv_data, k.mv_size);
        sp->row[k.mv_size] = '\0';
        sp->row_len = k.mv_size + 1;
    }
    size_t tl = strlen(sp->tag);
    MDB_val tk = {tl, sp->tag}, tv;
    int64_t at = 0;
    if (mdb_get(txn, d.soft, &tk, &tv) != 0 || tv.mv_size != sizeof(at)) {
        sp->tag[0] = '\0'; /* gone (a hard purge of everything) */
        return 0;
    }
    memcpy(&at, tv.mv_data, sizeof(at));
    if (mdb_cursor_open(txn, d.tags, &cur) != 0)
        return -EIO;
    k = (MDB_val){sp->row_len, sp->row};
    int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    size_t done = 0;
    for (; rc == 0 && done < m->budget; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size <= tl || memcmp(k.mv_data, sp->tag, tl) != 0 || ((char *)k.mv_data)[tl] != '\0')
            break; /* past the tag's rows */
        if (k.mv_size > sizeof(sp->row))
            continue;
        /* Copied: they are valid only until the next write. */
        memcpy(sp->row, k.mv_data, k.mv_size);
        sp->row_len = k.mv_size;
        char key[VC_CACHE_KEY_MAX];
        size_t klen = v.mv_size < sizeof(key) ? v.mv_size : 0;
        memcpy(key, v.mv_data, klen);
        if (klen && (r = soften(txn, &d, key, klen, at)) < 0)
            break;
        done++;
    }
    int finished = rc != 0 || done < m->budget;
    mdb_cursor_close(cur);
    if (r < 0)
        return r;
    if (finished) {
        /* Every entry of the tag stored before the mark is soft now: the
         * mark goes, unless a newer purge of the tag replaced it (then its
         * walk starts again). */
        if (mdb_get(txn, d.soft, &tk, &tv) == 0 && tv.mv_size == sizeof(at) &&
            memcmp(tv.mv_data, &at, sizeof(at)) == 0) {
            mdb_del(txn, d.soft, &tk, NULL);
            m->x.soft_tags -= m->x.soft_tags > 0;
            sp->tag[0] = '\0';
        } else {
            memcpy(sp->row, sp->tag, tl);
            sp->row[tl] = '\0';
            sp->row_len = tl + 1;
        }
    }
    return write_meta(txn, &d, &m->x);
}

int cache_store_maintain(cache_store_t *cs)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    if (cs->c.soft_tags == 0)
        return 0;
    maintain_ctx_t m = {.cs = cs, .budget = SOFT_SLICE};
    int r = vc_store_write(cs->st, VC_DB_CACHE, maintain_txn, &m);
    if (r == 0)
        store_apply(cs, &m.x);
    return r;
}
