/*
 * Collapsed forwarding: of the requests that miss the cache for one page at
 * once, one goes to PHP (it leads the page's flight) and the others wait for
 * its answer, which they get from memory when it may be stored: a cold page
 * that takes 200 ms costs one PHP execution, not one a request. A waiter
 * goes to PHP itself after cache.lock_timeout (as nginx's
 * proxy_cache_lock_timeout). When the answer may not be stored, the
 * waiters go to PHP at once, and the page's later misses do not wait for
 * cache.hit_for_miss (Varnish's hit-for-miss: its requests would otherwise
 * be served one after the other). When PHP fails, they get the stale entry
 * if it may stand in (stale-if-error). When the leader's client leaves, the
 * next waiter leads.
 *
 * An answer just stored is kept a second: vc-cache writes it to LMDB a
 * moment later, and a miss in between gets it from here, unless a purge
 * came since the leader asked PHP (the purge count, vc_cache.h).
 *
 * Flights are per front process: fronts of one node (front.processes > 1)
 * each send their own first miss.
 */
#include "cache_internal.h"
#include "vc_keys.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 256
#define POLL_MS 20     /* how often waiters for another front's answer look for it */
#define HFM_SLOTS 4096 /* hit-for-miss marks: a collision costs a wait, nothing more */

typedef struct waiter waiter_t;

typedef enum pending {
    PENDING_NONE,
    PENDING_SERVE,   /* the answer is in: the waiters get it */
    PENDING_RELEASE, /* no answer to share: each waiter goes to PHP (or gets a stale entry on an error) */
    PENDING_PROMOTE, /* the leader left: the first waiter leads */
} pending_t;

struct cache_flight {
#define FLIGHT_MAGIC 0x666c6974u /* "flit" */
    unsigned magic;
    vc_keyed_t link; /* in the table of flights, by the key's hash (link.hash) */
    char *key;
    size_t klen;
    cache_lead_t *lead; /* NULL: no request is under way */
    uint64_t epoch;     /* purges before the leader asked PHP */
    waiter_t *first, *last;
    void *entry; /* the answer, once stored; malloc'd */
    size_t entry_len;
    /* Where it was stored: key itself, or a variant of it (the answer
     * varies on vary's headers): only waiters whose headers pick the same
     * variant get it. */
    char *stored_key;
    size_t stored_len;
    char vary[CACHE_VARY_LIST_MAX];
    pending_t pending;
    flight_end_t end;
    h2o_context_t *ctx;
    h2o_timeout_entry_t wake;   /* deferred: never a waiter answered inside the leader's send */
    h2o_timeout_entry_t expire; /* the stored answer is dropped */
    int remote;                 /* another front holds the claim: its answer is looked for in the cache */
    h2o_timeout_entry_t poll;   /* then, every POLL_MS */
};

struct waiter {
    cache_flight_t *fl; /* NULL once it waits no more */
    waiter_t *prev, *next;
    h2o_req_t *req;
    front_t *f;
    site_rt_t *site;
    const vc_cache_rule_t *rule;
    int https;
    char *file, *script_name, *path_info, *document_uri; /* its route, for PHP */
    h2o_timeout_entry_t timer;
};

static vc_keys_t flights; /* made at the first flight */
static struct {
    uint64_t hash;
    int64_t until_ms;
} hfm[HFM_SLOTS];
static h2o_timeout_t lock_timeout;
static int lock_timeout_ready;

static uint64_t hash_of(const char *key, size_t klen)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < klen; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
    return h;
}

typedef struct key_ref {
    const char *key;
    size_t klen;
} key_ref_t;

/* Two keys may share a hash: the flight is the one of the same key. */
static int same_key(const vc_keyed_t *k, const void *arg)
{
    const cache_flight_t *fl = VC_CONTAINER(k, cache_flight_t, link);
    const key_ref_t *want = arg;
    return fl->klen == want->klen && memcmp(fl->key, want->key, want->klen) == 0;
}

cache_flight_t *flight_find(const char *key, size_t klen)
{
    if (flights.buckets == NULL)
        return NULL;
    key_ref_t want = {key, klen};
    vc_keyed_t *k = vc_keys_find(&flights, hash_of(key, klen), same_key, &want);
    return k ? VC_CONTAINER(k, cache_flight_t, link) : NULL;
}

int flight_running(const cache_flight_t *fl)
{
    VC_CHECK_OBJ(fl, FLIGHT_MAGIC);
    return fl->lead != NULL || fl->remote;
}

int flight_answer(cache_flight_t *fl, int64_t now, uint64_t epoch, vc_cache_entry_t *e)
{
    VC_CHECK_OBJ(fl, FLIGHT_MAGIC);
    /* Not a variant: which one a newcomer picks is for the lookup to say. */
    return fl->entry && fl->epoch == epoch && fl->stored_len == fl->klen &&
           vc_cache_entry_parse(fl->entry, fl->entry_len, e) == 0 && now < e->fresh_ms;
}

int flight_hit_for_miss(const char *key, size_t klen)
{
    uint64_t h = hash_of(key, klen);
    return hfm[h % HFM_SLOTS].hash == h && cache_now_ms() < hfm[h % HFM_SLOTS].until_ms;
}

static void mark_hit_for_miss(uint64_t h, int64_t ms)
{
    hfm[h % HFM_SLOTS].hash = h;
    hfm[h % HFM_SLOTS].until_ms = ms > 0 ? cache_now_ms() + ms : 0;
}

/* ---- a flight's life --------------------------------------------------------- */

static void drop_entry(cache_flight_t *fl)
{
    free(fl->entry);
    fl->entry = NULL;
    free(fl->stored_key);
    fl->stored_key = NULL;
    h2o_timeout_unlink(&fl->expire);
}

/* Gone from the table once nothing runs, waits or is kept. */
static void maybe_free(cache_flight_t *fl)
{
    if (fl->lead || fl->remote || fl->first || fl->entry || fl->pending != PENDING_NONE)
        return;
    int listed = vc_keys_remove(&flights, &fl->link);
    VC_ASSERT(listed);
    h2o_timeout_unlink(&fl->wake);
    h2o_timeout_unlink(&fl->expire);
    h2o_timeout_unlink(&fl->poll);
    free(fl->key);
    free(fl);
}

static void on_expire(h2o_timeout_entry_t *entry)
{
    cache_flight_t *fl = H2O_STRUCT_FROM_MEMBER(cache_flight_t, expire, entry);
    drop_entry(fl);
    if (fl->lead == NULL)
        claim_release(fl->key, fl->klen);
    maybe_free(fl);
}

static void on_wake(h2o_timeout_entry_t *entry);

static void on_lead_dispose(void *arg)
{
    cache_lead_t *lead = arg;
    if (lead->fl)
        flight_failed(lead, FLIGHT_GONE);
}

/* Makes req the leader of fl. */
static cache_lead_t *lead(cache_flight_t *fl, h2o_req_t *req)
{
    cache_lead_t *l = h2o_mem_alloc_shared(&req->pool, sizeof(*l), on_lead_dispose);
    l->fl = fl;
    fl->lead = l;
    return l;
}

static void on_poll(h2o_timeout_entry_t *entry);
static h2o_timeout_t poll_timeout;
static int poll_timeout_ready;

static cache_flight_t *find_or_make(const char *key, size_t klen, h2o_req_t *req)
{
    cache_flight_t *fl = flight_find(key, klen);
    if (fl == NULL) {
        fl = vc_calloc(1, sizeof(*fl));
        fl->magic = FLIGHT_MAGIC;
        fl->key = vc_malloc(klen);
        memcpy(fl->key, key, klen);
        fl->klen = klen;
        fl->ctx = req->conn->ctx;
        fl->wake.cb = on_wake;
        fl->expire.cb = on_expire;
        fl->poll.cb = on_poll;
        if (flights.buckets == NULL)
            vc_keys_init(&flights, BUCKETS);
        vc_keys_add(&flights, &fl->link, hash_of(key, klen));
    }
    return fl;
}

cache_flight_t *flight_remote(const char *key, size_t klen, h2o_req_t *req)
{
    cache_flight_t *fl = find_or_make(key, klen, req);
    drop_entry(fl);
    if (!fl->remote) {
        fl->remote = 1;
        if (!poll_timeout_ready) {
            h2o_timeout_init(fl->ctx->loop, &poll_timeout, POLL_MS);
            poll_timeout_ready = 1;
        }
        h2o_timeout_link(fl->ctx->loop, &poll_timeout, &fl->poll);
    }
    return fl;
}

cache_lead_t *flight_start(const char *key, size_t klen, h2o_req_t *req, uint64_t epoch)
{
    cache_flight_t *fl = find_or_make(key, klen, req);
    drop_entry(fl);
    fl->epoch = epoch;
    return lead(fl, req);
}

static void defer(cache_flight_t *fl, pending_t what)
{
    fl->pending = what;
    if (!h2o_timeout_is_linked(&fl->wake))
        h2o_timeout_link(fl->ctx->loop, &fl->ctx->zero_timeout, &fl->wake);
}

void flight_stored(cache_lead_t *l, void *entry, size_t len, const char *key, size_t klen, const char *vary)
{
    cache_flight_t *fl = l->fl;
    if (fl == NULL) {
        free(entry);
        return;
    }
    l->fl = NULL;
    fl->lead = NULL;
    /* The claim stays until the answer is dropped here (a second): other
     * fronts' waiters look for it in the cache meanwhile, where vc-cache
     * puts it a moment after this. */
    drop_entry(fl);
    fl->entry = entry;
    fl->entry_len = len;
    fl->stored_key = vc_malloc(klen);
    memcpy(fl->stored_key, key, klen);
    fl->stored_len = klen;
    snprintf(fl->vary, sizeof(fl->vary), "%s", vary);
    mark_hit_for_miss(fl->link.hash, 0);
    h2o_timeout_link(fl->ctx->loop, &fl->ctx->one_sec_timeout, &fl->expire);
    defer(fl, PENDING_SERVE);
}

void flight_failed(cache_lead_t *l, flight_end_t why)
{
    cache_flight_t *fl = l->fl;
    if (fl == NULL)
        return;
    l->fl = NULL;
    fl->lead = NULL;
    claim_release(fl->key, fl->klen);
    fl->end = why;
    if (why == FLIGHT_UNCACHEABLE)
        mark_hit_for_miss(fl->link.hash, cache_settings()->hit_for_miss_ms);
    if (fl->first)
        defer(fl, why == FLIGHT_GONE ? PENDING_PROMOTE : PENDING_RELEASE);
    else
        maybe_free(fl);
}

void flight_forget(const char *key, size_t klen)
{
    cache_flight_t *fl = flight_find(key, klen);
    if (fl) {
        drop_entry(fl);
        if (fl->lead == NULL)
            claim_release(fl->key, fl->klen); /* nobody is to wait for what was stored */
        maybe_free(fl);
    }
}

/* ---- waiters ------------------------------------------------------------------- */

static void unlink_waiter(waiter_t *w)
{
    cache_flight_t *fl = w->fl;
    if (fl == NULL)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        fl->first = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        fl->last = w->prev;
    w->fl = NULL;
    w->prev = w->next = NULL;
    h2o_timeout_unlink(&w->timer);
}

/* Its client left while it waited. */
static void on_waiter_dispose(void *arg)
{
    waiter_t *w = arg;
    cache_flight_t *fl = w->fl;
    unlink_waiter(w);
    if (fl)
        maybe_free(fl);
}

/* w waits no more and goes to PHP, leading its flight if l is set; key
 * is its page's. */
static void go(waiter_t *w, const char *key, size_t klen, cache_lead_t *l)
{
    static route_t route; /* one request at a time, as handler.c's */
    route.kind = ROUTE_PHP;
    snprintf(route.file, sizeof(route.file), "%s", w->file);
    snprintf(route.script_name, sizeof(route.script_name), "%s", w->script_name);
    snprintf(route.path_info, sizeof(route.path_info), "%s", w->path_info);
    snprintf(route.document_uri, sizeof(route.document_uri), "%s", w->document_uri);
    seam_request_t r = {
        .f = w->f, .site = w->site, .req = w->req, .https = w->https, .kind = ROUTE_PHP, .route = &route};
    cache_tap_args_t a = {
        .site = w->site, .rule = w->rule, .key = key, .klen = klen, .may_store = 1, .fwd = "uri-miss", .lead = l};
    /* PHP may fail this one too: the stale entry, if any, stands in. */
    vc_cache_entry_t e;
    uint64_t epoch;
    if (cache_lookup(key, klen, &e, &epoch) && cache_now_ms() < e.error_ms && !cache_tomb_covers(key, klen, e.seq)) {
        a.stale = e.bytes;
        a.stale_len = e.len;
        a.fwd = "stale";
    }
    cache_tap(w->f, w->req, &a);
    cache_lookup_end();
    cache_stats.misses++;
    cache_to_php(&r);
}

/* PHP failed for the leader: a stale entry that may stand in answers, else
 * the waiter tries PHP itself. */
static void release(waiter_t *w, const char *key, size_t klen, flight_end_t end)
{
    vc_cache_entry_t e;
    uint64_t epoch;
    int64_t now = cache_now_ms();
    if (end == FLIGHT_ERROR && cache_lookup(key, klen, &e, &epoch) && now < e.error_ms &&
        !cache_tomb_covers(key, klen, e.seq)) {
        char status[128];
        int64_t past = now - (e.fresh_ms > 0 ? e.fresh_ms : e.stored_ms);
        snprintf(status, sizeof(status), "Velocity; fwd=uri-miss; collapsed; ttl=%lld; detail=stale-if-error",
                 -(long long)(past / 1000) - 1);
        cache_stats.stale++;
        cache_serve(w->req, &e, now, status);
        cache_lookup_end();
        return;
    }
    cache_lookup_end();
    go(w, key, klen, NULL);
}

static waiter_t *pop(cache_flight_t *fl)
{
    waiter_t *w = fl->first;
    if (w)
        unlink_waiter(w);
    return w;
}

static void on_wake(h2o_timeout_entry_t *entry)
{
    cache_flight_t *fl = H2O_STRUCT_FROM_MEMBER(cache_flight_t, wake, entry);
    pending_t what = fl->pending;
    fl->pending = PENDING_NONE;
    waiter_t *w;
    /* A request that answers at once may be disposed of within the call:
     * each waiter leaves the list before it is answered. */
    if (what == PENDING_SERVE && fl->entry) {
        vc_cache_entry_t e;
        int64_t now = cache_now_ms();
        if (vc_cache_entry_parse(fl->entry, fl->entry_len, &e) == 0)
            while ((w = pop(fl)) != NULL) {
                char mine[VC_CACHE_KEY_MAX];
                size_t base = cache_base_len(fl->key, fl->klen), ml = 0;
                if (fl->vary[0])
                    ml = cache_variant_key(w->req, fl->key, base, fl->vary, strlen(fl->vary), mine, sizeof(mine));
                if (!fl->vary[0] || (ml == fl->stored_len && memcmp(mine, fl->stored_key, ml) == 0))
                    cache_serve(w->req, &e, now, "Velocity; fwd=uri-miss; collapsed");
                else
                    go(w, fl->key, base, NULL); /* another variant: its own miss */
            }
    } else if (what == PENDING_RELEASE) {
        while ((w = pop(fl)) != NULL)
            release(w, fl->key, fl->klen, fl->end);
    } else if (what == PENDING_PROMOTE && fl->lead == NULL && (w = pop(fl)) != NULL) {
        claim_take(fl->key, fl->klen); /* it asks PHP now, whatever another front does */
        go(w, fl->key, fl->klen, lead(fl, w->req));
    }
    maybe_free(fl);
}

/* Waiting for another front's answer: served once it is in the cache;
 * once the claim is gone without it (not storable, or that front died),
 * one of the waiters asks PHP. */
static void on_poll(h2o_timeout_entry_t *entry)
{
    cache_flight_t *fl = H2O_STRUCT_FROM_MEMBER(cache_flight_t, poll, entry);
    if (fl->first == NULL) {
        fl->remote = 0; /* nobody waits any more */
        maybe_free(fl);
        return;
    }
    vc_cache_entry_t e;
    uint64_t epoch;
    int64_t now = cache_now_ms();
    if (cache_lookup(fl->key, fl->klen, &e, &epoch) && now < e.fresh_ms &&
        !cache_tomb_covers(fl->key, fl->klen, e.seq)) {
        fl->remote = 0;
        waiter_t *w;
        while ((w = pop(fl)) != NULL)
            cache_serve(w->req, &e, now, "Velocity; fwd=uri-miss; collapsed");
        cache_lookup_end();
        maybe_free(fl);
        return;
    }
    cache_lookup_end();
    if (!claim_held(fl->key, fl->klen)) {
        fl->remote = 0;
        defer(fl, PENDING_PROMOTE);
        return;
    }
    h2o_timeout_link(fl->ctx->loop, &poll_timeout, &fl->poll);
}

/* Waited cache.lock_timeout: goes to PHP itself. */
static void on_lock_timeout(h2o_timeout_entry_t *entry)
{
    waiter_t *w = H2O_STRUCT_FROM_MEMBER(waiter_t, timer, entry);
    cache_flight_t *fl = w->fl;
    char key[VC_CACHE_KEY_MAX];
    size_t klen = fl->klen;
    memcpy(key, fl->key, klen);
    unlink_waiter(w);
    maybe_free(fl);
    go(w, key, klen, NULL);
}

static char *pool_copy(h2o_req_t *req, const char *s)
{
    return h2o_strdup(&req->pool, s, SIZE_MAX).base;
}

void flight_wait(cache_flight_t *fl, const seam_request_t *r, const vc_cache_rule_t *rule)
{
    VC_CHECK_OBJ(fl, FLIGHT_MAGIC);
    h2o_req_t *req = r->req;
    waiter_t *w = h2o_mem_alloc_shared(&req->pool, sizeof(*w), on_waiter_dispose);
    memset(w, 0, sizeof(*w));
    w->req = req;
    w->f = r->f;
    w->site = r->site;
    w->rule = rule;
    w->https = r->https;
    w->file = pool_copy(req, r->route->file);
    w->script_name = pool_copy(req, r->route->script_name);
    w->path_info = pool_copy(req, r->route->path_info);
    w->document_uri = pool_copy(req, r->route->document_uri);
    w->timer.cb = on_lock_timeout;
    const cache_settings_t *cfg = cache_settings();
    if (cfg->lock_timeout_ms == 0) {
        go(w, fl->key, fl->klen, NULL); /* no waiting at all */
        return;
    }
    if (!lock_timeout_ready) {
        h2o_timeout_init(req->conn->ctx->loop, &lock_timeout, (uint64_t)cfg->lock_timeout_ms);
        lock_timeout_ready = 1;
    }
    w->fl = fl;
    w->prev = fl->last;
    if (fl->last)
        fl->last->next = w;
    else
        fl->first = w;
    fl->last = w;
    h2o_timeout_link(req->conn->ctx->loop, &lock_timeout, &w->timer);
}
