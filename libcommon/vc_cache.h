/*
 * vc_cache: the response cache's contract between vc-cache (the only
 * writer) and the fronts (readers): its settings, the key of an answer,
 * and the layout of an entry in LMDB.
 *
 * Databases in the node's LMDB environment (vc_store.h), all written by
 * vc-cache alone:
 *   cache       key -> entry (below)
 *   cache_tags  tag NUL hash(key) -> key (a purge by tag walks tag NUL)
 *   cache_seq   big-endian u64 seq -> key (eviction: the lowest first; an
 *               entry hit lately gets a new seq, so the least recently
 *               used go first)
 *   cache_meta  "entries", "bytes", "seq", "epoch", "soft_tags", "soft_all"
 *               -> u64 (host order)
 *   cache_soft  tag -> i64 ms: a soft purge of the tag, not yet applied to
 *               each entry (vc-cache does so in the background)
 *
 * An entry is stale, whatever its fresh_ms, if it was stored at or before
 * "soft_all", or before the cache_soft time of one of its tags: a soft
 * purge of a tag or of everything is one row, so it commits at once
 * however many entries it covers.
 *
 * "epoch" counts purges: a front that holds an answer in memory (one
 * request's answer served to the others that waited for it) serves it
 * only while the epoch it read before asking PHP is still the epoch, so
 * that after a purge returns no request gets what it purged.
 *
 * Times are the wall clock in ms: fresh until fresh_ms (0 once soft
 * purged); served stale while one refresh runs until stale_ms
 * (stale-while-revalidate, cache.grace); served stale when PHP fails until
 * error_ms (stale-if-error). stored_ms <= fresh_ms <= stale_ms <= error_ms
 * as written (a soft purge zeroes fresh_ms alone).
 *
 * An entry, little-endian, every length checked by the reader (LMDB is
 * outside input to a reader: another version, or a bug, may have written
 * it):
 *   u32 magic  u32 status  i64 stored_ms  i64 fresh_ms  i64 stale_ms
 *   i64 error_ms  u64 seq    u32 nheaders  u32 ntags  u32 body_len
 *   nheaders x (u16 name_len, u32 value_len, name, value)
 *   ntags x (u16 len, tag)
 *   body
 */
#ifndef VC_CACHE_H
#define VC_CACHE_H

#include "vc_settings.h"

#include <stddef.h>
#include <stdint.h>

#define VC_DB_CACHE "cache"
#define VC_DB_CACHE_TAGS "cache_tags"
#define VC_DB_CACHE_SEQ "cache_seq"
#define VC_DB_CACHE_META "cache_meta"
#define VC_CACHE_META_SEQ "seq" /* the last sequence number given an entry */
#define VC_CACHE_META_EPOCH "epoch"
#define VC_DB_CACHE_SOFT "cache_soft"
/* vc-cache: the purges from other nodes applied here, ORIGIN "\0" ID ->
 * u64 wall ms when applied, kept cluster.purge_keep (a purge the stream
 * delivers again is not applied twice, across restarts too). */
#define VC_DB_CACHE_APPLIED "cache_applied"
#define VC_CACHE_META_SOFT_TAGS "soft_tags" /* rows in cache_soft */
#define VC_CACHE_META_SOFT_ALL "soft_all"   /* ms of the last soft purge of everything */
/* A cluster's node: its entries answer only while vc_boot_ms() is before
 * this lease (ms). vc-mesh renews it each heartbeat while the node is
 * linked, and sets 0 (held) when it may have missed purges, until it has
 * replayed them (docs/cluster.md). A front checks it at every lookup, so a
 * node whose processes stood still (a pause, a stall, SIGSTOP) answers
 * nothing from its cache when it wakes, before vc-mesh has even run.
 * Read by the fronts of a cluster's node only. */
#define VC_CACHE_META_LEASE "lease"

#define VC_CACHE_ENTRY_MAGIC 0x32454356u /* "VCE2": an older entry is a miss */
#define VC_CACHE_KEY_MAX 511             /* LMDB's key limit: a longer URL is not cached */
#define VC_CACHE_TAG_MAX 128             /* a longer tag is dropped */
#define VC_CACHE_TAGS_MAX 64             /* tags an answer may give */

/* The "cache.*" settings (settings/vc_cache_settings.c). */
typedef struct cache_settings {
    int enabled;            /* cache.enabled: off for every site */
    int64_t max_size;       /* bytes of entries kept, least recent first out */
    int64_t max_object;     /* a larger answer is not stored */
    char **session_cookies; /* a request with one of these bypasses */
    size_t nsession_cookies;
    char **strip_params; /* query parameters not in the key ("utm_*": prefix) */
    size_t nstrip_params;
    int64_t grace_ms;        /* stale served while refreshed, unless the answer forbids it */
    int64_t lock_timeout_ms; /* a miss waits this long for another's answer */
    int64_t hit_for_miss_ms; /* an uncacheable page's misses do not wait, this long */
    int debug;               /* Cache-Status says the key */
    char *purge_token;       /* the admin listener's PURGE API; off when empty */
} cache_settings_t;

extern const vc_section_t vc_cache_settings;

static inline const cache_settings_t *vc_cache_settings_of(const struct vc_config *cfg)
{
    return (const cache_settings_t *)vc_config_section(cfg, &vc_cache_settings);
}

/* A site's rule for the paths under a prefix (site.cache_rules, one
 * string each): "PREFIX off" (never looked up nor stored), or "PREFIX"
 * followed by any of sessions (a request with a session cookie is looked
 * up and stored like any other), ttl=D (the lifetime of an answer that gives none:
 * loosens), max_ttl=D (no answer lives longer: tightens), grace=D (this
 * path's cache.grace). D is a duration ("90s", "10m"). */
typedef struct vc_cache_rule {
    char prefix[256];
    int off;
    int sessions; /* "sessions": a session cookie does not bypass here (the site vouches its pages are not per
                     visitor) */
    int64_t ttl_ms, max_ttl_ms, grace_ms; /* -1: not set */
} vc_cache_rule_t;

/* 0, or -1 with what is wrong in err. */
int vc_cache_rule_parse(const char *s, vc_cache_rule_t *out, char *err, size_t errlen);

/* The key of an answer: "scheme://host/path?query" with the host in lower
 * case without its scheme's default port, and the query's parameters
 * sorted with the strip list's left out (a tracking parameter does not
 * make a page of its own). The raw path is kept as the client sent it:
 * PHP sees it so. Writes at most cap bytes into out; returns the key's
 * length, or 0 if it does not fit (not cached). */
size_t vc_cache_key(const char *scheme, const char *host, size_t hlen, const char *path, size_t plen, const char *query,
                    size_t qlen, char *const *strip, size_t nstrip, char *out, size_t cap);

/* Variants (an answer with Vary on request headers, Accept-Encoding
 * aside): the entry at the page's key is a marker (status 0, one header,
 * "Vary: a, b": the names, lower case, sorted), and each variant is stored
 * under key SEP value-of-a SEP value-of-b SEP, the values as the request
 * sent them (several fields joined by ", "), trimmed. */
#define VC_CACHE_VARIANT_SEP '\x01'
#define VC_CACHE_VARY_LIST_MAX 600

/* The variant key for base (a key) and names ("a, b"), given each name's
 * value (values[i], lens[i]; NULL: the request has none). Returns its
 * length, or 0 if it does not fit cap (not cached). */
size_t vc_cache_variant_key(const char *base, size_t blen, const char *const *values, const size_t *lens, size_t n,
                            char *out, size_t cap);

/* A header of an entry; name and value point into the entry's bytes. */
typedef struct vc_cache_header {
    const char *name, *value;
    size_t name_len, value_len;
} vc_cache_header_t;

/* An entry as read from LMDB. Every pointer is into the bytes it was
 * parsed from: valid as long as they are (an LMDB value: until its
 * transaction ends). */
typedef struct vc_cache_entry {
    uint32_t status;
    int64_t stored_ms, fresh_ms, stale_ms, error_ms;
    uint64_t seq;
    uint32_t nheaders, ntags;
    const unsigned char *headers, *tags; /* walked with the _next calls */
    const char *body;
    size_t body_len;
    const void *bytes; /* the whole entry, as parsed */
    size_t len;
} vc_cache_entry_t;

/* 0, or -1 if the bytes are not a whole, well-formed entry. */
int vc_cache_entry_parse(const void *bytes, size_t len, vc_cache_entry_t *e);
/* The header or tag after *pos (start at 0): 1, or 0 past the last. Only
 * for an entry vc_cache_entry_parse accepted. */
int vc_cache_entry_header(const vc_cache_entry_t *e, size_t *pos, uint32_t *i, vc_cache_header_t *h);
int vc_cache_entry_tag(const vc_cache_entry_t *e, size_t *pos, uint32_t *i, const char **tag, size_t *len);

/* Writing an entry: its size, then the bytes into a buffer of that size. */
typedef struct vc_cache_entry_in {
    uint32_t status;
    int64_t stored_ms, fresh_ms, stale_ms, error_ms;
    uint64_t seq;
    size_t nheaders;
    const vc_cache_header_t *headers;
    size_t ntags;
    const char *const *tags;
    const size_t *tag_lens;
    const void *body;
    size_t body_len;
} vc_cache_entry_in_t;
size_t vc_cache_entry_size(const vc_cache_entry_in_t *in);
void vc_cache_entry_write(const vc_cache_entry_in_t *in, void *out);

/* Changes one time or the sequence of an entry's bytes in place (a copy:
 * an LMDB value is read-only). Only for bytes vc_cache_entry_parse took. */
void vc_cache_entry_set_fresh(void *bytes, int64_t fresh_ms);
void vc_cache_entry_set_seq(void *bytes, uint64_t seq);

#endif
