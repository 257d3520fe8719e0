/*
 * What the panel shows of the suite and changes in it: the daemons, the
 * sites, the pools and their workers, the cache. Every change is one
 * control verb of a daemon, with arguments checked here (forms.c) and
 * passed as an argument vector: no shell, no path built from input.
 */
#include "follow.h"
#include "forms.h"
#include "live.h"
#include "panel.h"
#include "vc_config.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void daemons(preq_t *r)
{
    Vc__Reply *rep = api_call(r, "ctl-vc", "status", NULL, 0, API_CALL_MS);
    if (rep == NULL)
        return;
    http_json(
        r, 200,
        json_pack("{s:o,s:o}", "supervisor", api_fields(rep->fields, rep->n_fields), "daemons", api_records(rep)));
    vc__reply__free_unpacked(rep, NULL);
}

static void reload(preq_t *r)
{
    /* "reload vc-panel": the supervisor reloads every daemon but this
     * one, which is waiting for its answer (as vc-fed asks); the panel
     * then takes the stored configuration itself (main.c). */
    const char *args[] = {"vc-panel"};
    if (api_change(r, "ctl-vc", "reload", args, 1, API_LONG_CALL_MS, "reload", "") == 0)
        panel_reload_soon();
}

/* "ctl-vc-php" for the default pool, "ctl-vc-php.NAME" for another; NULL
 * if the configuration has no such pool. */
static char *pool_endpoint(const vc_config_t *cfg, const char *pool)
{
    if (vc_config_pool(cfg, pool) == NULL)
        return NULL;
    return strcmp(pool, "default") == 0 ? vc_strdup("ctl-vc-php") : vc_asprintf("ctl-vc-php.%s", pool);
}

static json_t *pool_status(preq_t *r, const char *pool)
{
    char *ep = pool_endpoint(r->p->d.cfg, pool);
    Vc__Reply *rep = NULL;
    int rc = panel_call(r->p, ep, "status", NULL, 0, API_CALL_MS, &rep);
    free(ep);
    if (rc < 0)
        return json_pack("{s:s,s:s}", "pool", pool, "error", vc_strerror(rc));
    json_t *o = api_fields(rep->fields, rep->n_fields), *workers = json_array();
    for (size_t i = 0; i < rep->n_records; i++)
        json_array_append_new(workers, api_fields(rep->records[i]->fields, rep->records[i]->n_fields));
    json_object_set_new(o, "pool", json_string(pool));
    json_object_set_new(o, "workers_list", workers);
    vc__reply__free_unpacked(rep, NULL);
    /* Its sites' background processes and schedule entries (vc bg). */
    json_t *bg = json_array();
    ep = pool_endpoint(r->p->d.cfg, pool);
    if (panel_call(r->p, ep, "background", NULL, 0, API_CALL_MS, &rep) == 0) {
        for (size_t i = 0; i < rep->n_records; i++)
            json_array_append_new(bg, api_fields(rep->records[i]->fields, rep->records[i]->n_fields));
        vc__reply__free_unpacked(rep, NULL);
    }
    free(ep);
    json_object_set_new(o, "background_list", bg);
    return o;
}

static void pools(preq_t *r)
{
    const vc_config_t *cfg = r->p->d.cfg;
    json_t *list = json_array();
    json_array_append_new(list, pool_status(r, "default"));
    for (size_t i = 0; i < cfg->npools; i++)
        json_array_append_new(list, pool_status(r, cfg->pools[i].name));
    http_json(r, 200, json_pack("{s:o}", "pools", list));
}

static void scale(preq_t *r)
{
    const char *pool = form_str(r->body, "pool", 63);
    json_t *w = json_object_get(r->body, "workers");
    char *ep = pool && form_name_ok(pool) ? pool_endpoint(r->p->d.cfg, pool) : NULL;
    if (ep == NULL || !json_is_integer(w) || json_integer_value(w) < 1 || json_integer_value(w) > 1024) {
        free(ep);
        http_error(r, 400, "scale needs a pool of the configuration and workers from 1 to 1024");
        return;
    }
    char n[24], target[96];
    snprintf(n, sizeof(n), "%lld", (long long)json_integer_value(w));
    snprintf(target, sizeof(target), "%s to %s", pool, n);
    const char *args[] = {n};
    api_change(r, ep, "scale", args, 1, API_CALL_MS, "pool.scale", target);
    free(ep);
}

/* The pool named by the body's "pool": its control endpoint, or NULL
 * once answered 400. */
static char *body_pool(preq_t *r)
{
    const char *pool = form_str(r->body, "pool", 63);
    char *ep = pool && form_name_ok(pool) ? pool_endpoint(r->p->d.cfg, pool) : NULL;
    if (ep == NULL)
        http_error(r, 400, "no pool named so in the configuration");
    return ep;
}

/* A new zygote generation for the pool, with the stored configuration. */
static void pool_reload(preq_t *r)
{
    char *ep = body_pool(r);
    if (ep)
        api_change(r, ep, "reload", NULL, 0, API_LONG_CALL_MS, "pool.reload", form_str(r->body, "pool", 63));
    free(ep);
}

/* One worker replaced once its request is answered. */
static void pool_recycle(preq_t *r)
{
    json_t *pid = json_object_get(r->body, "pid");
    if (!json_is_integer(pid) || json_integer_value(pid) < 1 || json_integer_value(pid) > 0x3fffffff) {
        http_error(r, 400, "recycle needs {\"pool\": NAME, \"pid\": a worker's pid}");
        return;
    }
    char *ep = body_pool(r);
    if (ep == NULL)
        return;
    char n[24], target[96];
    snprintf(n, sizeof(n), "%lld", (long long)json_integer_value(pid));
    snprintf(target, sizeof(target), "%s worker %s", form_str(r->body, "pool", 63), n);
    const char *args[] = {n};
    api_change(r, ep, "recycle", args, 1, API_CALL_MS, "pool.recycle", target);
    free(ep);
}

/* Whether name is an entry of site's: one of its background processes,
 * or "schedule:N" for its Nth schedule line. */
static int site_entry(const vc_site_t *s, const char *name)
{
    for (size_t i = 0; i < s->nbackground; i++)
        if (strcmp(s->background[i].name, name) == 0)
            return 1;
    char *end = NULL;
    if (strncmp(name, "schedule:", 9) != 0 || name[9] < '1' || name[9] > '9')
        return 0;
    unsigned long n = strtoul(name + 9, &end, 10);
    return *end == '\0' && n <= s->nschedule;
}

/* Start, stop or restart one background entry of a site (vc bg start|
 * stop|restart SITE NAME), through the site's own pool. */
static void pool_background(preq_t *r)
{
    const vc_config_t *cfg = r->p->d.cfg;
    const char *site = form_str(r->body, "site", 255), *name = form_str(r->body, "name", 64),
               *action = form_str(r->body, "action", 16);
    const vc_site_t *s = NULL;
    for (size_t i = 0; site && i < cfg->nsites && s == NULL; i++)
        if (strcmp(cfg->sites[i].name, site) == 0)
            s = &cfg->sites[i];
    int ok_action = action && (!strcmp(action, "start") || !strcmp(action, "stop") || !strcmp(action, "restart"));
    if (s == NULL || name == NULL || !site_entry(s, name) || !ok_action) {
        http_error(r, 400,
                   "background needs {\"site\": a site, \"name\": one of its background or schedule entries, "
                   "\"action\": \"start\"|\"stop\"|\"restart\"}");
        return;
    }
    char *ep = pool_endpoint(cfg, s->pool ? s->pool : "default");
    char verb[32], target[400];
    snprintf(verb, sizeof(verb), "background-%s", action);
    snprintf(target, sizeof(target), "%s/%s", site, name);
    const char *args[] = {site, name};
    char audit[48];
    snprintf(audit, sizeof(audit), "background.%s", action);
    api_change(r, ep, verb, args, 2, API_CALL_MS, audit, target);
    free(ep);
}

static void purge(preq_t *r)
{
    const vc_config_t *cfg = r->p->d.cfg;
    const char *kind = form_str(r->body, "kind", 16), *value = form_str(r->body, "value", 2048);
    char *hosts = NULL;
    int ok = kind && value && value[0];
    if (ok && strcmp(kind, "site") == 0) {
        /* A site purges by its host names, as `vc cache purge site` does. */
        const vc_site_t *s = NULL;
        for (size_t i = 0; i < cfg->nsites && s == NULL; i++)
            if (strcmp(cfg->sites[i].name, value) == 0)
                s = &cfg->sites[i];
        if (s == NULL) {
            http_error(r, 404, "no site %s", value);
            return;
        }
        size_t len = 0;
        FILE *out = open_memstream(&hosts, &len);
        for (size_t h = 0; h < s->nhosts; h++)
            fprintf(out, "%s%s", h ? "," : "", s->hosts[h]);
        fclose(out);
    } else if (ok) {
        ok = strcmp(kind, "url") == 0 || strcmp(kind, "prefix") == 0 || strcmp(kind, "tag") == 0;
    }
    if (!ok) {
        http_error(r, 400, "a purge is {\"kind\": \"url\"|\"prefix\"|\"tag\"|\"site\", \"value\": ...}");
        return;
    }
    const char *args[] = {kind, hosts ? hosts : value};
    char target[2100];
    snprintf(target, sizeof(target), "%s %s", kind, value);
    api_change(r, "ctl-vc-cache", "purge", args, 2, API_LONG_CALL_MS, "cache.purge", target);
    free(hosts);
}

static void cache_stats(preq_t *r)
{
    Vc__Reply *rep = api_call(r, "ctl-vc-cache", "stats", NULL, 0, API_CALL_MS);
    if (rep == NULL)
        return;
    http_json(r, 200, api_fields(rep->fields, rep->n_fields));
    vc__reply__free_unpacked(rep, NULL);
}

/* GET /api/cache/show?url=URL: what vc-cache holds for a URL, a record
 * a variant, its stored headers as a list. */
static void cache_show(preq_t *r)
{
    char url[2048];
    int n = form_query(r->query, strlen(r->query), "url", url, sizeof(url));
    if (n <= 0 || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)) {
        http_error(r, 400, "show needs ?url= an http:// or https:// URL");
        return;
    }
    const char *args[] = {url};
    Vc__Reply *rep = api_call(r, "ctl-vc-cache", "show", args, 1, API_CALL_MS);
    if (rep == NULL)
        return;
    json_t *records = json_array();
    for (size_t i = 0; i < rep->n_records; i++) {
        json_t *o = json_object(), *headers = json_array();
        for (size_t k = 0; k < rep->records[i]->n_fields; k++) {
            const Vc__Field *f = rep->records[i]->fields[k];
            if (strcmp(f->key, "header") == 0)
                json_array_append_new(headers, json_string(f->value));
            else
                json_object_set_new(o, f->key, json_string(f->value));
        }
        json_object_set_new(o, "headers", headers);
        json_array_append_new(records, o);
    }
    http_json(r, rep->ok ? 200 : 404,
              json_pack("{s:s,s:o}", rep->ok ? "message" : "error", rep->message, "entries", records));
    vc__reply__free_unpacked(rep, NULL);
}

/* One route a line: a table to read down (clang-format would pack it). */
/* clang-format off */
const route_t api_suite_routes[] = {
    {"GET", "/api/daemons", ACCESS_VIEWER, daemons},
    {"POST", "/api/reload", ACCESS_ADMIN, reload},
    {"GET", "/api/pools", ACCESS_VIEWER, pools},
    {"POST", "/api/pools/scale", ACCESS_ADMIN, scale},
    {"POST", "/api/pools/reload", ACCESS_ADMIN, pool_reload},
    {"POST", "/api/pools/recycle", ACCESS_ADMIN, pool_recycle},
    {"POST", "/api/pools/background", ACCESS_ADMIN, pool_background},
    {"GET", "/api/cache", ACCESS_VIEWER, cache_stats},
    {"POST", "/api/cache/purge", ACCESS_ADMIN, purge},
    {"GET", "/api/cache/show", ACCESS_VIEWER, cache_show},
    {"GET", "/api/live", ACCESS_VIEWER, live_subscribe},
    {"GET", "/api/follow", ACCESS_VIEWER, follow_subscribe},
};
/* clang-format on */
const size_t api_suite_nroutes = VC_ARRAY_SIZE(api_suite_routes);
