/*
 * The cache backend: a GET or HEAD for a PHP script is looked up in the
 * cache (LMDB, written by vc-cache alone) before it goes to PHP. A fresh
 * entry is answered here, in the event loop, without leaving the front
 * (cache_answer.c: its headers, 304, ranges). A stale one is answered too
 * while the page allows it (stale-while-revalidate, cache.grace), and a
 * request of our own refreshes it (cache_refresh.c). Anything else goes on to PHP with a tap on its answer
 * (cache_tap.c); one request a page at a time, the others waiting for its
 * answer (cache_flight.c). Every answer that passed the cache says so in
 * Cache-Status (RFC 9211).
 *
 * Bypassed (straight to PHP, never stored): a request with Authorization,
 * with a session cookie (cache.session_cookies), or with unkeyed headers
 * frameworks read; one with Range unless a hit answers it; a site with
 * cache = false.
 */
#include "cache_internal.h"
#include "cache_policy.h"
#include "core/node_store.h"
#include "core/conn.h"
#include "core/forwarded.h"
#include "core/handler.h"
#include "vc_log.h"
#include "vc_mesh.h"
#include "vc_store.h"
#include "vc_util.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often a front that found no cache database looks again. */
#define REOPEN_MS 1000

/* One per front process: the cache is read from the event loop only. */
static struct {
    front_t *f;
    const cache_settings_t *cfg;
    vc_store_t *store;
    MDB_txn *txn; /* reset between lookups, renewed for the next */
    MDB_dbi dbi, meta, soft;
    int dbi_open;
    uint64_t next_try_ms;
    int clustered; /* a cluster's node: its cache may be held (vc_cache.h) */
} front_cache;

int64_t cache_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

front_t *cache_front(void)
{
    return front_cache.f;
}

const cache_settings_t *cache_settings(void)
{
    return front_cache.cfg;
}

/* ---- reading the cache ----------------------------------------------------- */

/* Ready to look up: the store open and the cache's database found. The
 * store is opened at the first request, in this process (never before a
 * fork). */
static int ready(void)
{
    if (front_cache.dbi_open)
        return 1;
    uint64_t now = vc_mono_ms();
    if (now < front_cache.next_try_ms)
        return 0;
    front_cache.next_try_ms = now + REOPEN_MS;
    if (front_cache.store == NULL && (front_cache.store = front_store(front_cache.f)) == NULL)
        return 0;
    MDB_txn *t;
    if (mdb_txn_begin(vc_store_env(front_cache.store), NULL, MDB_RDONLY, &t) != 0)
        return 0;
    /* Not there until vc-cache has made it: every request is a miss. */
    int rc = mdb_dbi_open(t, VC_DB_CACHE, 0, &front_cache.dbi);
    if (rc == 0)
        rc = mdb_dbi_open(t, VC_DB_CACHE_META, 0, &front_cache.meta);
    if (rc == 0)
        rc = mdb_dbi_open(t, VC_DB_CACHE_SOFT, 0, &front_cache.soft);
    if (rc == 0) {
        mdb_txn_commit(t); /* keeps the handle for later transactions */
        front_cache.dbi_open = 1;
        return 1;
    }
    mdb_txn_abort(t);
    return 0;
}

/* A read transaction for one lookup; vc-cache may have grown the map. */
static MDB_txn *begin(void)
{
    MDB_env *env = vc_store_env(front_cache.store);
    for (int i = 0; i < 2; i++) {
        int rc =
            front_cache.txn ? mdb_txn_renew(front_cache.txn) : mdb_txn_begin(env, NULL, MDB_RDONLY, &front_cache.txn);
        if (rc == 0)
            return front_cache.txn;
        if (front_cache.txn) {
            mdb_txn_abort(front_cache.txn);
            front_cache.txn = NULL;
        }
        if (rc != MDB_MAP_RESIZED || mdb_env_set_mapsize(env, 0) != 0)
            break;
    }
    return NULL;
}

/* A count of cache_meta (vc_cache.h), or 0. */
static uint64_t meta_in(MDB_txn *txn, const char *name)
{
    MDB_val k = {strlen(name), (void *)name}, v;
    uint64_t n = 0;
    if (mdb_get(txn, front_cache.meta, &k, &v) == 0 && v.mv_size == sizeof(n))
        memcpy(&n, v.mv_data, sizeof(n));
    return n;
}

/* Whether a soft purge of everything, or of one of e's tags, came after e
 * was stored (vc_cache.h: they are marks, applied to entries later). */
static int soft_purged(MDB_txn *txn, const vc_cache_entry_t *e)
{
    if ((int64_t)meta_in(txn, VC_CACHE_META_SOFT_ALL) >= e->stored_ms)
        return 1;
    if (e->ntags == 0 || meta_in(txn, VC_CACHE_META_SOFT_TAGS) == 0)
        return 0;
    size_t pos = 0;
    uint32_t i = 0;
    const char *tag;
    size_t tl;
    while (vc_cache_entry_tag(e, &pos, &i, &tag, &tl)) {
        MDB_val k = {tl, (void *)tag}, v;
        int64_t at;
        if (mdb_get(txn, front_cache.soft, &k, &v) == 0 && v.mv_size == sizeof(at) &&
            (memcpy(&at, v.mv_data, sizeof(at)), 1) && at >= e->stored_ms)
            return 1;
    }
    return 0;
}

/* key's entry (or marker) in txn: 1 and *e, else 0. */
static int get_entry(MDB_txn *txn, const char *key, size_t klen, vc_cache_entry_t *e)
{
    MDB_val k = {klen, (void *)key}, v;
    if (mdb_get(txn, front_cache.dbi, &k, &v) != 0 || vc_cache_entry_parse(v.mv_data, v.mv_size, e) != 0)
        return 0;
    if (e->status != 0 && e->fresh_ms > 0 && soft_purged(txn, e))
        e->fresh_ms = 0; /* as the mark's application will make it */
    return 1;
}

int cache_lookup_for(h2o_req_t *req, const char *key, size_t klen, vc_cache_entry_t *e, uint64_t *epoch, char *used,
                     size_t *used_len)
{
    *epoch = 0;
    memcpy(used, key, klen);
    *used_len = klen;
    MDB_txn *txn = ready() ? begin() : NULL;
    if (txn == NULL)
        return 0;
    *epoch = meta_in(txn, VC_CACHE_META_EPOCH);
    if (front_cache.clustered && meta_in(txn, VC_CACHE_META_LEASE) <= vc_boot_ms())
        return 0; /* held, or its lease lapsed: purges from other nodes may be missing, all misses */
    if (!get_entry(txn, key, klen, e))
        return 0;
    if (e->status != 0)
        return 1;
    /* A marker: the page varies on the headers it names. */
    vc_cache_header_t h;
    size_t pos = 0;
    uint32_t i = 0;
    if (req == NULL || !vc_cache_entry_header(e, &pos, &i, &h))
        return 0;
    *used_len = cache_variant_key(req, key, klen, h.value, h.value_len, used, VC_CACHE_KEY_MAX);
    return *used_len > 0 && get_entry(txn, used, *used_len, e) && e->status != 0;
}

int cache_lookup(const char *key, size_t klen, vc_cache_entry_t *e, uint64_t *epoch)
{
    char used[VC_CACHE_KEY_MAX];
    size_t used_len;
    return cache_lookup_for(NULL, key, klen, e, epoch, used, &used_len);
}

int cache_has(const char *key, size_t klen, uint64_t *last_seq)
{
    MDB_txn *txn = ready() ? begin() : NULL;
    vc_cache_entry_t e;
    int found = txn && get_entry(txn, key, klen, &e);
    *last_seq = txn ? meta_in(txn, VC_CACHE_META_SEQ) : 0;
    cache_lookup_end();
    return found;
}

void cache_lookup_end(void)
{
    if (front_cache.txn)
        mdb_txn_reset(front_cache.txn);
}

/* ---- a hit (answered by cache_answer.c) ------------------------------------ */

/* A hit, fresh (ttl >= 0) or stale (served while refreshed), inside the
 * lookup's transaction. An entry in the older half of the eviction order
 * is reported, so that what is used is evicted last. */
static void serve_hit(front_t *f, h2o_req_t *req, const char *key, size_t klen, const vc_cache_entry_t *e, int64_t now)
{
    if (front_cache.txn &&
        e->seq + meta_in(front_cache.txn, "entries") / 2 < meta_in(front_cache.txn, VC_CACHE_META_SEQ))
        cache_recency_note(f, req, key, klen);
    char status[96];
    int64_t ttl = e->fresh_ms - now;
    if (ttl >= 0) {
        cache_stats.hits++;
        snprintf(status, sizeof(status), "Velocity; hit; ttl=%lld", (long long)(ttl / 1000));
    } else {
        cache_stats.stale++;
        /* RFC 9211: a negative ttl says it is stale. A soft purge leaves
         * no lifetime: it counts from when it was stored. */
        int64_t past = e->fresh_ms > 0 ? now - e->fresh_ms : now - e->stored_ms;
        snprintf(status, sizeof(status), "Velocity; hit; ttl=%lld; detail=stale-while-revalidate",
                 -(long long)(past / 1000) - 1);
    }
    cache_serve(req, e, now, status);
}

/* ---- the backend ----------------------------------------------------------- */

/* Whether a Cookie header's value has a cookie whose name matches one of
 * the session cookies' patterns (fnmatch: "SESS*", "*_session"). */
static int has_session(h2o_iovec_t c)
{
    const cache_settings_t *cfg = front_cache.cfg;
    for (size_t at = 0; at < c.len;) {
        while (at < c.len && (c.base[at] == ' ' || c.base[at] == ';'))
            at++;
        size_t start = at;
        while (at < c.len && c.base[at] != '=' && c.base[at] != ';')
            at++;
        char name[256];
        size_t nl = at - start;
        if (nl > 0 && nl < sizeof(name)) {
            memcpy(name, c.base + start, nl);
            name[nl] = '\0';
            for (size_t s = 0; s < cfg->nsession_cookies; s++)
                if (fnmatch(cfg->session_cookies[s], name, 0) == 0)
                    return 1;
        }
        while (at < c.len && c.base[at] != ';') /* the value */
            at++;
    }
    return 0;
}

/* The reason a request skips the cache, or NULL: one pass over its
 * headers (h2o keeps their names in lower case). A Range is not one: it
 * is answered from a hit, and only a miss passes it to PHP. */
static const char *bypass_reason(const seam_request_t *r, const vc_cache_rule_t *rule)
{
    h2o_req_t *req = r->req;
    int trusted = -1;
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        if (h->name == &H2O_TOKEN_AUTHORIZATION->buf)
            return "authorization";
        if (h->name == &H2O_TOKEN_COOKIE->buf && !(rule && rule->sessions) && has_session(h->value))
            return "session";
        /* Headers frameworks read instead of the URL, the method or the
         * port, which are not in the key: from a trusted proxy they reach
         * PHP, so its answer is not stored for others. From anyone else
         * PHP never sees them (forwarded.h). */
        if (forwarded_kind(h->name) == VC_FORWARDED_OTHER) {
            if (trusted < 0)
                trusted = forwarded_trusted(r->f->settings, conn_state_of_req(req), req);
            if (trusted)
                return "unkeyed-header";
        }
    }
    return NULL;
}

/* A request's own Cache-Control: no-store, on any of its lines (RFC 9111
 * 5.2.1.5: no part of its answer may be stored; what is stored may still
 * answer it). */
static int asks_no_store(const h2o_req_t *req)
{
    int64_t secs;
    for (ssize_t i = -1; (i = h2o_find_header(&req->headers, H2O_TOKEN_CACHE_CONTROL, i)) != -1;)
        if (cache_policy_directive(req->headers.entries[i].value.base, req->headers.entries[i].value.len, "no-store",
                                   &secs))
            return 1;
    return 0;
}

static int unsafe(h2o_iovec_t m)
{
    return h2o_memis(m.base, m.len, H2O_STRLIT("POST")) || h2o_memis(m.base, m.len, H2O_STRLIT("PUT")) ||
           h2o_memis(m.base, m.len, H2O_STRLIT("PATCH")) || h2o_memis(m.base, m.len, H2O_STRLIT("DELETE"));
}

/* A site's rules (site.cache_rules), the longest prefix first: the first
 * that matches a path is its rule. */
typedef struct site_rules {
    vc_cache_rule_t *v;
    size_t n;
} site_rules_t;

static int longest_first(const void *a, const void *b)
{
    size_t x = strlen(((const vc_cache_rule_t *)a)->prefix), y = strlen(((const vc_cache_rule_t *)b)->prefix);
    return (x < y) - (x > y);
}

static int site_init(front_t *f, site_rt_t *s, void **state)
{
    front_cache.f = f;
    front_cache.cfg = vc_cache_settings_of(f->d.cfg);
    front_cache.clustered = vc_mesh_settings_of(f->d.cfg)->node[0] != '\0';
    site_rules_t *rules = vc_calloc(1, sizeof(*rules));
    rules->v = vc_calloc(s->conf->ncache_rules + 1, sizeof(*rules->v));
    for (size_t i = 0; i < s->conf->ncache_rules; i++) {
        char err[512];
        if (vc_cache_rule_parse(s->conf->cache_rules[i], &rules->v[rules->n], err, sizeof(err)) == 0)
            rules->n++; /* the configuration was checked: never otherwise */
    }
    qsort(rules->v, rules->n, sizeof(*rules->v), longest_first);
    *state = rules;
    return 0;
}

static const vc_cache_rule_t *rule_for(const site_rules_t *rules, h2o_iovec_t path)
{
    for (size_t i = 0; rules && i < rules->n; i++)
        if (path.len >= strlen(rules->v[i].prefix) &&
            memcmp(path.base, rules->v[i].prefix, strlen(rules->v[i].prefix)) == 0)
            return &rules->v[i];
    return NULL;
}

/* The request's key into key (VC_CACHE_KEY_MAX bytes): its length, or 0 if
 * it does not fit; the scheme and host it was made of. */
static size_t key_of(const seam_request_t *r, char *key, const char **scheme_out, h2o_iovec_t *host_out)
{
    h2o_req_t *req = r->req;
    size_t plen = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    const char *q = req->query_at != SIZE_MAX ? req->path.base + req->query_at + 1 : "";
    size_t qlen = req->query_at != SIZE_MAX ? req->path.len - req->query_at - 1 : 0;
    const char *scheme = r->https ? "https" : "http";
    h2o_iovec_t host = req->authority;
    /* Behind a trusted proxy the page is the one it forwarded for. */
    for (size_t i = 0; i < req->headers.size; i++)
        if (forwarded_kind(req->headers.entries[i].name) == VC_FORWARDED_KEYED) {
            if (forwarded_trusted(r->f->settings, conn_state_of_req(req), req))
                forwarded_origin(req, &scheme, &host);
            break;
        }
    *scheme_out = scheme;
    *host_out = host;
    return vc_cache_key(scheme, host.base, host.len, req->path.base, plen, q, qlen, front_cache.cfg->strip_params,
                        front_cache.cfg->nstrip_params, key, VC_CACHE_KEY_MAX);
}

/* A miss, or a stale entry that may not be served: one request goes to
 * PHP for the page, the others wait for its answer, unless the page's
 * answers were lately not storable. e: the stale entry, or NULL (in the
 * lookup's transaction). */
static int miss(const seam_request_t *r, const vc_cache_rule_t *rule, const char *key, size_t klen,
                const vc_cache_entry_t *e, uint64_t epoch, int64_t now, const char *fwd, int invalidated)
{
    front_t *f = r->f;
    h2o_req_t *req = r->req;
    cache_flight_t *fl = flight_find(key, klen);
    if (fl && flight_running(fl) && !flight_hit_for_miss(key, klen)) {
        cache_lookup_end();
        cache_stats.collapsed++;
        flight_wait(fl, r, rule);
        return 1;
    }
    cache_tap_args_t a = {.site = r->site, .rule = rule, .key = key, .klen = klen, .may_store = 1, .fwd = fwd};
    /* Kept in case PHP fails (stale-if-error), or says it has not changed
     * (asked with its validators): copied before the transaction ends. */
    if (e && (a.revalidate = cache_add_validators(req, e)) | (now < e->error_ms)) {
        a.stale = e->bytes;
        a.stale_len = e->len;
    }
    if (!flight_hit_for_miss(key, klen)) {
        /* Another front's claim from before an unsafe method made the
         * page out of date is for what it stored then: not waited for. */
        if (!claim_take(key, klen) && !invalidated) {
            /* Another front process is at PHP for it. */
            cache_lookup_end();
            cache_stats.collapsed++;
            flight_wait(flight_remote(key, klen, req), r, rule);
            return 1;
        }
        a.lead = flight_start(key, klen, req, epoch);
    }
    cache_tap(f, req, &a);
    cache_lookup_end();
    cache_stats.misses++;
    return cache_to_php(r);
}

static int take(const seam_request_t *r, void *state)
{
    h2o_req_t *req = r->req;
    if (r->kind != ROUTE_PHP || !front_cache.cfg->enabled || !r->site->conf->cache || r->error_document)
        return 0;
    int head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
    int get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"));
    front_t *f = r->f;
    char key[VC_CACHE_KEY_MAX];
    size_t klen;
    const char *kscheme = "http";
    h2o_iovec_t khost = {NULL, 0};
    if (!head && !get) {
        /* Whoever sends it (a session, Authorization): the stored answer
         * is out of date once it succeeds. */
        klen = unsafe(req->method) ? key_of(r, key, &kscheme, &khost) : 0;
        cache_tap_invalidator(f, r->site, req, klen ? key : NULL, klen);
        return 0;
    }
    const vc_cache_rule_t *rule = rule_for(state, req->path_normalized);
    const char *why = rule && rule->off ? "rule" : bypass_reason(r, rule);
    if (why == NULL && (klen = key_of(r, key, &kscheme, &khost)) == 0)
        why = "key-too-long";
    if (why) {
        cache_stats.bypass++;
        cache_tap(f, req, &(cache_tap_args_t){.site = r->site, .fwd = "bypass", .detail = why});
        return 0;
    }
    /* A Host in another case, or with its default port, shares the key of
     * its plain form: it may read that entry, but what PHP makes of it is
     * not stored (an application that prints its Host would otherwise
     * serve "EXAMPLE.com:80" to everyone). */
    size_t slen = strlen(kscheme) + 3;
    int host_plain = klen >= slen + khost.len && memcmp(key + slen, khost.base, khost.len) == 0;
    int64_t now = cache_now_ms();
    uint64_t epoch;
    vc_cache_entry_t e;
    /* The page's key, or its variant's when it varies (the key of what is
     * stored, waited for and refreshed from here on). */
    char page_key[VC_CACHE_KEY_MAX];
    size_t page_len = klen;
    memcpy(page_key, key, klen);
    int found = cache_lookup_for(req, page_key, page_len, &e, &epoch, key, &klen);
    if (klen == 0) {
        cache_lookup_end();
        cache_stats.bypass++;
        cache_tap(f, req, &(cache_tap_args_t){.site = r->site, .fwd = "bypass", .detail = "key-too-long"});
        return 0;
    }
    /* An unsafe method's answer made it out of date, maybe before
     * vc-cache could drop it; or it is dropped, and nothing was written
     * since (then a claim another front holds is for the old page). */
    int invalidated =
        found ? cache_tomb_covers(page_key, page_len, e.seq)
              : front_cache.txn && cache_tomb_covers(page_key, page_len, meta_in(front_cache.txn, VC_CACHE_META_SEQ));
    if (invalidated)
        found = 0;
    const char *fwd = found ? "stale" : klen != page_len ? "vary-miss" : "uri-miss";
    if (front_cache.cfg->debug)
        *h2o_req_getenv(req, H2O_STRLIT("vc-cache-key"), 1) = h2o_strdup(&req->pool, key, klen);
    if (found && now < e.fresh_ms) {
        serve_hit(f, req, key, klen, &e, now);
        cache_lookup_end();
        return 1;
    }
    cache_flight_t *fl = flight_find(key, klen);
    vc_cache_entry_t answer;
    if (!invalidated && fl && flight_answer(fl, now, epoch, &answer)) {
        /* Just stored by the request this front sent: vc-cache may not
         * have written it yet (unless it is older than an invalidation
         * by another front: then nobody can say). */
        cache_lookup_end();
        cache_stats.collapsed++;
        cache_serve(req, &answer, now, "Velocity; fwd=uri-miss; collapsed");
        return 1;
    }
    if (found && now < e.stale_ms) {
        /* Served stale; one request of our own refreshes it (started
         * first: it copies this request, which may be done once served). */
        if ((fl == NULL || !flight_running(fl)) && claim_take(key, klen)) {
            if (cache_refresh(r, rule, key, klen, epoch, &e) == 0)
                cache_stats.refreshes++;
            else
                claim_release(key, klen);
        }
        serve_hit(f, req, key, klen, &e, now);
        cache_lookup_end();
        return 1;
    }
    if (h2o_find_header(&req->headers, H2O_TOKEN_RANGE, -1) != -1) {
        /* PHP answers a range as it likes (most send the whole page): not
         * stored, and nobody waits for it. */
        cache_lookup_end();
        cache_stats.bypass++;
        cache_tap(f, req, &(cache_tap_args_t){.site = r->site, .fwd = "bypass", .detail = "range"});
        return 0;
    }
    int no_store = asks_no_store(req);
    if (head || !host_plain || no_store) {
        /* A HEAD is answered by PHP without a body: never stored. */
        cache_lookup_end();
        cache_stats.misses++;
        cache_tap(f, req,
                  &(cache_tap_args_t){.site = r->site,
                                      .fwd = fwd,
                                      .detail = head          ? "head"
                                                : !host_plain ? "host-form"
                                                              : "no-store"});
        return 0;
    }
    return miss(r, rule, key, klen, found ? &e : NULL, epoch, now, fwd, invalidated);
}

cache_stats_t cache_stats;

static const seam_counter_t counters[] = {
    /* Hits and misses go out in front.metrics too: the panel's hit ratio. */
    {"vc_front_cache_hits_total", "cache_hits", "Requests answered from the cache.", 0, 1, &cache_stats.hits, NULL, 0},
    {"vc_front_cache_misses_total", "cache_misses",
     "Requests looked up in the cache and passed to PHP (missing or stale).", 0, 1, &cache_stats.misses, NULL, 0},
    {"vc_front_cache_bypass_total", "cache_bypass",
     "Requests that skipped the cache (Authorization, a session cookie, Range).", 0, 0, &cache_stats.bypass, NULL, 0},
    {"vc_front_cache_stale_total", "cache_stale",
     "Requests answered with a stale entry while it was refreshed, or when PHP failed.", 0, 0, &cache_stats.stale, NULL,
     0},
    {"vc_front_cache_collapsed_total", "cache_collapsed", "Requests that waited for another's answer to the same page.",
     0, 0, &cache_stats.collapsed, NULL, 0},
    {"vc_front_cache_refreshes_total", "cache_refreshes", "Background requests that refreshed a stale entry.", 0, 0,
     &cache_stats.refreshes, NULL, 0},
    {"vc_front_cache_revalidated_total", NULL, "Stale entries PHP answered 304 for: served and stored again.", 0, 0,
     &cache_stats.revalidated, NULL, 0},
    {"vc_front_cache_touches_total", NULL,
     "Hits on entries in the older half of the eviction order, reported to vc-cache.", 0, 0, &cache_stats.touches, NULL,
     0},
    {"vc_front_cache_offers_total", NULL, "Answers offered to vc-cache to store.", 0, 0, &cache_stats.offers, NULL, 0},
    {"vc_front_cache_offers_dropped_total", NULL, "Answers not offered: vc-cache's queue was full.", 0, 0,
     &cache_stats.offers_dropped, NULL, 0},
};

const seam_backend_t cache_backend = {
    .name = "cache",
    .stage = SEAM_ROUTED,
    .order = 50, /* before the PHP pool's 60 */
    .site_init = site_init,
    .take = take,
    .admin = cache_admin_register, /* PURGE */
    .counters = counters,
    .ncounters = VC_ARRAY_SIZE(counters),
};
SEAM_BACKEND(cache_backend)
