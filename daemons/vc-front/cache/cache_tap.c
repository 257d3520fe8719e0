/*
 * The tap on PHP's answer to a request that passed the cache: an h2o
 * prefilter, so it sees PHP's status and headers before h2o's filters
 * (compression) and decides there whether the answer may be stored
 * (cache_policy.h). A storable answer is kept as it is sent, and offered
 * to vc-cache once it was sent whole; the flight it leads, if any, is told
 * how it ended. When PHP fails (500, 502, 503, 504) and a stale entry may
 * stand in for it (stale-if-error), the stale entry is sent instead.
 */
#include "cache_internal.h"
#include "cache_policy.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.pb-c.h"

/* Offers queued for vc-cache past this are dropped (the next miss offers
 * again): a front never waits for the cache. */
#define OFFER_HWM 1000
/* Headers an answer may have for the cache to keep it. */
#define MAX_HEADERS 100

static void *push_sock; /* to vc-cache's cache-in */

typedef struct tap {
    h2o_req_prefilter_t super;
    front_t *f;
    cache_tap_args_t a; /* key and stale copied into the request's pool */
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
    /* Where it is stored: the page's key, or its variant's when the
     * answer varies (vary: the headers, "a, b"; else ""). */
    char key[VC_CACHE_KEY_MAX];
    size_t klen, base_len;
    char vary[CACHE_VARY_LIST_MAX];
} keeper_t;

static void collect_tag(void *arg, const char *tag, size_t len)
{
    keeper_t *k = arg;
    if (k->ntags < VC_CACHE_TAGS_MAX && len <= VC_CACHE_TAG_MAX) {
        k->tags[k->ntags++] = h2o_strdup(NULL, tag, len).base;
        return;
    }
    /* Said once in a while: a page that sends them sends them each time. */
    static uint64_t next_ms;
    if (vc_mono_ms() >= next_ms) {
        next_ms = vc_mono_ms() + 60000;
        vc_log(VC_LOG_WARN, "cache", "a tag was left out of an answer's tags: %s (\"%.40s%s\")",
               len > VC_CACHE_TAG_MAX ? "longer than 128 bytes" : "more than 64 tags", tag, len > 40 ? "..." : "");
    }
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
void cache_push(front_t *f, const Vc__CacheStore *cs)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    if (push_sock == NULL) {
        char *ep = vc_config_endpoint(f->d.cfg, "cache-in");
        push_sock = vc_socket_hwm(f->d.zctx, ZMQ_PUSH, ep, 0, OFFER_HWM, 0);
        if (push_sock == NULL) {
            vc_log(VC_LOG_ERR, "cache", "zmq_connect() failed while linking to vc-cache at \"%s\": %s", ep,
                   zmq_strerror(errno));
        }
        free(ep);
        if (push_sock == NULL)
            return;
    }
    size_t len = vc__cache_store__get_packed_size(cs);
    uint8_t *buf = vc_malloc(len);
    vc__cache_store__pack(cs, buf);
    if (zmq_send(push_sock, buf, len, ZMQ_DONTWAIT) < 0)
        cache_stats.offers_dropped++;
    else
        cache_stats.offers++;
    free(buf);
}

/* The entry the answer makes, for the requests that waited for it
 * (malloc'd; the flight keeps it). */
static void *entry_of(keeper_t *k, h2o_req_t *req, int64_t now, size_t *len)
{
    vc_cache_header_t hs[MAX_HEADERS];
    for (size_t i = 0; i < k->nh; i++)
        hs[i] = (vc_cache_header_t){k->hs[i].name, k->hs[i].value, k->hs[i].name_len, k->hs[i].value_len};
    vc_cache_entry_in_t in = {
        .status = (uint32_t)req->res.status,
        .stored_ms = now - k->dec.age_ms,
        .fresh_ms = now - k->dec.age_ms + k->dec.fresh_ms,
        .stale_ms = now - k->dec.age_ms + k->dec.fresh_ms + k->dec.stale_ms,
        .error_ms = now - k->dec.age_ms + k->dec.fresh_ms + k->dec.error_ms,
        .nheaders = k->nh,
        .headers = hs,
        .body = k->body,
        .body_len = k->len,
    };
    *len = vc_cache_entry_size(&in);
    void *out = vc_malloc(*len);
    vc_cache_entry_write(&in, out);
    return out;
}

static void offer(keeper_t *k, h2o_req_t *req, int64_t now)
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
    Vc__CacheStore cs = VC__CACHE_STORE__INIT;
    cs.key.data = (uint8_t *)k->key;
    cs.key.len = k->klen;
    if (k->vary[0]) {
        cs.vary_base.data = (uint8_t *)k->key;
        cs.vary_base.len = k->base_len;
        cs.vary = k->vary;
    }
    cs.status = (uint32_t)req->res.status;
    cs.headers = hp;
    cs.n_headers = k->nh;
    cs.body.data = (uint8_t *)k->body;
    cs.body.len = k->len;
    /* Its age when it came counts (RFC 9111 4.2.3): as if stored then. */
    cs.stored_ms = now - k->dec.age_ms;
    cs.fresh_ms = cs.stored_ms + k->dec.fresh_ms;
    cs.stale_ms = cs.fresh_ms + k->dec.stale_ms;
    cs.error_ms = cs.fresh_ms + k->dec.error_ms;
    cs.tags = k->tags;
    cs.n_tags = k->ntags;
    cache_push(t->f, &cs);
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

static void end_flight(tap_t *t, flight_end_t why)
{
    if (t->a.lead)
        flight_failed(t->a.lead, why);
}

/* The Cache-Status header says "stored" no more. */
static void not_stored(keeper_t *k, h2o_req_t *req, const char *why)
{
    keeper_free(k);
    end_flight(k->tap, FLIGHT_UNCACHEABLE);
    /* Only while the headers have not left (the first send): a streamed
     * answer's header never said "stored". */
    if (k->status_at < 0 || (size_t)k->status_at >= req->res.headers.size || k->sent)
        return;
    char v[96];
    int n = snprintf(v, sizeof(v), "Velocity; fwd=%s; detail=%s", k->tap->a.fwd, why);
    req->res.headers.entries[k->status_at].value = h2o_strdup(&req->pool, v, (size_t)n);
}

static void on_keeper_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n, h2o_send_state_t state)
{
    keeper_t *k = (keeper_t *)self;
    if (!k->checked) {
        /* The status is final only now (backend.c shows h2o's filters a
         * 200 for a 403 or 404, so they compress those too). */
        k->checked = 1;
        int status = req->res.status;
        if (!cache_policy_status_storable(status) || (k->dec.heuristic && !cache_policy_status_heuristic(status)))
            not_stored(k, req, "status");
    }
    const cache_settings_t *cfg = cache_settings();
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
    if (state == H2O_SEND_STATE_ERROR && !k->dropped) {
        keeper_free(k); /* cut short: never stored */
        end_flight(k->tap, FLIGHT_GONE);
    }
    if (state == H2O_SEND_STATE_FINAL && !k->dropped) {
        int64_t now = cache_now_ms();
        offer(k, req, now);
        if (k->tap->a.lead) {
            size_t len;
            void *entry = entry_of(k, req, now, &len);
            flight_stored(k->tap->a.lead, entry, len, k->key, k->klen, k->vary);
        }
        keeper_free(k);
    }
    k->sent = 1;
    h2o_ostream_send_next(&k->super, req, bufs, n, state);
}

/* The client left before the whole answer was sent. */
static void on_keeper_stop(h2o_ostream_t *self, h2o_req_t *req)
{
    keeper_t *k = (keeper_t *)self;
    keeper_free(k);
    end_flight(k->tap, FLIGHT_GONE);
}

/* Sends the stale entry in place of PHP's failed answer, whose body is
 * dropped as it comes. */
typedef struct stand_in {
    h2o_ostream_t super;
    h2o_iovec_t body;
    int status, sent;
} stand_in_t;

static void on_stand_in_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n, h2o_send_state_t state)
{
    stand_in_t *o = (stand_in_t *)self;
    /* PHP's answer cut short is no failure of ours: the stale one is whole. */
    if (state == H2O_SEND_STATE_ERROR)
        state = H2O_SEND_STATE_FINAL;
    /* backend.c sets PHP's status back once the filters are set up. */
    req->res.status = o->status;
    req->res.reason = cache_reason_of(o->status);
    if (o->sent || o->body.len == 0) {
        h2o_ostream_send_next(&o->super, req, NULL, 0, state);
        return;
    }
    o->sent = 1;
    h2o_ostream_send_next(&o->super, req, &o->body, 1, state);
}

/* The stand-in for PHP's answer: e's body (in the request's pool), with
 * e's status. Returns the slot for the next filter. */
static h2o_ostream_t **add_stand_in(h2o_req_t *req, h2o_ostream_t **slot, const vc_cache_entry_t *e)
{
    stand_in_t *o = (stand_in_t *)h2o_add_ostream(req, sizeof(*o), slot);
    o->super.do_send = on_stand_in_send;
    o->body = h2o_iovec_init(e->body, e->body_len);
    o->status = (int)e->status;
    o->sent = 0;
    return &o->super.next;
}

/* RFC 5861 4: an error is a 500, 502, 503 or 504 (the front's own, for a
 * pool away or too slow, as well as PHP's). */
static int is_error(int status)
{
    return status == 500 || status == 502 || status == 503 || status == 504;
}

/* PHP failed: the stale entry answers instead, if it may. Returns the slot
 * for the next filter. */
static h2o_ostream_t **stand_in(tap_t *t, h2o_req_t *req, h2o_ostream_t **slot)
{
    vc_cache_entry_t e;
    int64_t now = cache_now_ms();
    if (vc_cache_entry_parse(t->a.stale, t->a.stale_len, &e) != 0 || now >= e.error_ms)
        return slot;
    int failed = req->res.status;
    req->res.status = (int)e.status;
    req->res.reason = cache_reason_of(req->res.status);
    req->res.headers = (h2o_headers_t){NULL, 0, 0};
    req->res.content_length = e.body_len;
    cache_add_entry_headers(req, &e, now, 0);
    char v[128];
    int64_t past = now - (e.fresh_ms > 0 ? e.fresh_ms : e.stored_ms);
    snprintf(v, sizeof(v), "Velocity; fwd=%s; fwd-status=%d; ttl=%lld; detail=stale-if-error", t->a.fwd, failed,
             -(long long)(past / 1000) - 1);
    cache_add_status(req, v);
    cache_stats.stale++;
    vc_log(VC_LOG_NOTICE, "cache", "a stale answer stands in for PHP's %d (stale-if-error)", failed);
    return add_stand_in(req, slot, &e);
}

/* PHP answered 304 to the validators sent for the stale entry: the entry
 * answers, its headers updated with the 304's (RFC 9111 4.3.4), and is
 * stored again for the lifetime they give. Returns the slot for the next
 * filter (the keeper, if it is stored, sees the entry's body go by). */
static h2o_ostream_t **revalidated(tap_t *t, h2o_req_t *req, h2o_ostream_t **slot)
{
    vc_cache_entry_t e;
    if (vc_cache_entry_parse(t->a.stale, t->a.stale_len, &e) != 0)
        return slot;
    h2o_headers_t fresh = req->res.headers;
    req->res.headers = (h2o_headers_t){NULL, 0, 0};
    vc_cache_header_t h;
    size_t pos = 0;
    uint32_t i = 0;
    /* The stored fields the 304 names are replaced, in any letter case
     * (RFC 9111 3.2: updated, not added to). */
    while (vc_cache_entry_header(&e, &pos, &i, &h)) {
        int replaced = 0;
        for (size_t k = 0; k < fresh.size && !replaced; k++)
            replaced = h2o_lcstris(h.name, h.name_len, fresh.entries[k].name->base, fresh.entries[k].name->len);
        if (!replaced)
            cache_add_header(req, h.name, h.name_len, h.value, h.value_len);
    }
    for (size_t k = 0; k < fresh.size; k++) {
        const h2o_header_t *f = &fresh.entries[k];
        if (!h2o_lcstris(f->name->base, f->name->len, H2O_STRLIT("content-length")))
            h2o_add_header_by_str(&req->pool, &req->res.headers, f->name->base, f->name->len, 1, f->orig_name,
                                  f->value.base, f->value.len);
    }
    req->res.status = (int)e.status;
    req->res.reason = cache_reason_of(req->res.status);
    req->res.content_length = e.body_len;
    t->a.fwd = "stale; fwd-status=304";
    cache_stats.revalidated++;
    return add_stand_in(req, slot, &e);
}

void cache_tag_list_add(void *arg, const char *tag, size_t len)
{
    cache_tag_list_t *t = arg;
    if (t->n < VC_CACHE_TAGS_MAX && len <= VC_CACHE_TAG_MAX)
        t->tags[t->n++] = h2o_strdup(t->pool, tag, len).base;
}

/* The host of req's key, as keys have it (lower case, no default port). */
static char *plain_host(h2o_req_t *req)
{
    char key[VC_CACHE_KEY_MAX];
    const char *scheme = req->scheme == &H2O_URL_SCHEME_HTTPS ? "https" : "http";
    size_t klen =
        vc_cache_key(scheme, req->authority.base, req->authority.len, "/", 1, "", 0, NULL, 0, key, sizeof(key));
    size_t start = strlen(scheme) + 3;
    if (klen <= start)
        return NULL;
    return h2o_strdup(&req->pool, key + start, klen - start - 1).base; /* less the "/" */
}

/* Tags PHP purged (vc_cache_purge_tags(): its headers, taken out here),
 * sent to vc-cache for the site's own hosts: the request's, and the
 * site's names. */
static void purges_from_php(front_t *f, h2o_req_t *req, const site_rt_t *site)
{
    cache_tag_list_t hard = {.pool = &req->pool}, soft = {.pool = &req->pool};
    for (size_t i = req->res.headers.size; i-- > 0;) {
        const h2o_header_t *h = &req->res.headers.entries[i];
        cache_tag_list_t *into = h2o_lcstris(h->name->base, h->name->len, H2O_STRLIT("velocity-purge-tags")) ? &hard
                                 : h2o_lcstris(h->name->base, h->name->len, H2O_STRLIT("velocity-purge-soft-tags"))
                                     ? &soft
                                     : NULL;
        if (into) {
            cache_policy_tags(h->value.base, h->value.len, VC_CACHE_TAGS_MAX, cache_tag_list_add, into);
            h2o_delete_header(&req->res.headers, (ssize_t)i);
        }
    }
    if (hard.n + soft.n == 0)
        return;
    char *hosts[1 + 16];
    size_t nhosts = 0;
    if ((hosts[nhosts] = plain_host(req)) != NULL)
        nhosts++;
    for (size_t i = 0; site && i < site->conf->nhosts && nhosts < VC_ARRAY_SIZE(hosts); i++) {
        h2o_iovec_t lc = h2o_strdup(&req->pool, site->conf->hosts[i], SIZE_MAX);
        h2o_strtolower(lc.base, lc.len);
        hosts[nhosts++] = lc.base;
    }
    for (int s = 0; s < 2; s++) {
        cache_tag_list_t *t = s ? &soft : &hard;
        if (t->n == 0)
            continue;
        Vc__CachePurge p = VC__CACHE_PURGE__INIT;
        p.tags = t->tags;
        p.n_tags = t->n;
        p.soft = s;
        p.hosts = hosts;
        p.n_hosts = nhosts;
        Vc__CacheStore cs = VC__CACHE_STORE__INIT;
        cs.purge = &p;
        cache_push(f, &cs);
    }
}

static void on_tap_setup(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    tap_t *t = (tap_t *)self;
    purges_from_php(t->f, req, t->a.site);
    if (t->a.revalidate && t->a.stale && req->res.status == 304)
        slot = revalidated(t, req, slot);
    cache_decision_t d = {.store = 0, .why = t->a.detail};
    cache_hdr_t hs[MAX_HEADERS], all[MAX_HEADERS];
    size_t nh = 0, na = 0;
    keeper_t *k = NULL;
    const cache_settings_t *cfg = cache_settings();
    if (t->a.may_store && req->res.headers.size > MAX_HEADERS) {
        d.why = "headers";
    } else if (t->a.may_store) {
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
        /* PHP's Date, which the front does not send (backend.c). */
        h2o_iovec_t *date = h2o_req_getenv(req, H2O_STRLIT("vc-origin-date"), 0);
        if (date && na < MAX_HEADERS)
            all[na++] = (cache_hdr_t){"date", date->base, 4, date->len};
        const vc_cache_rule_t *rule = t->a.rule;
        cache_policy_opts_t o = {.grace_ms = rule && rule->grace_ms >= 0 ? rule->grace_ms : cfg->grace_ms,
                                 .ttl_ms = rule ? rule->ttl_ms : -1,
                                 .max_ttl_ms = rule ? rule->max_ttl_ms : -1};
        cache_policy_decide(req->res.status, all, na, cache_now_ms(), &o, &d);
    }
    if (d.store && req->res.content_length != SIZE_MAX && req->res.content_length > (size_t)cfg->max_object) {
        d.store = 0;
        d.why = "too-large";
    }
    /* Stored under the page's key, or, if the answer varies, under the
     * variant this request's headers pick. */
    char vary[CACHE_VARY_LIST_MAX] = "", key[VC_CACHE_KEY_MAX];
    size_t klen = 0, base_len = d.store ? cache_base_len(t->a.key, t->a.klen) : 0;
    if (d.store && cache_policy_vary_names(all, na, vary, sizeof(vary)) > 0)
        klen = cache_variant_key(req, t->a.key, base_len, vary, strlen(vary), key, sizeof(key));
    else if (d.store)
        memcpy(key, t->a.key, klen = base_len);
    if (d.store && klen == 0) {
        d.store = 0;
        d.why = "key-too-long";
    }
    if (!d.store)
        end_flight(t, is_error(req->res.status) ? FLIGHT_ERROR : FLIGHT_UNCACHEABLE);
    if (!d.store && t->a.stale && is_error(req->res.status)) {
        h2o_ostream_t **next = stand_in(t, req, slot);
        if (next != slot) {
            h2o_setup_next_prefilter(self, req, next);
            return;
        }
    }
    if (d.store) {
        k = (keeper_t *)h2o_add_ostream(req, sizeof(*k), slot);
        memset((char *)k + sizeof(k->super), 0, sizeof(*k) - sizeof(k->super));
        k->super.do_send = on_keeper_send;
        k->super.stop = on_keeper_stop;
        k->tap = t;
        k->dec = d;
        memcpy(k->key, key, klen);
        k->klen = klen;
        k->base_len = base_len;
        memcpy(k->vary, vary, sizeof(vary));
        memcpy(k->hs, hs, nh * sizeof(*hs));
        k->nh = nh;
        k->status_at = -1;
        for (size_t i = 0; i < req->res.headers.size; i++) {
            const h2o_header_t *h = &req->res.headers.entries[i];
            if (cache_policy_is_tag_header(h->name->base, h->name->len))
                cache_policy_tags(h->value.base, h->value.len, VC_CACHE_TAGS_MAX + 1, collect_tag, k);
        }
        slot = &k->super.next;
    }
    /* Ours never reach the client (RFC 9213: targeted at this cache). */
    for (size_t i = req->res.headers.size; i-- > 0;)
        if (cache_policy_is_ours(req->res.headers.entries[i].name->base, req->res.headers.entries[i].name->len))
            h2o_delete_header(&req->res.headers, (ssize_t)i);
    char v[96];
    if (d.store && req->res.content_length == SIZE_MAX)
        snprintf(v, sizeof(v), "Velocity; fwd=%s", t->a.fwd); /* streamed: stored if it fits */
    else if (d.store)
        snprintf(v, sizeof(v), "Velocity; fwd=%s; stored", t->a.fwd);
    else
        snprintf(v, sizeof(v), "Velocity; fwd=%s; detail=%s", t->a.fwd, d.why ? d.why : "none");
    ssize_t at = cache_add_status(req, v);
    if (k)
        k->status_at = at;
    h2o_setup_next_prefilter(self, req, slot);
}

void cache_tap(front_t *f, h2o_req_t *req, const cache_tap_args_t *a)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    tap_t *t = (tap_t *)h2o_add_prefilter(req, sizeof(*t));
    t->super.on_setup_ostream = on_tap_setup;
    t->f = f;
    t->a = *a;
    if (a->key)
        t->a.key = h2o_strdup(&req->pool, a->key, a->klen).base;
    if (a->stale) {
        void *copy = h2o_mem_alloc_pool(&req->pool, a->stale_len);
        memcpy(copy, a->stale, a->stale_len);
        t->a.stale = copy;
    }
}

int cache_to_php(const seam_request_t *r)
{
    if (seam_dispatch_after(SEAM_ROUTED, r, &cache_backend))
        return 1;
    h2o_send_error_503(r->req, "Service Unavailable", "Service Unavailable\n", 0);
    return 1;
}

/* ---- an unsafe method: the entry goes ------------------------------------- */

typedef struct invalidator {
    h2o_req_prefilter_t super;
    front_t *f;
    const site_rt_t *site;
    const char *key; /* NULL: not an unsafe method */
    size_t klen;
} invalidator_t;

/* Drops what is stored for key, if anything is. */
static void invalidate(front_t *f, const char *key, size_t klen)
{
    /* Seen by every front before this answer leaves; vc-cache's drop
     * comes a little later. Noted whether or not an entry is there: a
     * variant may be. */
    uint64_t seq;
    int has = cache_has(key, klen, &seq);
    cache_tomb_set(key, klen, seq);
    flight_forget(key, klen);
    /* Only for what is stored: a POST to a page never cached (a form's
     * target, an API) costs a lookup here, not a write in vc-cache. */
    if (has) { /* an entry, or the marker of its variants */
        Vc__CacheStore cs = VC__CACHE_STORE__INIT;
        cs.key.data = (uint8_t *)key;
        cs.key.len = klen;
        cs.invalidate = 1;
        cs.before_seq = seq; /* what is written since is newer than the change */
        cache_push(f, &cs);
    }
}

/* The URL an answer's Location or Content-Location names, if it is on the
 * request's own host (RFC 9111 4.4: another host's must not be touched,
 * or a site could purge its neighbours'), made a key. */
static void invalidate_named(front_t *f, h2o_req_t *req, h2o_iovec_t value)
{
    h2o_url_t base, rel, dest;
    if (h2o_url_init(&base, req->scheme, req->authority, req->path) != 0 ||
        h2o_url_parse_relative(value.base, value.len, &rel) != 0)
        return;
    h2o_url_resolve(&req->pool, &base, &rel, &dest);
    if (dest.scheme != req->scheme ||
        !h2o_lcstris(dest.authority.base, dest.authority.len, req->authority.base, req->authority.len))
        return;
    const char *q = memchr(dest.path.base, '?', dest.path.len);
    size_t plen = q ? (size_t)(q - dest.path.base) : dest.path.len;
    const cache_settings_t *cfg = cache_settings();
    char key[VC_CACHE_KEY_MAX];
    size_t klen = vc_cache_key(dest.scheme->name.base, dest.authority.base, dest.authority.len, dest.path.base, plen,
                               q ? q + 1 : "", q ? dest.path.len - plen - 1 : 0, cfg->strip_params, cfg->nstrip_params,
                               key, sizeof(key));
    if (klen)
        invalidate(f, key, klen);
}

/* RFC 9111 4.4: a POST, PUT, PATCH or DELETE that did not fail makes
 * what is stored for its URL stale, and for the URLs its answer's
 * Location and Content-Location name; here they are dropped. */
static void on_invalidator_setup(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    invalidator_t *v = (invalidator_t *)self;
    purges_from_php(v->f, req, v->site);
    if (v->key && req->res.status >= 200 && req->res.status < 400) {
        invalidate(v->f, v->key, v->klen);
        ssize_t at = -1;
        while ((at = h2o_find_header(&req->res.headers, H2O_TOKEN_LOCATION, at)) != -1)
            invalidate_named(v->f, req, req->res.headers.entries[at].value);
        while ((at = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_LOCATION, at)) != -1)
            invalidate_named(v->f, req, req->res.headers.entries[at].value);
    }
    h2o_setup_next_prefilter(self, req, slot);
}

void cache_tap_invalidator(front_t *f, const site_rt_t *site, h2o_req_t *req, const char *key, size_t klen)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    invalidator_t *v = (invalidator_t *)h2o_add_prefilter(req, sizeof(*v));
    v->super.on_setup_ostream = on_invalidator_setup;
    v->f = f;
    v->site = site;
    v->key = key ? h2o_strdup(&req->pool, key, klen).base : NULL;
    v->klen = klen;
}
