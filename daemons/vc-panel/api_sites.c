/*
 * Sites: the running ones (their hosts, root and pool, from the
 * configuration in force) beside every site file the supervisor finds in
 * sites-available, enabled or not; and an admin's changes to those
 * files, which the supervisor makes as root, checks with configtest
 * (refused and undone with its file:line reason) and reloads (cli/
 * site_edit.c). The panel never writes the configuration directory.
 */
#include "forms.h"
#include "panel.h"
#include "vc_config.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *strings(char *const *s, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(s[i]));
    return a;
}

static void list(preq_t *r)
{
    const vc_config_t *cfg = r->p->d.cfg;
    json_t *sites = json_object();
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        json_object_set_new(sites, s->name,
                            json_pack("{s:s,s:o,s:s?,s:s,s:b,s:b}", "name", s->name, "hosts",
                                      strings(s->hosts, s->nhosts), "root", s->root, "pool",
                                      s->pool ? s->pool : "default", "running", 1, "enabled", 1));
    }
    /* The files, enabled or not; one not running yet shows as such. */
    Vc__Reply *rep = NULL;
    if (panel_call(r->p, "ctl-vc", "site-list", NULL, 0, API_CALL_MS, &rep) == 0) {
        for (size_t i = 0; i < rep->n_records; i++) {
            const char *name = vc_record_get(rep->records[i], "site");
            const char *enabled = vc_record_get(rep->records[i], "enabled");
            if (name == NULL || json_object_get(sites, name))
                continue;
            json_object_set_new(sites, name,
                                json_pack("{s:s,s:[],s:b,s:b}", "name", name, "hosts", "running", 0, "enabled",
                                          enabled && strcmp(enabled, "yes") == 0));
        }
        vc__reply__free_unpacked(rep, NULL);
    }
    json_t *out = json_array();
    const char *name;
    json_t *site;
    json_object_foreach(sites, name, site) json_array_append(out, site);
    json_decref(sites);
    http_json(r, 200, json_pack("{s:o}", "sites", out));
}

/* The site named by the query (GET) or the body (POST), checked. */
static const char *site_name(preq_t *r, char *buf, size_t len)
{
    const char *name = NULL;
    if (r->body)
        name = form_str(r->body, "name", 63);
    else if (form_query(r->query, strlen(r->query), "name", buf, len) > 0)
        name = buf;
    if (name == NULL || !form_name_ok(name) || name[0] == '@') {
        http_error(r, 400, "a site's name is 1 to 63 of a-z, A-Z, 0-9, '.', '_', '-'");
        return NULL;
    }
    return name;
}

/* Answers a change the supervisor made or refused (422: configtest's
 * reason, file and line, for the form). */
static void answer_change(preq_t *r, int rc, Vc__Reply *rep, const char *action, const char *name)
{
    if (rc < 0) {
        http_error(r, 502, "the supervisor does not answer: %s", vc_strerror(rc));
        return;
    }
    audit_record(r, action, name, rep->ok ? "ok" : rep->message);
    if (rep->ok) {
        panel_reload_soon(); /* the supervisor reloaded the others, not the panel */
        http_json(r, 200, json_pack("{s:b,s:s}", "ok", 1, "message", rep->message));
    } else {
        http_error(r, 422, "%s", rep->message);
    }
    vc__reply__free_unpacked(rep, NULL);
}

char *api_sites_text(preq_t *r, const char *name, int *enabled)
{
    const char *args[] = {name};
    Vc__Reply *rep = NULL;
    int rc = panel_call(r->p, "ctl-vc", "site-get", args, 1, API_CALL_MS, &rep);
    if (rc < 0) {
        http_error(r, 502, "the supervisor does not answer: %s", vc_strerror(rc));
        return NULL;
    }
    char *text = NULL;
    if (!rep->ok) {
        http_error(r, 404, "%s", rep->message);
    } else {
        text = vc_strndup((const char *)rep->payload.data, rep->payload.len);
        const char *on = vc_reply_get(rep, "enabled");
        if (enabled)
            *enabled = on && strcmp(on, "yes") == 0;
    }
    vc__reply__free_unpacked(rep, NULL);
    return text;
}

void api_sites_put(preq_t *r, const char *name, const char *text, size_t len, const char *action, const char *target)
{
    const char *args[] = {name, "vc-panel"};
    Vc__Reply *rep = NULL;
    char *ep = vc_config_endpoint(r->p->d.cfg, "ctl-vc");
    int rc = vc_ctl_call_payload(r->p->d.zctx, ep, "site-put", args, 2, text, len, API_LONG_CALL_MS, &rep);
    free(ep);
    answer_change(r, rc, rep, action, target);
}

static void file(preq_t *r)
{
    char buf[64];
    const char *name = site_name(r, buf, sizeof(buf));
    int enabled = 0;
    char *text = name ? api_sites_text(r, name, &enabled) : NULL;
    if (text == NULL)
        return;
    json_t *t = json_string(text);
    if (t == NULL) /* not UTF-8: shown as nothing rather than mangled */
        t = json_string("");
    http_json(r, 200, json_pack("{s:s,s:o,s:b}", "name", name, "text", t, "enabled", enabled));
    free(text);
}

static void save(preq_t *r)
{
    const char *name = site_name(r, NULL, 0);
    if (name == NULL)
        return;
    const json_t *t = json_object_get(r->body, "text");
    if (!json_is_string(t) || json_string_length(t) > 256 * 1024) {
        http_error(r, 400, "a site file is {\"name\": ..., \"text\": ...} of 256 KiB or less");
        return;
    }
    api_sites_put(r, name, json_string_value(t), json_string_length(t), "site.save", name);
}

static void enable(preq_t *r)
{
    const char *name = site_name(r, NULL, 0);
    if (name == NULL)
        return;
    const json_t *on = json_object_get(r->body, "enabled");
    if (!json_is_boolean(on)) {
        http_error(r, 400, "{\"name\": ..., \"enabled\": true|false}");
        return;
    }
    const char *args[] = {name, "vc-panel"};
    Vc__Reply *rep = NULL;
    int rc =
        panel_call(r->p, "ctl-vc", json_is_true(on) ? "site-enable" : "site-disable", args, 2, API_LONG_CALL_MS, &rep);
    answer_change(r, rc, rep, json_is_true(on) ? "site.enable" : "site.disable", name);
}

const route_t api_sites_routes[] = {
    {"GET", "/api/sites", ACCESS_VIEWER, list},
    {"GET", "/api/sites/file", ACCESS_ADMIN, file}, /* a site file may hold an app's secret */
    {"POST", "/api/sites/save", ACCESS_ADMIN, save},
    {"POST", "/api/sites/enable", ACCESS_ADMIN, enable},
};
const size_t api_sites_nroutes = VC_ARRAY_SIZE(api_sites_routes);
