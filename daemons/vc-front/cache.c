/*
 * The cache backend: a GET or HEAD for a PHP script is looked up in the
 * cache (LMDB, written by vc-cache alone) before it goes to PHP. A fresh
 * entry is answered here, in the event loop, without leaving the front;
 * anything else goes on to PHP with a tap on its answer (an h2o prefilter,
 * so it sees PHP's bytes before compression) that offers a storable
 * answer to vc-cache once it has been sent whole. Every answer that passed
 * the cache says so in Cache-Status (RFC 9211).
 *
 * Bypassed (straight to PHP, never stored): a request with Authorization,
 * with a session cookie (cache.session_cookies), or with Range (a cached
 * body is not cut into ranges yet); a site with cache = false.
 */
#include "cache_policy.h"
#include "handler.h"
#include "seam.h"
#include "vc_cache.h"
#include "vc_log.h"
#include "vc_store.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cache.pb-c.h"

/* How often a front that found no cache database looks again. */
#define REOPEN_MS 1000
/* Offers queued for vc-cache past this are dropped (the next miss offers
 * again): a front never waits for the cache. */
#define OFFER_HWM 1000
/* Headers an answer may have for the cache to keep it. */
#define MAX_HEADERS 100

/* One per front process: the cache is read from the event loop only. */
static struct {
    front_t *f;
    const cache_settings_t *cfg;
    vc_store_t *store;
    MDB_txn *txn; /* reset between lookups, renewed for the next */
    MDB_dbi dbi;
    int dbi_open;
    uint64_t next_try_ms;
    void *push; /* to vc-cache's cache-in */
} rt;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- reading the cache ----------------------------------------------------- */

/* Ready to look up: the store open and the cache's database found. The
 * store is opened at the first request, in this process (never before a
 * fork). */
static int ready(void)
{
    if (rt.dbi_open)
        return 1;
    uint64_t now = vc_mono_ms();
    if (now < rt.next_try_ms)
        return 0;
    rt.next_try_ms = now + REOPEN_MS;
    if (rt.store == NULL) {
        char err[512];
        const vc_config_t *cfg = rt.f->d.cfg;
        rt.store = vc_store_open(cfg->state_dir, (size_t)cfg->store.map_size, err, sizeof(err));
        if (rt.store == NULL) {
            vc_log(VC_LOG_ERR, "cache", "the cache is not read: %s", err);
            return 0;
        }
    }
    MDB_txn *t;
    if (mdb_txn_begin(vc_store_env(rt.store), NULL, MDB_RDONLY, &t) != 0)
        return 0;
    /* Not there until vc-cache has made it: every request is a miss. */
    int rc = mdb_dbi_open(t, VC_DB_CACHE, 0, &rt.dbi);
    if (rc == 0) {
        mdb_txn_commit(t); /* keeps the handle for later transactions */
        rt.dbi_open = 1;
        return 1;
    }
    mdb_txn_abort(t);
    return 0;
}

/* A read transaction for one lookup; vc-cache may have grown the map. */
static MDB_txn *begin(void)
{
    MDB_env *env = vc_store_env(rt.store);
    for (int i = 0; i < 2; i++) {
        int rc = rt.txn ? mdb_txn_renew(rt.txn) : mdb_txn_begin(env, NULL, MDB_RDONLY, &rt.txn);
        if (rc == 0)
            return rt.txn;
        if (rt.txn) {
            mdb_txn_abort(rt.txn);
            rt.txn = NULL;
        }
        if (rc != MDB_MAP_RESIZED || mdb_env_set_mapsize(env, 0) != 0)
            break;
    }
    return NULL;
}

/* Whether key has an entry now. */
static int stored(const char *key, size_t klen)
{
    MDB_txn *txn = ready() ? begin() : NULL;
    if (txn == NULL)
        return 0;
    MDB_val k = {klen, (void *)key}, v;
    int found = mdb_get(txn, rt.dbi, &k, &v) == 0;
    mdb_txn_reset(txn);
    return found;
}

/* ---- a hit --------------------------------------------------------------- */

static const char *reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 304: return "Not Modified";
    case 308: return "Permanent Redirect";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 410: return "Gone";
    case 414: return "URI Too Long";
    case 501: return "Not Implemented";
    default: return "";
    }
}

/* An entity tag without its weak prefix (If-None-Match compares weakly,
 * RFC 9110 13.1.2). */
static h2o_iovec_t opaque(const char *p, size_t n)
{
    if (n >= 2 && p[0] == 'W' && p[1] == '/')
        p += 2, n -= 2;
    return h2o_iovec_init(p, n);
}

static int etag_matches(h2o_iovec_t inm, const char *etag, size_t elen)
{
    h2o_iovec_t want = opaque(etag, elen);
    for (size_t i = 0; i < inm.len;) {
        while (i < inm.len && (inm.base[i] == ' ' || inm.base[i] == ','))
            i++;
        size_t start = i;
        while (i < inm.len && inm.base[i] != ',')
            i++;
        size_t end = i;
        while (end > start && inm.base[end - 1] == ' ')
            end--;
        h2o_iovec_t got = opaque(inm.base + start, end - start);
        if ((end - start == 1 && inm.base[start] == '*') || h2o_memis(got.base, got.len, want.base, want.len))
            return 1;
    }
    return 0;
}

/* Whether the client already has this entry (RFC 9110 13.2.2): by its
 * ETag when it sent If-None-Match, else by Last-Modified. */
static int not_modified(h2o_req_t *req, const vc_cache_entry_t *e)
{
    ssize_t inm = h2o_find_header(&req->headers, H2O_TOKEN_IF_NONE_MATCH, -1);
    ssize_t ims = inm == -1 ? h2o_find_header(&req->headers, H2O_TOKEN_IF_MODIFIED_SINCE, -1) : -1;
    if (inm == -1 && ims == -1)
        return 0;
    vc_cache_header_t h;
    size_t pos = 0;
    uint32_t i = 0;
    while (vc_cache_entry_header(e, &pos, &i, &h)) {
        if (inm != -1 && h.name_len == 4 && strncasecmp(h.name, "etag", 4) == 0)
            return etag_matches(req->headers.entries[inm].value, h.value, h.value_len);
        if (ims != -1 && h.name_len == 13 && strncasecmp(h.name, "last-modified", 13) == 0) {
            h2o_iovec_t since = req->headers.entries[ims].value;
            /* Same text: the date the client got from us. */
            return h2o_memis(since.base, since.len, h.value, h.value_len);
        }
    }
    return 0;
}

/* Headers a 304 keeps (RFC 9110 15.4.5). */
static int kept_in_304(const char *n, size_t l)
{
    static const char *const keep[] = {"etag", "cache-control", "expires", "vary", "last-modified", "content-location"};
    for (size_t i = 0; i < VC_ARRAY_SIZE(keep); i++)
        if (l == strlen(keep[i]) && strncasecmp(n, keep[i], l) == 0)
            return 1;
    return 0;
}

static void add_header(h2o_req_t *req, const char *name, size_t nlen, const char *value, size_t vlen)
{
    char *lc = h2o_mem_alloc_pool(&req->pool, nlen + 1);
    for (size_t k = 0; k < nlen; k++)
        lc[k] = (char)h2o_tolower(name[k]);
    lc[nlen] = '\0';
    char *orig = h2o_strdup(&req->pool, name, nlen).base;
    h2o_iovec_t v = h2o_strdup(&req->pool, value, vlen);
    h2o_add_header_by_str(&req->pool, &req->res.headers, lc, nlen, 1, orig, v.base, v.len);
}

/* Adds Cache-Status: value; returns its index in the headers. */
static ssize_t add_cache_status(h2o_req_t *req, const char *value)
{
    h2o_iovec_t s = h2o_strdup(&req->pool, value, SIZE_MAX);
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("cache-status"), 0, "Cache-Status", s.base, s.len);
    return (ssize_t)req->res.headers.size - 1;
}

/* Answers req from e (which lives in the read transaction: everything is
 * copied into the request's pool before it ends). */
static void serve(h2o_req_t *req, const vc_cache_entry_t *e, int64_t now)
{
    int nm = not_modified(req, e);
    req->res.status = nm ? 304 : (int)e->status;
    req->res.reason = reason_of(req->res.status);
    vc_cache_header_t h;
    size_t pos = 0;
    uint32_t i = 0;
    while (vc_cache_entry_header(e, &pos, &i, &h))
        if (!nm || kept_in_304(h.name, h.name_len))
            add_header(req, h.name, h.name_len, h.value, h.value_len);
    char age[24];
    int alen = snprintf(age, sizeof(age), "%lld", (long long)((now - e->stored_ms) / 1000));
    add_header(req, "Age", 3, age, (size_t)alen);
    char status[64];
    snprintf(status, sizeof(status), "Velocity; hit; ttl=%lld", (long long)((e->fresh_ms - now) / 1000));
    add_cache_status(req, status);
    if (nm || e->status == 204) {
        h2o_send_inline(req, "", 0);
        return;
    }
    req->res.content_length = e->body_len;
    h2o_send_inline(req, e->body, e->body_len); /* copies the body */
}

/* ---- a miss: the tap on PHP's answer ---------------------------------------- */

typedef struct tap {
    h2o_req_prefilter_t super;
    front_t *f;
    const char *key; /* in the request's pool */
    size_t klen;
    int may_store; /* a GET that was looked up (not HEAD, not bypassed) */
    const char *fwd;
    const char *detail; /* why it bypassed */
} tap_t;

typedef struct keeper {
    h2o_ostream_t super;
    tap_t *tap;
    cache_decision_t dec;
    cache_hdr_t hs[MAX_HEADERS];
    size_t nh;
    char *tags[VC_CACHE_TAGS_MAX];
    size_t ntags;
    char *body;
    size_t len, cap;
    int checked, dropped, sent;
    ssize_t status_at; /* the Cache-Status header, to correct */
} keeper_t;

static void collect_tag(void *arg, const char *tag, size_t len)
{
    keeper_t *k = arg;
    if (k->ntags < VC_CACHE_TAGS_MAX && len <= VC_CACHE_TAG_MAX)
        k->tags[k->ntags++] = h2o_strdup(NULL, tag, len).base;
}

/* Not stored, and not the client's: framing, the front's own, and what a
 * hit makes anew. */
static int not_kept(const h2o_header_t *h)
{
    const h2o_iovec_t *n = h->name;
    return h2o_lcstris(n->base, n->len, H2O_STRLIT("strict-transport-security")) ||
           h2o_lcstris(n->base, n->len, H2O_STRLIT("cache-status")) || h2o_lcstris(n->base, n->len, H2O_STRLIT("age"));
}

/* Sends a message to vc-cache without waiting: dropped (and counted)
 * when its queue is full. */
static void push(front_t *f, const Vc__CacheStore *cs)
{
    if (rt.push == NULL) {
        char *ep = vc_config_endpoint(f->d.cfg, "cache-in");
        rt.push = vc_socket(f->d.zctx, ZMQ_PUSH, ep, 0);
        if (rt.push) {
            int hwm = OFFER_HWM;
            zmq_setsockopt(rt.push, ZMQ_SNDHWM, &hwm, sizeof(hwm));
        } else {
            vc_log(VC_LOG_ERR, "cache", "zmq_connect() failed while linking to vc-cache at \"%s\": %s", ep,
                   zmq_strerror(errno));
        }
        free(ep);
        if (rt.push == NULL)
            return;
    }
    size_t len = vc__cache_store__get_packed_size(cs);
    uint8_t *buf = vc_malloc(len);
    vc__cache_store__pack(cs, buf);
    if (zmq_send(rt.push, buf, len, ZMQ_DONTWAIT) < 0)
        f->stats.cache_offers_dropped++;
    else
        f->stats.cache_offers++;
    free(buf);
}

static void offer(keeper_t *k, h2o_req_t *req)
{
    tap_t *t = k->tap;
    Vc__CacheHeader hv[MAX_HEADERS];
    Vc__CacheHeader *hp[MAX_HEADERS];
    for (size_t i = 0; i < k->nh; i++) {
        vc__cache_header__init(&hv[i]);
        hv[i].name = (char *)k->hs[i].name;
        hv[i].value.data = (uint8_t *)k->hs[i].value;
        hv[i].value.len = k->hs[i].value_len;
        hp[i] = &hv[i];
    }
    int64_t now = wall_ms();
    Vc__CacheStore cs = VC__CACHE_STORE__INIT;
    cs.key.data = (uint8_t *)t->key;
    cs.key.len = t->klen;
    cs.status = (uint32_t)req->res.status;
    cs.headers = hp;
    cs.n_headers = k->nh;
    cs.body.data = (uint8_t *)k->body;
    cs.body.len = k->len;
    cs.stored_ms = now;
    cs.fresh_ms = now + k->dec.fresh_ms;
    cs.stale_ms = cs.fresh_ms + k->dec.stale_ms;
    cs.tags = k->tags;
    cs.n_tags = k->ntags;
    push(t->f, &cs);
}

static void keeper_free(keeper_t *k)
{
    free(k->body);
    k->body = NULL;
    for (size_t i = 0; i < k->ntags; i++)
        free(k->tags[i]);
    k->ntags = 0;
    k->dropped = 1;
}

/* The Cache-Status header says "stored" no more. */
static void not_stored(keeper_t *k, h2o_req_t *req, const char *why)
{
    keeper_free(k);
    /* Only while the headers have not left (the first send): a streamed
     * answer's header never said "stored". */
    if (k->status_at < 0 || (size_t)k->status_at >= req->res.headers.size || k->sent)
        return;
    char v[96];
    int n = snprintf(v, sizeof(v), "Velocity; fwd=%s; detail=%s", k->tap->fwd, why);
    req->res.headers.entries[k->status_at].value = h2o_strdup(&req->pool, v, (size_t)n);
}

static void on_keeper_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n, h2o_send_state_t state)
{
    keeper_t *k = (keeper_t *)self;
    if (!k->checked) {
        /* The status is final only now (backend.c shows h2o's filters a
         * 200 for a 403 or 404, so they compress those too). */
        k->checked = 1;
        if (!cache_policy_status_ok(req->res.status))
            not_stored(k, req, "status");
    }
    const cache_settings_t *cfg = rt.cfg;
    for (size_t i = 0; i < n && !k->dropped; i++) {
        if (k->len + bufs[i].len > (size_t)cfg->max_object) {
            not_stored(k, req, "too-large");
            break;
        }
        if (k->len + bufs[i].len > k->cap) {
            k->cap = (k->len + bufs[i].len) * 2;
            k->body = vc_realloc(k->body, k->cap);
        }
        memcpy(k->body + k->len, bufs[i].base, bufs[i].len);
        k->len += bufs[i].len;
    }
    if (state == H2O_SEND_STATE_ERROR && !k->dropped)
        keeper_free(k); /* cut short: never stored */
    if (state == H2O_SEND_STATE_FINAL && !k->dropped) {
        offer(k, req);
        keeper_free(k);
    }
    k->sent = 1;
    h2o_ostream_send_next(&k->super, req, bufs, n, state);
}

static void on_keeper_stop(h2o_ostream_t *self, h2o_req_t *req)
{
    keeper_free((keeper_t *)self);
}

static void on_tap_setup(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    tap_t *t = (tap_t *)self;
    cache_decision_t d = {.store = 0, .why = t->detail};
    cache_hdr_t hs[MAX_HEADERS], all[MAX_HEADERS];
    size_t nh = 0, na = 0;
    keeper_t *k = NULL;
    if (t->may_store && req->res.headers.size > MAX_HEADERS) {
        d.why = "headers";
    } else if (t->may_store) {
        /* Decided on every header PHP sent; stored as PHP sent it (h2o's
         * filters, later, may compress it for this client) with its
         * headers but ours and the front's own. */
        for (size_t i = 0; i < req->res.headers.size; i++) {
            const h2o_header_t *h = &req->res.headers.entries[i];
            const char *name = h->orig_name ? h->orig_name : h->name->base;
            all[na++] = (cache_hdr_t){name, h->value.base, h->name->len, h->value.len};
            if (!cache_policy_is_ours(h->name->base, h->name->len) && !not_kept(h))
                hs[nh++] = all[na - 1];
        }
        cache_policy_decide(req->res.status, all, na, wall_ms(), &d);
    }
    if (d.store && req->res.content_length != SIZE_MAX && req->res.content_length > (size_t)rt.cfg->max_object) {
        d.store = 0;
        d.why = "too-large";
    }
    if (d.store) {
        k = (keeper_t *)h2o_add_ostream(req, sizeof(*k), slot);
        memset((char *)k + sizeof(k->super), 0, sizeof(*k) - sizeof(k->super));
        k->super.do_send = on_keeper_send;
        k->super.stop = on_keeper_stop;
        k->tap = t;
        k->dec = d;
        memcpy(k->hs, hs, nh * sizeof(*hs));
        k->nh = nh;
        k->status_at = -1;
        for (size_t i = 0; i < req->res.headers.size; i++) {
            const h2o_header_t *h = &req->res.headers.entries[i];
            if (cache_policy_is_tag_header(h->name->base, h->name->len))
                cache_policy_tags(h->value.base, h->value.len, VC_CACHE_TAGS_MAX, collect_tag, k);
        }
        slot = &k->super.next;
    }
    /* Ours never reach the client (RFC 9213: targeted at this cache). */
    for (size_t i = req->res.headers.size; i-- > 0;)
        if (cache_policy_is_ours(req->res.headers.entries[i].name->base, req->res.headers.entries[i].name->len))
            h2o_delete_header(&req->res.headers, (ssize_t)i);
    char v[96];
    if (d.store && req->res.content_length == SIZE_MAX)
        snprintf(v, sizeof(v), "Velocity; fwd=%s", t->fwd); /* streamed: stored if it fits */
    else if (d.store)
        snprintf(v, sizeof(v), "Velocity; fwd=%s; stored", t->fwd);
    else
        snprintf(v, sizeof(v), "Velocity; fwd=%s; detail=%s", t->fwd, d.why ? d.why : "none");
    ssize_t at = add_cache_status(req, v);
    if (k)
        k->status_at = at;
    h2o_setup_next_prefilter(self, req, slot);
}

static void add_tap(front_t *f, h2o_req_t *req, const char *key, size_t klen, int may_store, const char *fwd,
                    const char *detail)
{
    tap_t *t = (tap_t *)h2o_add_prefilter(req, sizeof(*t));
    t->super.on_setup_ostream = on_tap_setup;
    t->f = f;
    t->key = key ? h2o_strdup(&req->pool, key, klen).base : NULL;
    t->klen = klen;
    t->may_store = may_store;
    t->fwd = fwd;
    t->detail = detail;
}

/* ---- an unsafe method: the entry goes ------------------------------------- */

typedef struct invalidator {
    h2o_req_prefilter_t super;
    front_t *f;
    const char *key;
    size_t klen;
} invalidator_t;

/* RFC 9111 4.4: a POST, PUT, PATCH or DELETE that did not fail makes
 * what is stored for its URL stale; here it is dropped. */
static void on_invalidator_setup(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    invalidator_t *v = (invalidator_t *)self;
    /* Only for what is stored: a POST to a page never cached (a form's
     * target, an API) costs a lookup here, not a write in vc-cache. */
    if (req->res.status >= 200 && req->res.status < 400 && stored(v->key, v->klen)) {
        Vc__CacheStore cs = VC__CACHE_STORE__INIT;
        cs.key.data = (uint8_t *)v->key;
        cs.key.len = v->klen;
        cs.invalidate = 1;
        push(v->f, &cs);
    }
    h2o_setup_next_prefilter(self, req, slot);
}

static int unsafe(h2o_iovec_t m)
{
    return h2o_memis(m.base, m.len, H2O_STRLIT("POST")) || h2o_memis(m.base, m.len, H2O_STRLIT("PUT")) ||
           h2o_memis(m.base, m.len, H2O_STRLIT("PATCH")) || h2o_memis(m.base, m.len, H2O_STRLIT("DELETE"));
}

/* ---- the backend ----------------------------------------------------------- */

/* Whether a Cookie header's value names one of the session cookies. */
static int has_session(h2o_iovec_t c)
{
    const cache_settings_t *cfg = rt.cfg;
    for (size_t s = 0; s < cfg->nsession_cookies; s++) {
        size_t nl = strlen(cfg->session_cookies[s]);
        /* NAME= at the start or after "; " */
        for (size_t at = 0; at + nl < c.len; at++)
            if ((at == 0 || c.base[at - 1] == ' ' || c.base[at - 1] == ';') &&
                memcmp(c.base + at, cfg->session_cookies[s], nl) == 0 && c.base[at + nl] == '=')
                return 1;
    }
    return 0;
}

/* The reason a request skips the cache, or NULL: one pass over its
 * headers (h2o keeps their names in lower case). */
static const char *bypass_reason(h2o_req_t *req)
{
    /* Headers frameworks read instead of the URL or Host, which are not in
     * the key: an answer made from them must not be served to others
     * (cache poisoning). */
    static const char *const unkeyed[] = {"x-forwarded-host",   "x-original-url",         "x-rewrite-url",
                                          "x-forwarded-server", "x-http-method-override", "x-http-method",
                                          "x-method-override"};
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        if (h->name == &H2O_TOKEN_AUTHORIZATION->buf)
            return "authorization";
        if (h->name == &H2O_TOKEN_RANGE->buf)
            return "range";
        if (h->name == &H2O_TOKEN_COOKIE->buf && has_session(h->value))
            return "session";
        if (h->name->len > 2 && h->name->base[0] == 'x' && h->name->base[1] == '-')
            for (size_t u = 0; u < VC_ARRAY_SIZE(unkeyed); u++)
                if (h2o_memis(h->name->base, h->name->len, unkeyed[u], strlen(unkeyed[u])))
                    return "unkeyed-header";
    }
    return NULL;
}

static int site_init(front_t *f, site_rt_t *s, void **state)
{
    rt.f = f;
    rt.cfg = vc_cache_settings_of(f->d.cfg);
    return 0;
}

/* The request's key into key (VC_CACHE_KEY_MAX bytes): its length, or 0 if
 * it does not fit. */
static size_t key_of(const seam_request_t *r, char *key)
{
    h2o_req_t *req = r->req;
    size_t plen = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    const char *q = req->query_at != SIZE_MAX ? req->path.base + req->query_at + 1 : "";
    size_t qlen = req->query_at != SIZE_MAX ? req->path.len - req->query_at - 1 : 0;
    return vc_cache_key(r->https ? "https" : "http", req->authority.base, req->authority.len, req->path.base, plen, q,
                        qlen, rt.cfg->strip_params, rt.cfg->nstrip_params, key, VC_CACHE_KEY_MAX);
}

static int take(const seam_request_t *r, void *state)
{
    h2o_req_t *req = r->req;
    if (r->kind != ROUTE_PHP || !rt.cfg->enabled || !r->site->conf->cache)
        return 0;
    int head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
    int get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"));
    front_t *f = r->f;
    char key[VC_CACHE_KEY_MAX];
    size_t klen;
    if (!head && !get) {
        /* Whoever sends it (a session, Authorization): the stored answer
         * is out of date once it succeeds. */
        if (unsafe(req->method) && (klen = key_of(r, key)) > 0) {
            invalidator_t *v = (invalidator_t *)h2o_add_prefilter(req, sizeof(*v));
            v->super.on_setup_ostream = on_invalidator_setup;
            v->f = f;
            v->key = h2o_strdup(&req->pool, key, klen).base;
            v->klen = klen;
        }
        return 0;
    }
    const char *why = bypass_reason(req);
    if (why) {
        f->stats.cache_bypass++;
        add_tap(f, req, NULL, 0, 0, "bypass", why);
        return 0;
    }
    if ((klen = key_of(r, key)) == 0) {
        f->stats.cache_bypass++;
        add_tap(f, req, NULL, 0, 0, "bypass", "key-too-long");
        return 0;
    }
    /* A Host in another case, or with its default port, shares the key of
     * its plain form: it may read that entry, but what PHP makes of it is
     * not stored (an application that prints its Host would otherwise
     * serve "EXAMPLE.com:80" to everyone). */
    size_t slen = strlen(r->https ? "https" : "http") + 3;
    int host_plain =
        klen >= slen + req->authority.len && memcmp(key + slen, req->authority.base, req->authority.len) == 0;
    const char *fwd = "uri-miss";
    MDB_txn *txn = ready() ? begin() : NULL;
    if (txn) {
        MDB_val k = {klen, key}, v;
        vc_cache_entry_t e;
        int64_t now = wall_ms();
        if (mdb_get(txn, rt.dbi, &k, &v) == 0 && vc_cache_entry_parse(v.mv_data, v.mv_size, &e) == 0) {
            if (now < e.fresh_ms) {
                f->stats.cache_hits++;
                serve(req, &e, now);
                mdb_txn_reset(txn);
                return 1;
            }
            fwd = "stale";
        }
        mdb_txn_reset(txn);
    }
    f->stats.cache_misses++;
    /* A HEAD is answered by PHP without a body: never stored. */
    add_tap(f, req, key, klen, !head && host_plain, fwd, head ? "head" : !host_plain ? "host-form" : NULL);
    return 0;
}

static const seam_backend_t cache_backend = {
    .name = "cache",
    .stage = SEAM_ROUTED,
    .order = 50, /* before the PHP pool's 60 */
    .site_init = site_init,
    .take = take,
};
SEAM_BACKEND(cache_backend)
