/*
 * The cache backend's parts, shared by its files:
 *   cache.c          the backend: lookups in LMDB, hits, what a request does
 *   cache_tap.c      PHP's answer: offered to vc-cache, stale on an error,
 *                    and the entry an unsafe method makes out of date
 *   cache_flight.c   one request for a page goes to PHP; the others wait
 *                    for its answer (collapsed forwarding), hit-for-miss
 *   cache_refresh.c  a request of the front's own that refreshes a stale
 *                    entry while the stale one is served
 *   cache_admin.c    the purge API on the admin listener
 *   cache_recency.c  hits reported to vc-cache, for eviction by recency
 *   cache_vary.c     the variant a request picks (Vary)
 * Everything runs in the front's event loop.
 */
#ifndef VC_FRONT_CACHE_INTERNAL_H
#define VC_FRONT_CACHE_INTERNAL_H

#include "cache_policy.h"
#include "core/front.h"
#include "core/seam.h"
#include "vc_cache.h"

#include <stddef.h>
#include <stdint.h>

extern const seam_backend_t cache_backend;

/* The front this process is (set at the first site's start). */
front_t *cache_front(void);
/* The wall clock in ms, as entries keep it. */
/* What the cache counts (cache.c lists them for /metrics and status). */
typedef struct cache_stats {
    uint64_t hits, misses;   /* answered from the cache; looked up, went to PHP */
    uint64_t bypass;         /* skipped the cache (Authorization, session, Range) */
    uint64_t stale;          /* answered stale: while refreshed, or PHP failed */
    uint64_t collapsed;      /* waited for another request's answer */
    uint64_t refreshes;      /* background requests refreshing a stale entry */
    uint64_t revalidated;    /* stale entries PHP said were still good (304) */
    uint64_t touches;        /* hits on older entries reported for eviction by recency */
    uint64_t offers;         /* answers offered to vc-cache */
    uint64_t offers_dropped; /* offers dropped: vc-cache's queue was full */
} cache_stats_t;
extern cache_stats_t cache_stats;

int64_t cache_now_ms(void);
const cache_settings_t *cache_settings(void);

/* ---- cache.c --------------------------------------------------------------- */

/* Looks key up: 1 with *e parsed (valid until cache_lookup_end), else 0
 * (and 0 for a page's marker of variants: nothing to serve). *epoch is the
 * purge count read in the same transaction. */
int cache_lookup(const char *key, size_t klen, vc_cache_entry_t *e, uint64_t *epoch);
/* The same for req, whose page may vary: when key holds a marker, the
 * variant req's headers pick is looked up instead. used (VC_CACHE_KEY_MAX
 * bytes) receives the key read and *used_len its length: 0 if that
 * variant's key would not fit (not cached). */
int cache_lookup_for(h2o_req_t *req, const char *key, size_t klen, vc_cache_entry_t *e, uint64_t *epoch, char *used,
                     size_t *used_len);
/* Whether anything, an entry or a marker, is stored at key; *last_seq:
 * the last sequence number vc-cache has given an entry (0: unknown). */
int cache_has(const char *key, size_t klen, uint64_t *last_seq);
void cache_lookup_end(void);
/* Answers req from e (copied into the request's pool: e may go after),
 * with Cache-Status: status. */
void cache_serve(h2o_req_t *req, const vc_cache_entry_t *e, int64_t now, const char *status);
/* The reason phrase of a status a cache may store. */
const char *cache_reason_of(int status);
/* Adds Cache-Status; returns its index in the answer's headers. */
ssize_t cache_add_status(h2o_req_t *req, const char *value);
/* Adds a header to req's answer (copied). */
void cache_add_header(h2o_req_t *req, const char *name, size_t nlen, const char *value, size_t vlen);
/* Asks PHP whether e is still good: If-None-Match with its ETag (PHP's,
 * not one the cache made), If-Modified-Since with its Last-Modified, unless
 * the client sent conditionals of its own. 1 if any was added. */
int cache_add_validators(h2o_req_t *req, const vc_cache_entry_t *e);
/* Adds the headers of e and Age to req's answer, as a hit has them. */
void cache_add_entry_headers(h2o_req_t *req, const vc_cache_entry_t *e, int64_t now, int not_modified);

/* ---- cache_flight.c -------------------------------------------------------- */

typedef struct cache_flight cache_flight_t;
/* What a request that went to PHP for a flight holds: the flight, while it
 * leads it (NULL once it ended). In the request's pool. */
typedef struct cache_lead {
    cache_flight_t *fl;
} cache_lead_t;

typedef enum flight_end {
    FLIGHT_UNCACHEABLE, /* the answer may not be stored: the others go to PHP, and later ones do not wait */
    FLIGHT_ERROR,       /* PHP failed (5xx): the others get a stale entry if allowed, else go to PHP */
    FLIGHT_GONE,        /* the leader's client left, or its answer was cut: the next waiter leads */
} flight_end_t;

/* The flight for key (one is asking PHP, or has just answered), or NULL. */
cache_flight_t *flight_find(const char *key, size_t klen);
/* Its answer, if it has one that may still be served (fresh, and no purge
 * since it was asked for: epoch is the purge count now): 1 and *e. */
int flight_answer(cache_flight_t *fl, int64_t now, uint64_t epoch, vc_cache_entry_t *e);
/* Whether its request is still under way. */
int flight_running(const cache_flight_t *fl);
/* A new flight for key, led by req (which goes to PHP with a tap holding
 * the returned lead). epoch: the purge count before PHP was asked. */
cache_lead_t *flight_start(const char *key, size_t klen, h2o_req_t *req, uint64_t epoch);
/* A flight for key whose request another front sent (it holds the claim):
 * its waiters get the entry once it is stored, or one of them asks PHP
 * once the claim is gone. */
cache_flight_t *flight_remote(const char *key, size_t klen, h2o_req_t *req);
/* r waits for fl's answer (at most cache.lock_timeout, then goes to PHP);
 * rule: the site's rule for its path, or NULL. */
void flight_wait(cache_flight_t *fl, const seam_request_t *r, const vc_cache_rule_t *rule);
/* The leader's answer was stored: the waiters get it. entry is an entry's
 * bytes (vc_cache.h), malloc'd: the flight keeps it; key is where it was
 * stored: the flight's own, or a variant's (vary: the headers it varies on,
 * else ""), which a waiter gets only if its headers pick the same. */
void flight_stored(cache_lead_t *lead, void *entry, size_t len, const char *key, size_t klen, const char *vary);
void flight_failed(cache_lead_t *lead, flight_end_t why);
/* Whether key's answers were lately not storable (no waiting for them). */
int flight_hit_for_miss(const char *key, size_t klen);
/* Drops what is kept for key (an unsafe method changed it). */
void flight_forget(const char *key, size_t klen);

/* ---- cache_tap.c ----------------------------------------------------------- */

typedef struct cache_tap_args {
    const site_rt_t *site;
    const vc_cache_rule_t *rule; /* the site's rule for the path, or NULL */
    const char *key;             /* NULL: not stored */
    size_t klen;
    int may_store;      /* a GET that was looked up (not HEAD, not bypassed) */
    const char *fwd;    /* Cache-Status fwd= */
    const char *detail; /* why it bypassed, or NULL */
    cache_lead_t *lead; /* the flight it leads, or NULL */
    /* A stale entry's bytes to answer with if PHP fails (stale-if-error),
     * or NULL; copied. */
    const void *stale;
    size_t stale_len;
    /* PHP was asked with the stale entry's validators: its 304 means the
     * entry, refreshed, answers (RFC 9111 4.3.4). */
    int revalidate;
} cache_tap_args_t;

/* Sees PHP's answer to req: Cache-Status, offered to vc-cache if it may
 * be stored, the flight told. */
void cache_tap(front_t *f, h2o_req_t *req, const cache_tap_args_t *a);
/* A method other than GET and HEAD: the tags its answer purges (PHP's
 * vc_cache_purge_tags()) go to vc-cache; and for an unsafe method to key
 * (NULL: not one), once it succeeds, what is stored goes. */
void cache_tap_invalidator(front_t *f, const site_rt_t *site, h2o_req_t *req, const char *key, size_t klen);
/* Tags gathered from a header (cache_policy_tags' fn: cache_tag_list_add),
 * copied into pool's memory; the 64 first of at most 128 bytes. */
typedef struct cache_tag_list {
    char *tags[VC_CACHE_TAGS_MAX];
    size_t n;
    h2o_mem_pool_t *pool;
} cache_tag_list_t;
void cache_tag_list_add(void *arg, const char *tag, size_t len);

/* Sends a message to vc-cache's cache-in without waiting: dropped (and
 * counted) when its queue is full. */
struct Vc__CacheStore;
void cache_push(front_t *f, const struct Vc__CacheStore *cs);
/* Sends r (routed to PHP) on to the PHP backend, past the cache. */
int cache_to_php(const seam_request_t *r);

/* ---- cache_claims.c --------------------------------------------------------- */

/* Claims a page for this front's miss: 1 if this front may ask PHP (the
 * claim is its own now, or claims cannot be used), 0 if another live
 * front holds it. */
int claim_take(const char *key, size_t klen);
/* Whether another live front holds key's claim. */
int claim_held(const char *key, size_t klen);
/* Lets go of key's claim, if this front holds it. */
void claim_release(const char *key, size_t klen);

/* ---- cache_tombs.c ---------------------------------------------------------- */

/* An unsafe method made what is stored at key out of date: every entry
 * written up to sequence number seq (vc-cache's). Noted where every front
 * of the node sees it before the answer leaves. */
void cache_tomb_set(const char *key, size_t klen, uint64_t seq);
/* Whether the entry at key written as sequence number seq is out of date
 * by one. */
int cache_tomb_covers(const char *key, size_t klen, uint64_t seq);

/* ---- cache_vary.c ----------------------------------------------------------- */

/* The key of the variant req picks of base, for the varied headers names
 * ("a, b"): its length, or 0 if it does not fit cap. */
size_t cache_variant_key(h2o_req_t *req, const char *base, size_t blen, const char *names, size_t nlen, char *out,
                         size_t cap);
/* The length of the page's key in key (a variant's, or the page's own). */
size_t cache_base_len(const char *key, size_t klen);

/* ---- cache_recency.c ------------------------------------------------------- */

/* key's entry, in the older half of the eviction order, was hit: reported
 * to vc-cache within a second, to be evicted later. */
void cache_recency_note(front_t *f, h2o_req_t *req, const char *key, size_t klen);

/* ---- cache_admin.c --------------------------------------------------------- */

/* The PURGE API on the admin listener's pathconf (asked before /metrics). */
void cache_admin_register(front_t *f, h2o_pathconf_t *pathconf);

/* ---- cache_refresh.c ------------------------------------------------------- */

/* Starts a request of our own for r's page (GET, r's headers but
 * conditionals), whose answer refreshes key's stale entry; it leads a new
 * flight. 0, or -1 if it could not start. */
int cache_refresh(const seam_request_t *r, const vc_cache_rule_t *rule, const char *key, size_t klen, uint64_t epoch,
                  const vc_cache_entry_t *e);

#endif
