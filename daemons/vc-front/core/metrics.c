#include "sites.h"
#include "latency.h"
#include "metrics.h"
#include "readiness.h"
#include "vc_events.h"
#include "beneath.h"
#include "vc_framing.h"
#include "seam.h"
#include "tls.h"
#include "vc_metrics.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>

typedef struct metrics_handler {
    h2o_handler_t super;
    front_t *f;
} metrics_handler_t;

#define STAT(field) (offsetof(front_stats_t, field) + 1)

/* The core's figures (seam.h's seam_counter_t; each backend has its own
 * table). */
static const seam_counter_t core_counters[] = {
    {"vc_front_requests_total", "requests", "Requests received.", 0, 0, NULL, NULL, STAT(requests)},
    {"vc_front_static_requests_total", "static", "Requests served from files.", 0, 0, NULL, NULL, STAT(statics)},
    {"vc_front_redirects_total", "redirects", "Redirects answered by the front.", 0, 0, NULL, NULL, STAT(redirects)},
    {"vc_front_refused_total", "refused", "Requests refused by the front (4xx).", 0, 0, NULL, NULL, STAT(refused)},
    {"vc_front_connections", "connections", "Client connections open now.", 1, 0, NULL, NULL, STAT(connections)},
    {"vc_front_connections_refused_total", "connections_refused", "Connections closed at once: front.max_connections.",
     0, 0, NULL, NULL, STAT(connections_refused)},
    {"vc_front_connections_cut_total", "connections_cut",
     "Connections closed for cancelling too many PHP requests or stalling.", 0, 0, NULL, NULL, STAT(connections_cut)},
    {"vc_front_connections_banned_total", "connections_banned",
     "Connections closed at once: the address is banned (front.ban_time).", 0, 0, NULL, NULL, STAT(connections_banned)},
    {"vc_front_misdirected_total", "misdirected",
     "Requests answered 421: their Host is not served by the certificate their TLS connection chose.", 0, 0, NULL, NULL,
     STAT(misdirected)},
    {"vc_front_connections_evicted_total", "connections_evicted",
     "Idle connections closed to make room for a new client at front.max_connections.", 0, 0, NULL, NULL,
     STAT(connections_evicted)},
    {"vc_front_ranges_tamed_total", "ranges_tamed",
     "Range headers on static files merged, or dropped for the whole file (too many, or more bytes than the file).", 0,
     0, NULL, NULL, STAT(ranges_tamed)},
    {"vc_front_framing_refused_total", "framing_refused",
     "HTTP/1.1 request heads answered 400 and closed for framing RFC 9112 rejects.", 0, 0, NULL,
     vc_framing_refused_total, 0},
    {"vc_front_static_escapes_total", "static_escapes",
     "Static files not opened: they resolved outside the site's root when opened.", 0, 0, NULL, beneath_escapes_total,
     0},
};

const seam_counter_t *metrics_core_counters(size_t *n)
{
    *n = VC_ARRAY_SIZE(core_counters);
    return core_counters;
}

static void print_metric(FILE *out, const char *name, const char *help, int gauge, const char *front, uint64_t v)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n%s{front=\"%s\"} %llu\n", name, help, name, gauge ? "gauge" : "counter",
            name, front, (unsigned long long)v);
}

static int on_metrics(h2o_handler_t *self, h2o_req_t *req)
{
    front_t *f = ((metrics_handler_t *)self)->f;
    if (f->readiness && readiness_answer(f->readiness, req))
        return 0;
    if (!h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT("/metrics"))) {
        h2o_send_error_404(req, "Not Found", "try /metrics, /ready or /ready/DAEMON\n", 0);
        return 0;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    for (size_t k = 0; k < VC_ARRAY_SIZE(core_counters); k++)
        print_metric(out, core_counters[k].metric, core_counters[k].help, core_counters[k].gauge, f->d.name,
                     seam_counter_value(f, &core_counters[k]));
    /* Then each backend's, as it lists them. */
    size_t nb;
    const seam_backend_t *const *b = seam_backends(&nb);
    for (size_t i = 0; i < nb; i++)
        for (size_t k = 0; k < b[i]->ncounters; k++)
            if (b[i]->counters[k].metric)
                print_metric(out, b[i]->counters[k].metric, b[i]->counters[k].help, b[i]->counters[k].gauge, f->d.name,
                             seam_counter_value(f, &b[i]->counters[k]));
    tls_metrics(f->tls, out);
    vc_metrics_gather(f->d.cfg, out); /* the daemons with no HTTP of their own: vc-mesh */
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
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    h2o_hostconf_t *host = h2o_config_register_host(&f->gc, h2o_iovec_init(H2O_STRLIT("vc-admin.invalid")), 65535);
    h2o_pathconf_t *pc = h2o_config_register_path(host, "/", 0);
    server_header_register(pc);
    seam_admin(f, pc); /* the cache's PURGE, before /metrics */
    metrics_handler_t *h = (metrics_handler_t *)h2o_create_handler(pc, sizeof(*h));
    h->super.on_req = on_metrics;
    h->f = f;
    return host;
}

/* Once a second with traffic: front.metrics on the bus (live only, never
 * journaled): the core's requests and static files, and the backends'
 * figures marked for it (their change, or a gauge's level). */
void metrics_tick(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    static uint64_t last_requests, last_statics, last[SEAM_EVENT_FIELDS];
    uint64_t reqs = f->stats.requests - last_requests;
    /* The core's: requests, static, then the second's answers (latency.h). */
    enum { CORE = 8 };
    char values[CORE + SEAM_EVENT_FIELDS][24];
    const char *kv[2 * (CORE + SEAM_EVENT_FIELDS) + 1] = {
        "requests", values[0], "static", values[1], "p50_ms", values[2], "p99_ms", values[3],
        "s2xx",     values[4], "s3xx",   values[5], "s4xx",   values[6], "s5xx",   values[7]};
    size_t n = 2 * CORE, e = 0, nb;
    latency_second_t ls;
    latency_take(&ls);
    snprintf(values[0], sizeof(values[0]), "%llu", (unsigned long long)reqs);
    snprintf(values[1], sizeof(values[1]), "%llu", (unsigned long long)(f->stats.statics - last_statics));
    snprintf(values[2], sizeof(values[2]), "%.2f", ls.p50_ms);
    snprintf(values[3], sizeof(values[3]), "%.2f", ls.p99_ms);
    for (int c = 2; c <= 5; c++)
        snprintf(values[2 + c], sizeof(values[2 + c]), "%llu", (unsigned long long)ls.status[c]);
    const seam_backend_t *const *b = seam_backends(&nb);
    for (size_t i = 0; i < nb; i++)
        for (size_t k = 0; k < b[i]->ncounters && e < SEAM_EVENT_FIELDS; k++) {
            const seam_counter_t *c = &b[i]->counters[k];
            if (!c->event)
                continue;
            uint64_t now = seam_counter_value(f, c);
            snprintf(values[CORE + e], sizeof(values[CORE + e]), "%llu",
                     (unsigned long long)(c->gauge ? now : now - last[e]));
            last[e] = now;
            kv[n++] = c->field;
            kv[n++] = values[CORE + e++];
        }
    kv[n] = NULL;
    if (reqs > 0 && f->d.bus)
        vc_bus_publishv(f->d.bus, VC_EVENT(FRONT_METRICS), VC__SEVERITY__DEBUG, kv);
    last_requests = f->stats.requests;
    last_statics = f->stats.statics;
}
