/*
 * Users (an admin adds them with a role and a one-time password, removes
 * them, resets their TOTP) and the audit log (the panel.audit events the
 * bus journaled, newest first).
 */
#include "forms.h"
#include "panel.h"
#include "records.h"
#include "sessions.h"
#include "step_up.h"
#include "users.h"
#include "vc_events.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

static void list(preq_t *r)
{
    json_t *all = records_all(r->p->store, PANEL_DB_USERS), *out = json_array();
    const char *name;
    json_t *rec;
    json_object_foreach(all, name, rec)
    {
        json_array_append_new(out, json_pack("{s:s,s:O?,s:b,s:b}", "user", name, "role", json_object_get(rec, "role"),
                                             "totp", json_object_get(rec, "totp") != NULL, "must_change",
                                             json_is_true(json_object_get(rec, "must_change"))));
    }
    json_decref(all);
    http_json(r, 200, json_pack("{s:o}", "users", out));
}

/* The user named in the body, checked: NULL after answering 400. */
static const char *named_user(preq_t *r)
{
    const char *user = form_str(r->body, "user", 63);
    if (user == NULL || !form_name_ok(user)) {
        http_error(r, 400, "a user name is 1 to 63 of a-z, A-Z, 0-9, '.', '_', '-', '@'");
        return NULL;
    }
    return user;
}

/* The user and the role named in the body, checked: NULL after answering
 * 400. */
static const char *named_user_and_role(preq_t *r, const char **role)
{
    const char *user = named_user(r);
    *role = form_str(r->body, "role", 16);
    if (user && (*role == NULL || (strcmp(*role, "admin") != 0 && strcmp(*role, "viewer") != 0))) {
        http_error(r, 400, "a role is admin or viewer");
        return NULL;
    }
    return user;
}

static void add(preq_t *r)
{
    const char *role, *user = named_user_and_role(r, &role);
    if (user == NULL)
        return;
    json_t *old = users_get(r->p, user);
    json_decref(old);
    if (old) {
        http_error(r, 409, "there is already a user %s", user);
        return;
    }
    char *password = users_random_password(), why[160];
    if (users_set_password(r->p, user, password, role, 1, why, sizeof(why)) < 0) {
        free(password);
        http_error(r, 503, "%s", why);
        return;
    }
    audit_record(r, "user.add", user, "ok");
    /* Shown once, to be handed over; the first sign-in must change it. */
    http_json(r, 200, json_pack("{s:s,s:s,s:s}", "user", user, "role", role, "password", password));
    free(password);
}

static void remove_user(preq_t *r)
{
    const char *user = named_user(r);
    if (user == NULL)
        return;
    if (strcmp(user, r->user) == 0) {
        http_error(r, 400, "you cannot remove yourself");
        return;
    }
    json_t *old = users_get(r->p, user);
    json_decref(old);
    if (old == NULL) {
        http_error(r, 404, "no user %s", user);
        return;
    }
    users_put(r->p, user, NULL);
    sessions_drop_user(r->p, user, NULL);
    audit_record(r, "user.remove", user, "ok");
    http_json(r, 200, json_pack("{s:b}", "ok", 1));
}

/* How many admins there are. */
static size_t admins(panel_t *p)
{
    json_t *all = records_all(p->store, PANEL_DB_USERS);
    const char *name;
    json_t *rec;
    size_t n = 0;
    json_object_foreach(all, name, rec)
    {
        n += json_is_string(json_object_get(rec, "role")) &&
             !strcmp(json_string_value(json_object_get(rec, "role")), "admin");
    }
    json_decref(all);
    return n;
}

/* {user, role}: a viewer made an admin is a step-up, as adding one is; the
 * last admin stays one. The user's sessions end: the next sign-in has the
 * new role. */
static void set_role(preq_t *r)
{
    const char *role, *user = named_user_and_role(r, &role);
    if (user == NULL)
        return;
    json_t *rec = users_get(r->p, user);
    if (rec == NULL) {
        http_error(r, 404, "no user %s", user);
        return;
    }
    const char *now = json_string_value(json_object_get(rec, "role"));
    if (now && strcmp(now, role) == 0) {
        json_decref(rec);
        http_json(r, 200, json_pack("{s:s,s:s}", "user", user, "role", role));
        return;
    }
    if (strcmp(role, "admin") == 0 && !step_up(r, "user.role")) {
        json_decref(rec);
        return;
    }
    if (now && strcmp(now, "admin") == 0 && admins(r->p) <= 1) {
        json_decref(rec);
        http_error(r, 409, "%s is the last admin: make another admin first", user);
        return;
    }
    json_object_set_new(rec, "role", json_string(role));
    users_put(r->p, user, rec);
    json_decref(rec);
    sessions_drop_user(r->p, user, NULL);
    char target[96];
    snprintf(target, sizeof(target), "%s to %s", user, role);
    audit_record(r, "user.role", target, "ok");
    http_json(r, 200, json_pack("{s:s,s:s}", "user", user, "role", role));
}

/* Another's: an admin's. One's own: a step-up too, or a stolen session
 * would reset it, enrol a TOTP of its own, and open a terminal. */
static void totp_reset(preq_t *r)
{
    const char *user = named_user(r);
    if (user == NULL || (strcmp(user, r->user) == 0 && !step_up(r, "user.totp_reset")))
        return;
    json_t *rec = users_get(r->p, user);
    if (rec == NULL) {
        http_error(r, 404, "no user %s", user);
        return;
    }
    json_object_del(rec, "totp");
    json_object_del(rec, "totp_pending");
    json_object_del(rec, "recovery");
    json_object_del(rec, "last_step");
    users_put(r->p, user, rec);
    json_decref(rec);
    audit_record(r, "user.totp_reset", user, "ok");
    http_json(r, 200, json_pack("{s:b}", "ok", 1));
}

#define AUDIT_SHOWN 200

static int audit_take(const Vc__Envelope *e, void *arg)
{
    json_t *out = arg;
    if (strcmp(e->topic, VC_EVENT(PANEL_AUDIT)) == 0) {
        json_t *ev = json_pack("{s:I}", "time_ms", (json_int_t)(e->time_us / 1000));
        for (size_t i = 0; i < e->n_fields; i++)
            json_object_set_new(ev, e->fields[i]->key, json_string(e->fields[i]->value));
        json_array_append_new(out, ev);
    }
    return json_array_size(out) >= AUDIT_SHOWN;
}

static void audit_log(preq_t *r)
{
    json_t *out = json_array();
    panel_journal_newest(r->p, audit_take, out);
    http_json(r, 200, json_pack("{s:o}", "events", out));
}

const route_t api_users_routes[] = {
    {"GET", "/api/users", ACCESS_ADMIN, list},
    {"POST", "/api/users/add", ACCESS_STEP_UP, add},
    {"POST", "/api/users/remove", ACCESS_ADMIN, remove_user},
    {"POST", "/api/users/role", ACCESS_ADMIN, set_role},
    {"POST", "/api/users/totp-reset", ACCESS_ADMIN, totp_reset},
    {"GET", "/api/audit", ACCESS_VIEWER, audit_log},
};
const size_t api_users_nroutes = VC_ARRAY_SIZE(api_users_routes);
