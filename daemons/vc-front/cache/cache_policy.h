/*
 * What the cache may store of an answer, and for how long (RFC 9111, with
 * the targeted fields of RFC 9213), from its status and headers alone.
 * Pure: no I/O, no clock (the caller passes now), so it is unit-tested and
 * fuzzed (fuzz/fuzz_cache.c) apart from the front.
 *
 * Safe by default: never an answer with Set-Cookie, `private`, `no-store`
 * or `no-cache` in Cache-Control, or `Vary: *`; any final status with an
 * explicit lifetime (206 and 304 aside), and with a site rule's lifetime
 * only the statuses RFC 9110 calls heuristically cacheable (no heuristic
 * freshness of our own). An answer that varies on request headers is stored
 * as a variant (Accept-Encoding aside: the front stores the body before it
 * is compressed, and compresses each hit for its client).
 *
 * The lifetime, first that applies: Velocity-Cache-Control (ours), then
 * Surrogate-Control (both targeted at us: they replace Cache-Control for
 * the cache, and never reach the client), then Cache-Control's s-maxage,
 * then max-age, then Expires (against Date, else now).
 */
#ifndef VC_FRONT_CACHE_POLICY_H
#define VC_FRONT_CACHE_POLICY_H

#include <stddef.h>
#include <stdint.h>

typedef struct cache_hdr {
    const char *name, *value;
    size_t name_len, value_len;
} cache_hdr_t;

typedef struct cache_decision {
    int store;        /* 1: may be stored */
    const char *why;  /* when not: a word for Cache-Status ("no-store", ...) */
    int64_t fresh_ms; /* lifetime */
    int64_t stale_ms; /* beyond it: served stale while one refresh runs */
    int64_t error_ms; /* beyond it: served stale when PHP fails (>= stale_ms) */
    int heuristic;    /* the lifetime is the site's rule's, not the answer's */
    int64_t age_ms;   /* its age when it came (RFC 9111 4.2.3: Age, or Date's distance from now) */
} cache_decision_t;

/* What the site says, beyond what answers say (cache.grace, and a path's
 * rule: vc_cache.h). */
typedef struct cache_policy_opts {
    int64_t grace_ms;   /* how long past its lifetime any answer may be served stale while refreshed,
                           unless it forbids it */
    int64_t ttl_ms;     /* the lifetime of an answer that gives none (else not stored); -1: none */
    int64_t max_ttl_ms; /* no lifetime is longer; -1: no cap */
} cache_policy_opts_t;

/* The decision for an answer of `status` with headers h[0..n). now_ms is
 * the wall clock (for Expires). */
void cache_policy_decide(int status, const cache_hdr_t *h, size_t n, int64_t now_ms, const cache_policy_opts_t *o,
                         cache_decision_t *out);

#define CACHE_VARY_MAX 8        /* headers an answer may vary on and be stored */
#define CACHE_VARY_NAME_MAX 64  /* bytes of one such header's name */
#define CACHE_VARY_LIST_MAX 600 /* the normalised list: 8 x (64 + ", ") and more */

/* The request headers the answer's Vary fields name, but Accept-Encoding:
 * lower case, sorted, unique, ", " between, into out (NUL-ended). Returns
 * its length (0: none), or SIZE_MAX if it may not be stored that way
 * (`*`, more than CACHE_VARY_MAX names, a name too long or not a token). */
size_t cache_policy_vary_names(const cache_hdr_t *h, size_t n, char *out, size_t cap);

/* Whether an answer of this status may be stored with a lifetime it
 * gives itself (RFC 9111 3: any final status but 206 and 304, which a
 * cache must understand to store). */
int cache_policy_status_storable(int status);
/* Whether it may be stored with a lifetime it does not give (a site's
 * rule's ttl): the statuses RFC 9110 15.1 calls heuristically cacheable. */
int cache_policy_status_heuristic(int status);

/* Headers the cache reads and the client never sees: our targeted
 * control, Surrogate-Control, and the tag headers. */
int cache_policy_is_ours(const char *name, size_t len);

/* Whether name is a tag header (Surrogate-Key, Cache-Tag, xkey). Tags are
 * separated by spaces (Surrogate-Key, xkey) or commas (Cache-Tag): both
 * are accepted in each. */
int cache_policy_is_tag_header(const char *name, size_t len);
/* Splits a tag header's value: calls fn for each tag, at most max. */
void cache_policy_tags(const char *value, size_t len, size_t max, void (*fn)(void *arg, const char *tag, size_t len),
                       void *arg);

/* The value of directive name in a Cache-Control-like field: 1 and *secs
 * (or -1 when it has no number) if present, else 0. */
int cache_policy_directive(const char *value, size_t len, const char *name, int64_t *secs);

/* A Range header's value against a body of size bytes (RFC 9110 14.2):
 * 1 with [*first, *last] for one satisfiable range; -1 when none can be
 * (a 416); 0 to send the whole body (bad syntax, another unit, or more
 * than one range: no multipart answers from the cache). */
int cache_policy_range(const char *value, size_t len, uint64_t size, uint64_t *first, uint64_t *last);

#endif
