/*
 * Realtime: each site's apps (id and key; the secret only on an admin's
 * demand, audited, and rotated once the admin typed the app's id back),
 * its webhooks, and the rooms of every front with a presence room's
 * members, and Socket.IO's namespaces and rooms with their sockets. Rooms
 * and members come from the fronts' "rooms" verb, Socket.IO's from their
 * "socketio" verb; apps and webhooks from the configuration in force.
 *
 * A rotation writes where the app is kept: a site file's "ID KEY SECRET"
 * through the supervisor's site-put (configtest, undone if refused,
 * reload), or the default site's DATA/state/realtime-app, then a reload.
 * The old secret stops working at that reload: clients connect with the
 * key, so only the app's server (which signs with the secret) must follow.
 */
#include "forms.h"
#include "panel.h"
#include "vc_config.h"
#include "vc_ctl.h"
#include "vc_realtime.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SITE_APPS 64 /* apps of one site the panel shows */

/* The app of that site and id, in *app; *made: the default site's, made
 * at its first start (else named in the site's settings). 0, or -1 once
 * answered 404. */
static int find_app(preq_t *r, const char *site, const char *id, vc_rt_app_t *app, int *made)
{
    const vc_config_t *cfg = r->p->d.cfg;
    for (size_t i = 0; i < cfg->nsites; i++) {
        if (strcmp(cfg->sites[i].name, site) != 0)
            continue;
        vc_rt_app_t all[SITE_APPS];
        char why[512];
        size_t n = vc_rt_site_apps(&cfg->sites[i], cfg->state_dir, all, SITE_APPS, made, why, sizeof(why));
        for (size_t k = 0; k < n; k++)
            if (strcmp(all[k].id, id) == 0) {
                *app = all[k];
                return 0;
            }
    }
    http_error(r, 404, "site %s has no realtime app %s", site, id);
    return -1;
}

static json_t *app_row(const char *site, const vc_rt_app_t *app, const char *kept)
{
    return json_pack("{s:s,s:s,s:s,s:s}", "site", site, "id", app->id, "key", app->key, "kept", kept);
}

/* The fronts' replies to verb (with arg, if not NULL), each to cb. */
static void each_front(preq_t *r, const char *verb, const char *arg, void (*cb)(const Vc__Reply *rep, json_t *acc),
                       json_t *acc)
{
    Vc__Reply *sup = NULL;
    if (panel_call(r->p, "ctl-vc", "status", NULL, 0, API_CALL_MS, &sup) < 0)
        return;
    for (size_t i = 0; i < sup->n_records; i++) {
        const char *name = vc_record_get(sup->records[i], "daemon");
        if (name == NULL || strncmp(name, "vc-front", 8) != 0)
            continue;
        char *ep = vc_asprintf("ctl-%s", name);
        Vc__Reply *f = NULL;
        const char *args[] = {arg};
        if (panel_call(r->p, ep, verb, args, arg ? 1 : 0, API_CALL_MS, &f) == 0) {
            cb(f, acc);
            vc__reply__free_unpacked(f, NULL);
        }
        free(ep);
    }
    vc__reply__free_unpacked(sup, NULL);
}

/* Sums a row's count fields into the one kept under its key field. */
static void add_rows(const Vc__Reply *f, json_t *acc, const char *key, const char *const *counts, size_t ncounts)
{
    for (size_t k = 0; k < f->n_records; k++) {
        const char *name = vc_record_get(f->records[k], key);
        if (name == NULL)
            continue;
        json_t *row = json_object_get(acc, name);
        if (row == NULL) {
            row = api_fields(f->records[k]->fields, f->records[k]->n_fields);
            for (size_t c = 0; c < ncounts; c++)
                json_object_set_new(row, counts[c], json_integer(0));
            json_object_set_new(acc, name, row);
        }
        for (size_t c = 0; c < ncounts; c++) {
            const char *v = vc_record_get(f->records[k], counts[c]);
            json_int_t was = json_integer_value(json_object_get(row, counts[c]));
            json_object_set_new(row, counts[c], json_integer(was + (v ? strtoll(v, NULL, 10) : 0)));
        }
    }
}

static void add_rooms(const Vc__Reply *f, json_t *acc)
{
    static const char *const counts[] = {"subscribers", "members"};
    add_rows(f, acc, "room", counts, VC_ARRAY_SIZE(counts));
}

static void add_members(const Vc__Reply *f, json_t *acc)
{
    static const char *const counts[] = {"connections"};
    add_rows(f, acc, "user_id", counts, VC_ARRAY_SIZE(counts));
}

/* Socket.IO's rows, summed over the fronts by site, namespace and room
 * (room "": the namespace's every socket). */
static void add_sio(const Vc__Reply *f, json_t *acc)
{
    for (size_t k = 0; k < f->n_records; k++) {
        const char *site = vc_record_get(f->records[k], "site"), *nsp = vc_record_get(f->records[k], "namespace");
        const char *room = vc_record_get(f->records[k], "room"), *n = vc_record_get(f->records[k], "sockets");
        if (site == NULL || nsp == NULL || room == NULL)
            continue;
        char *key = vc_asprintf("%s\n%s\n%s", site, nsp, room);
        json_t *row = json_object_get(acc, key);
        if (row == NULL) {
            row =
                json_pack("{s:s,s:s,s:s,s:I}", "site", site, "namespace", nsp, "room", room, "sockets", (json_int_t)0);
            json_object_set_new(acc, key, row);
        }
        json_int_t was = json_integer_value(json_object_get(row, "sockets"));
        json_object_set_new(row, "sockets", json_integer(was + (n ? strtoll(n, NULL, 10) : 0)));
        free(key);
    }
}

static json_t *values(json_t *by_name)
{
    json_t *list = json_array(), *v;
    const char *k;
    json_object_foreach(by_name, k, v) json_array_append(list, v);
    json_decref(by_name);
    return list;
}

static void overview(preq_t *r)
{
    const vc_config_t *cfg = r->p->d.cfg;
    json_t *apps = json_array(), *hooks = json_array();
    char why[512];
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        vc_rt_app_t all[SITE_APPS];
        int made;
        size_t n = vc_rt_site_apps(s, cfg->state_dir, all, SITE_APPS, &made, why, sizeof(why));
        for (size_t k = 0; k < n; k++)
            json_array_append_new(apps, app_row(s->name, &all[k], made ? "made at first start" : "site file"));
        for (size_t k = 0; k < s->nrealtime_webhooks; k++)
            json_array_append_new(hooks, json_pack("{s:s,s:s}", "site", s->name, "webhook", s->realtime_webhooks[k]));
    }
    json_t *rooms = json_object(), *sio = json_object();
    each_front(r, "rooms", NULL, add_rooms, rooms);
    each_front(r, "socketio", NULL, add_sio, sio);
    http_json(r, 200,
              json_pack("{s:o,s:o,s:o,s:o}", "apps", apps, "webhooks", hooks, "rooms", values(rooms), "socketio",
                        values(sio)));
}

/* GET /api/realtime/members?room=NAME: a presence room's members, summed
 * over the fronts. */
static void members(preq_t *r)
{
    char room[256];
    if (form_query(r->query, strlen(r->query), "room", room, sizeof(room)) <= 0) {
        http_error(r, 400, "members needs ?room=APP:CHANNEL");
        return;
    }
    json_t *by_user = json_object();
    each_front(r, "rooms", room, add_members, by_user);
    http_json(r, 200, json_pack("{s:s,s:o}", "room", room, "members", values(by_user)));
}

/* The body's site and app id, checked; NULL once answered 400. */
static const char *body_app(preq_t *r, const char **site)
{
    const char *id = form_str(r->body, "id", VC_RT_FIELD_MAX - 1);
    *site = form_str(r->body, "site", 63);
    if (id == NULL || *site == NULL || !form_name_ok(*site) || !form_name_ok(id)) {
        http_error(r, 400, "{\"site\": SITE, \"id\": APP_ID}");
        return NULL;
    }
    return id;
}

static void secret(preq_t *r)
{
    const char *site, *id = body_app(r, &site);
    vc_rt_app_t app;
    int made;
    if (id == NULL || find_app(r, site, id, &app, &made) < 0)
        return;
    char target[200];
    snprintf(target, sizeof(target), "%s %s", site, id);
    audit_record(r, "realtime.secret.show", target, "ok");
    http_json(r, 200, json_pack("{s:s,s:s,s:s}", "site", site, "id", id, "secret", app.secret));
}

/* Replaces "ID KEY OLD" by "ID KEY NEW" in the site's file: refused if the
 * line is not there once as written (the app came from elsewhere, or the
 * file holds it twice), rather than guessed at. */
static void rotate_in_file(preq_t *r, const char *site, const vc_rt_app_t *app, const char *target)
{
    char *text = api_sites_text(r, site, NULL);
    if (text == NULL)
        return;
    char *line = vc_asprintf("%s %s %s", app->id, app->key, app->secret);
    char *at = strstr(text, line);
    if (at == NULL || strstr(at + 1, line) != NULL) {
        http_error(r, 409, "\"%s %s ...\" is not written once in site %s's file: change it there by hand", app->id,
                   app->key, site);
        audit_record(r, "realtime.rotate", target, "not in the site's file once");
    } else {
        char fresh[VC_RT_SECRET_LEN + 1];
        vc_rt_new_secret(fresh);
        size_t before = (size_t)(at - text) + strlen(app->id) + strlen(app->key) + 2;
        char *changed = vc_asprintf("%.*s%s%s", (int)before, text, fresh, at + strlen(line));
        api_sites_put(r, site, changed, strlen(changed), "realtime.rotate", target);
        free(changed);
    }
    free(line);
    free(text);
}

/* POST /api/realtime/rotate {"site", "id", "confirm": the id again}. */
static void rotate(preq_t *r)
{
    const char *site, *id = body_app(r, &site);
    if (id == NULL)
        return;
    const char *confirm = form_str(r->body, "confirm", VC_RT_FIELD_MAX - 1);
    if (confirm == NULL || strcmp(confirm, id) != 0) {
        http_error(r, 400, "a rotation is confirmed by typing the app's id again (\"confirm\")");
        return;
    }
    vc_rt_app_t app;
    int made;
    if (find_app(r, site, id, &app, &made) < 0)
        return;
    char target[200];
    snprintf(target, sizeof(target), "%s %s", site, id);
    if (!made) {
        rotate_in_file(r, site, &app, target);
        return;
    }
    char why[512];
    if (vc_rt_default_app_rotate(r->p->d.cfg->state_dir, &app, why, sizeof(why)) < 0) {
        audit_record(r, "realtime.rotate", target, why);
        http_error(r, 500, "%s", why);
        return;
    }
    /* The fronts and vc-bus read the new secret at the reload. */
    const char *args[] = {"vc-panel"};
    if (api_change(r, "ctl-vc", "reload", args, 1, API_LONG_CALL_MS, "realtime.rotate", target) == 0)
        panel_reload_soon();
}

/* clang-format off */
const route_t api_realtime_routes[] = {
    {"GET", "/api/realtime", ACCESS_VIEWER, overview},
    {"GET", "/api/realtime/members", ACCESS_VIEWER, members},
    {"POST", "/api/realtime/secret", ACCESS_STEP_UP, secret},
    {"POST", "/api/realtime/rotate", ACCESS_ADMIN, rotate},
};
/* clang-format on */
const size_t api_realtime_nroutes = VC_ARRAY_SIZE(api_realtime_routes);
