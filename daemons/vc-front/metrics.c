#include "metrics.h"
#include "realtime.h"
#include "tls.h"
#include "cache_internal.h"
#include "backend.h"
#include "beneath.h"
#include "framing.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>

typedef struct metrics_handler {
    h2o_handler_t super;
    front_t *f;
} metrics_handler_t;

static const struct {
    const char *name, *help;
    size_t off;
} counters[] = {
    {"vc_front_requests_total", "Requests received.", offsetof(front_stats_t, requests)},
    {"vc_front_php_requests_total", "Requests passed to PHP.", offsetof(front_stats_t, php)},
    {"vc_front_static_requests_total", "Requests served from files.", offsetof(front_stats_t, statics)},
    {"vc_front_redirects_total", "Redirects answered by the front.", offsetof(front_stats_t, redirects)},
    {"vc_front_refused_total", "Requests refused by the front (4xx).", offsetof(front_stats_t, refused)},
    {"vc_front_php_errors_total", "5xx answers from the PHP pool.", offsetof(front_stats_t, errors_5xx)},
    {"vc_front_connections_refused_total", "Connections closed at once: front.max_connections.",
     offsetof(front_stats_t, connections_refused)},
    {"vc_front_connections_cut_total", "Connections closed for cancelling too many PHP requests or stalling.",
     offsetof(front_stats_t, connections_cut)},
    {"vc_front_connections_banned_total", "Connections closed at once: the address is banned (front.ban_time).",
     offsetof(front_stats_t, connections_banned)},
    {"vc_front_misdirected_total",
     "Requests answered 421: their Host is not served by the certificate their TLS "
     "connection chose.",
     offsetof(front_stats_t, misdirected)},
    {"vc_front_connections_evicted_total",
     "Idle connections closed to make room for a new client at front.max_connections.",
     offsetof(front_stats_t, connections_evicted)},
    {"vc_front_ranges_tamed_total",
     "Range headers on static files merged, or dropped for the whole file (too many, "
     "or more bytes than the file).",
     offsetof(front_stats_t, ranges_tamed)},
    {"vc_front_answers_spilled_total",
     "PHP answers larger than front.response_buffer that went to a temporary file while their client read.",
     offsetof(front_stats_t, answers_spilled)},
    {"vc_front_answers_throttled_total",
     "Times a worker's link was not read because its client was front.response_buffer and "
     "front.response_temp_max behind.",
     offsetof(front_stats_t, answers_throttled)},
    {"vc_front_answers_cut_total", "Answers relayed by the pool's broker cut because their client was that far behind.",
     offsetof(front_stats_t, answers_cut)},
    {"vc_front_cache_hits_total", "Requests answered from the cache.", offsetof(front_stats_t, cache_hits)},
    {"vc_front_cache_misses_total", "Requests looked up in the cache and passed to PHP (missing or stale).",
     offsetof(front_stats_t, cache_misses)},
    {"vc_front_cache_bypass_total", "Requests that skipped the cache (Authorization, a session cookie, Range).",
     offsetof(front_stats_t, cache_bypass)},
    {"vc_front_cache_stale_total", "Requests answered with a stale entry while it was refreshed, or when PHP failed.",
     offsetof(front_stats_t, cache_stale)},
    {"vc_front_cache_collapsed_total", "Requests that waited for another's answer to the same page.",
     offsetof(front_stats_t, cache_collapsed)},
    {"vc_front_cache_refreshes_total", "Background requests that refreshed a stale entry.",
     offsetof(front_stats_t, cache_refreshes)},
    {"vc_front_cache_revalidated_total", "Stale entries PHP answered 304 for: served and stored again.",
     offsetof(front_stats_t, cache_revalidated)},
    {"vc_front_cache_touches_total", "Hits on entries in the older half of the eviction order, reported to vc-cache.",
     offsetof(front_stats_t, cache_touches)},
    {"vc_front_cache_offers_total", "Answers offered to vc-cache to store.", offsetof(front_stats_t, cache_offers)},
    {"vc_front_cache_offers_dropped_total", "Answers not offered: vc-cache's queue was full.",
     offsetof(front_stats_t, cache_offers_dropped)},
};

static uint64_t get(const front_stats_t *s, size_t off)
{
    return *(const uint64_t *)((const char *)s + off);
}

static int on_metrics(h2o_handler_t *self, h2o_req_t *req)
{
    front_t *f = ((metrics_handler_t *)self)->f;
    if (!h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT("/metrics"))) {
        h2o_send_error_404(req, "Not Found", "try /metrics\n", 0);
        return 0;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    for (size_t i = 0; i < VC_ARRAY_SIZE(counters); i++)
        fprintf(out, "# HELP %s %s\n# TYPE %s counter\n%s{front=\"%s\"} %llu\n", counters[i].name, counters[i].help,
                counters[i].name, counters[i].name, f->d.name, (unsigned long long)get(&f->stats, counters[i].off));
    fprintf(out,
            "# HELP vc_front_framing_refused_total HTTP/1.1 request heads answered 400 and closed for framing RFC "
            "9112 rejects.\n# TYPE vc_front_framing_refused_total counter\n"
            "vc_front_framing_refused_total{front=\"%s\"} %llu\n",
            f->d.name, (unsigned long long)framing_refused_total());
    fprintf(out,
            "# HELP vc_front_static_escapes_total Static files not opened: they resolved outside the site's root "
            "when opened.\n# TYPE vc_front_static_escapes_total counter\n"
            "vc_front_static_escapes_total{front=\"%s\"} %llu\n",
            f->d.name, (unsigned long long)beneath_escapes_total());
    fprintf(out,
            "# HELP vc_front_php_inflight Requests waiting for PHP now.\n# TYPE vc_front_php_inflight gauge\n"
            "vc_front_php_inflight{front=\"%s\"} %zu\n",
            f->d.name, front_php_inflight(f));
    fprintf(out,
            "# HELP vc_front_connections Client connections open now.\n# TYPE vc_front_connections gauge\n"
            "vc_front_connections{front=\"%s\"} %llu\n",
            f->d.name, (unsigned long long)f->stats.connections);
    if (f->settings->realtime)
        realtime_metrics(out, f->d.name);
    tls_metrics(f->tls, out);
    fprintf(out,
            "# HELP vc_front_config_version Configuration version in force.\n"
            "# TYPE vc_front_config_version gauge\nvc_front_config_version %llu\n",
            (unsigned long long)f->d.cfg->version);
    fclose(out);
    h2o_iovec_t body = h2o_strdup(&req->pool, buf, len);
    free(buf);
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("text/plain; version=0.0.4; charset=utf-8"));
    h2o_send_inline(req, body.base, body.len);
    return 0;
}

h2o_hostconf_t *metrics_register(front_t *f)
{
    h2o_hostconf_t *host = h2o_config_register_host(&f->gc, h2o_iovec_init(H2O_STRLIT("vc-admin.invalid")), 65535);
    h2o_pathconf_t *pc = h2o_config_register_path(host, "/", 0);
    server_header_register(pc);
    cache_admin_register(f, pc); /* PURGE, before /metrics */
    metrics_handler_t *h = (metrics_handler_t *)h2o_create_handler(pc, sizeof(*h));
    h->super.on_req = on_metrics;
    h->f = f;
    return host;
}

void metrics_tick(front_t *f)
{
    front_stats_t now = f->stats, *was = &f->last_tick;
    uint64_t reqs = now.requests - was->requests;
    if (reqs > 0 && f->d.bus) {
        char r[24], php[24], st[24], err[24], inflight[24];
        snprintf(r, sizeof(r), "%llu", (unsigned long long)reqs);
        snprintf(php, sizeof(php), "%llu", (unsigned long long)(now.php - was->php));
        snprintf(st, sizeof(st), "%llu", (unsigned long long)(now.statics - was->statics));
        snprintf(err, sizeof(err), "%llu", (unsigned long long)(now.errors_5xx - was->errors_5xx));
        snprintf(inflight, sizeof(inflight), "%zu", front_php_inflight(f));
        vc_bus_publish(f->d.bus, "front.metrics", VC__SEVERITY__DEBUG, "requests", r, "php", php, "static", st,
                       "errors_5xx", err, "inflight", inflight, NULL);
    }
    *was = now;
}
