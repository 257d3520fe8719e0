/*
 * What the panel shows of the suite and changes in it: the daemons, the
 * sites, the pools and their workers, the cache. Every change is one
 * control verb of a daemon, with arguments checked here (forms.c) and
 * passed as an argument vector: no shell, no path built from input.
 */
#include "forms.h"
#include "live.h"
#include "panel.h"
#include "vc_config.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALL_MS 3000
#define LONG_CALL_MS 30000 /* a reload or a purge waits for what it replaces */

/* The reply's fields as a JSON object (a new reference). */
static json_t *fields(Vc__Field *const *f, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, f[i]->key, json_string(f[i]->value));
    return o;
}

/* Calls a daemon and answers 502 with why if it cannot: the reply, or NULL. */
static Vc__Reply *call(preq_t *r, const char *endpoint, const char *verb, const char *const *args, size_t n, long ms)
{
    Vc__Reply *rep = NULL;
    int rc = panel_call(r->p, endpoint, verb, args, n, ms, &rep);
    if (rc < 0) {
        http_error(r, 502, "%s does not answer: %s", endpoint + 4, vc_strerror(rc));
        return NULL;
    }
    return rep;
}

static void daemons(preq_t *r)
{
    Vc__Reply *rep = call(r, "ctl-vc", "status", NULL, 0, CALL_MS);
    if (rep == NULL)
        return;
    json_t *list = json_array();
    for (size_t i = 0; i < rep->n_records; i++)
        json_array_append_new(list, fields(rep->records[i]->fields, rep->records[i]->n_fields));
    http_json(r, 200, json_pack("{s:o,s:o}", "supervisor", fields(rep->fields, rep->n_fields), "daemons", list));
    vc__reply__free_unpacked(rep, NULL);
}

static void reload(preq_t *r)
{
    /* "reload vc-panel": the supervisor reloads every daemon but this
     * one, which is waiting for its answer (as vc-fed asks); the panel
     * then takes the stored configuration itself (main.c). */
    const char *args[] = {"vc-panel"};
    Vc__Reply *rep = call(r, "ctl-vc", "reload", args, 1, LONG_CALL_MS);
    if (rep == NULL)
        return;
    audit_record(r, "reload", "", rep->ok ? "ok" : rep->message);
    if (rep->ok)
        panel_reload_soon();
    if (rep->ok)
        http_json(r, 200, json_pack("{s:b,s:s}", "ok", 1, "message", rep->message));
    else
        http_error(r, 409, "%s", rep->message);
    vc__reply__free_unpacked(rep, NULL);
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
    int rc = panel_call(r->p, ep, "status", NULL, 0, CALL_MS, &rep);
    free(ep);
    if (rc < 0)
        return json_pack("{s:s,s:s}", "pool", pool, "error", vc_strerror(rc));
    json_t *o = fields(rep->fields, rep->n_fields), *workers = json_array();
    for (size_t i = 0; i < rep->n_records; i++)
        json_array_append_new(workers, fields(rep->records[i]->fields, rep->records[i]->n_fields));
    json_object_set_new(o, "pool", json_string(pool));
    json_object_set_new(o, "workers_list", workers);
    vc__reply__free_unpacked(rep, NULL);
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
    Vc__Reply *rep = call(r, ep, "scale", args, 1, CALL_MS);
    free(ep);
    if (rep == NULL)
        return;
    audit_record(r, "pool.scale", target, rep->ok ? "ok" : rep->message);
    if (rep->ok)
        http_json(r, 200, json_pack("{s:b,s:s}", "ok", 1, "message", rep->message));
    else
        http_error(r, 409, "%s", rep->message);
    vc__reply__free_unpacked(rep, NULL);
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
    Vc__Reply *rep = call(r, "ctl-vc-cache", "purge", args, 2, LONG_CALL_MS);
    free(hosts);
    if (rep == NULL)
        return;
    char target[2100];
    snprintf(target, sizeof(target), "%s %s", kind, value);
    audit_record(r, "cache.purge", target, rep->ok ? "ok" : rep->message);
    if (rep->ok)
        http_json(
            r, 200,
            json_pack("{s:b,s:s,s:o}", "ok", 1, "message", rep->message, "fields", fields(rep->fields, rep->n_fields)));
    else
        http_error(r, 409, "%s", rep->message);
    vc__reply__free_unpacked(rep, NULL);
}

static void cache_stats(preq_t *r)
{
    Vc__Reply *rep = call(r, "ctl-vc-cache", "stats", NULL, 0, CALL_MS);
    if (rep == NULL)
        return;
    http_json(r, 200, fields(rep->fields, rep->n_fields));
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
    Vc__Reply *rep = call(r, "ctl-vc-cache", "show", args, 1, CALL_MS);
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
    {"GET", "/api/cache", ACCESS_VIEWER, cache_stats},
    {"POST", "/api/cache/purge", ACCESS_ADMIN, purge},
    {"GET", "/api/cache/show", ACCESS_VIEWER, cache_show},
    {"GET", "/api/live", ACCESS_VIEWER, live_subscribe},
};
/* clang-format on */
const size_t api_suite_nroutes = VC_ARRAY_SIZE(api_suite_routes);
