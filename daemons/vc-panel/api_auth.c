/*
 * Signing in and out, the password, and TOTP enrolment (docs/panel.md,
 * "Signing in"). http.c has checked the origin, the CSRF token and the
 * session before any of these run.
 */
#include "forms.h"
#include "lockout.h"
#include "panel.h"
#include "qr.h"
#include "sessions.h"
#include "totp.h"
#include "step_up.h"
#include "users.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_cookie(preq_t *r, const char *token)
{
    char v[160];
    if (token)
        snprintf(v, sizeof(v), "%s=%s; Path=/; Secure; HttpOnly; SameSite=Strict", SESSION_COOKIE, token);
    else
        snprintf(v, sizeof(v), "%s=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0", SESSION_COOKIE);
    http_header(r, "set-cookie", v);
}

/* 429 while the account or the address must wait: 1 if answered. */
static int refused_for_failures(preq_t *r, const char *ukey, const char *akey, const char *user)
{
    lockout_t *l = r->p->lockout;
    int64_t now = vc_wall_ms();
    int ulocked, alocked;
    int64_t uwait = lockout_wait(l, ukey, now, &ulocked), await = lockout_wait(l, akey, now, &alocked);
    int64_t wait = uwait > await ? uwait : await;
    if (wait == 0)
        return 0;
    int locked = uwait >= await ? ulocked : alocked;
    long s = (long)((wait + 999) / 1000);
    char retry[24];
    snprintf(retry, sizeof(retry), "%ld", s);
    http_header(r, "retry-after", retry);
    const char *whom = uwait >= await ? "this account" : "this address";
    if (locked) {
        audit_record(r, "signin", user, "locked out");
        http_error(r, 429, "too many failed sign-ins for %s: locked for %ld s", whom, s);
    } else {
        audit_record(r, "signin", user, "slowed down");
        http_error(r, 429, "too many failed sign-ins for %s: wait %ld s before trying again", whom, s);
    }
    return 1;
}

static void login(preq_t *r)
{
    panel_t *p = r->p;
    const char *given = form_str(r->body, "user", 63), *password = form_str(r->body, "password", PASSWORD_MAX);
    const char *code = form_str(r->body, "code", 16);
    /* A name that could not be an account is still counted (as one
     * key), and still costs the hash: the answer does not tell. */
    const char *user = given && form_name_ok(given) ? given : "(not a name)";
    char ukey[80], akey[80];
    snprintf(ukey, sizeof(ukey), "u:%s", user);
    snprintf(akey, sizeof(akey), "a:%s", r->addr);
    if (refused_for_failures(r, ukey, akey, user))
        return;
    json_t *rec = strcmp(user, "(not a name)") != 0 ? users_get(p, user) : NULL;
    int ok = users_check_password(rec, password ? password : "");
    if (ok && json_object_get(rec, "totp") && (code == NULL || code[0] == '\0')) {
        /* The password was right: no failure counted, but nothing given. */
        json_decref(rec);
        http_json(r, 401,
                  json_pack("{s:s,s:b}", "error",
                            "enter the code from your authenticator app, or a "
                            "recovery code",
                            "need_code", 1));
        return;
    }
    if (ok && code && !step_up_second_factor(rec, code))
        ok = 0;
    if (!ok) {
        json_decref(rec);
        lockout_failed(p->lockout, ukey, vc_wall_ms());
        lockout_failed(p->lockout, akey, vc_wall_ms());
        p->failed_signins++;
        audit_record(r, "signin", user, "wrong password or code");
        http_error(r, 401, "wrong user name, password or code");
        return;
    }
    users_put(p, user, rec); /* the step or the recovery code used */
    lockout_passed(p->lockout, ukey);
    lockout_passed(p->lockout, akey);
    /* A new session every sign-in, whatever cookie came with it: the
     * one the request carried (if any) ends here. */
    if (r->sid[0])
        sessions_drop(p, r->sid);
    char token[SESSION_TOKEN_LEN + 1], csrf[SESSION_TOKEN_LEN + 1];
    if (sessions_new(p, user, r->addr, token, csrf) < 0) {
        json_decref(rec);
        http_error(r, 503, "the sessions database refused a new session");
        return;
    }
    p->signins++;
    set_cookie(r, token);
    snprintf(r->user, sizeof(r->user), "%s", user);
    audit_record(r, "signin", user, "ok");
    int must_change = json_is_true(json_object_get(rec, "must_change"));
    http_json(r, 200,
              json_pack("{s:s,s:O?,s:b,s:s,s:b}", "user", user, "role", json_object_get(rec, "role"), "must_change",
                        must_change, "csrf", csrf, "totp", json_object_get(rec, "totp") != NULL));
    json_decref(rec);
}

static void logout(preq_t *r)
{
    sessions_drop(r->p, r->sid);
    set_cookie(r, NULL);
    audit_record(r, "signout", r->user, "ok");
    http_json(r, 200, json_pack("{s:b}", "ok", 1));
}

static void me(preq_t *r)
{
    json_t *rec = users_get(r->p, r->user);
    int totp = rec && json_object_get(rec, "totp") != NULL;
    size_t left = rec ? json_array_size(json_object_get(rec, "recovery")) : 0;
    json_decref(rec);
    http_json(r, 200,
              json_pack("{s:s,s:s,s:b,s:b,s:i,s:s,s:b}", "user", r->user, "role", r->role, "must_change",
                        r->must_change, "totp", totp, "recovery_left", (int)left, "csrf", r->csrf, "terminal",
                        r->p->cfg->terminal && r->p->terminal_fd >= 0));
}

static void password(preq_t *r)
{
    panel_t *p = r->p;
    const char *old = form_str(r->body, "old", PASSWORD_MAX), *new = form_str(r->body, "new", PASSWORD_MAX);
    char ukey[80];
    snprintf(ukey, sizeof(ukey), "u:%s", r->user);
    int locked;
    if (lockout_wait(p->lockout, ukey, vc_wall_ms(), &locked) > 0) {
        http_error(r, 429, "too many wrong passwords: wait before trying again");
        return;
    }
    json_t *rec = users_get(p, r->user);
    int ok = users_check_password(rec, old ? old : "");
    json_decref(rec);
    if (!ok) {
        lockout_failed(p->lockout, ukey, vc_wall_ms());
        audit_record(r, "password", r->user, "wrong current password");
        http_error(r, 403, "the current password is wrong");
        return;
    }
    char why[160];
    if (new == NULL || strcmp(new, old) == 0) {
        http_error(r, 400, "choose a new password, not the current one");
        return;
    }
    if (users_set_password(p, r->user, new, NULL, 0, why, sizeof(why)) < 0) {
        http_error(r, 400, "%s", why);
        return;
    }
    /* Anyone else signed in as this user (with the old password) is out. */
    sessions_drop_user(p, r->user, r->sid);
    users_first_password_spent(p, r->user);
    audit_record(r, "password", r->user, "ok");
    http_json(r, 200, json_pack("{s:b}", "ok", 1));
}

static void totp_begin(preq_t *r)
{
    json_t *rec = users_get(r->p, r->user);
    if (rec == NULL || json_object_get(rec, "totp")) {
        json_decref(rec);
        http_error(r, 409, "two-factor sign-in is already on; an admin can reset it");
        return;
    }
    char secret[TOTP_SECRET_B32];
    totp_new_secret(secret);
    json_object_set_new(rec, "totp_pending", json_string(secret));
    users_put(r->p, r->user, rec);
    json_decref(rec);
    char *uri = totp_uri(r->user, secret);
    http_json(r, 200, json_pack("{s:s,s:s}", "secret", secret, "uri", uri));
    free(uri);
}

static void totp_qr(preq_t *r)
{
    json_t *rec = users_get(r->p, r->user);
    const char *secret = rec ? json_string_value(json_object_get(rec, "totp_pending")) : NULL;
    char *uri = secret ? totp_uri(r->user, secret) : NULL;
    char *svg = uri ? qr_svg(uri) : NULL;
    json_decref(rec);
    free(uri);
    if (svg == NULL) {
        http_error(r, 404, "no enrolment under way");
        return;
    }
    http_header(r, "cache-control", "no-store");
    http_header(r, "content-type", "image/svg+xml");
    r->req->res.status = 200;
    r->req->res.reason = "OK";
    h2o_send_inline(r->req, svg, strlen(svg));
    free(svg);
}

static void totp_confirm(preq_t *r)
{
    json_t *rec = users_get(r->p, r->user);
    const char *secret = rec ? json_string_value(json_object_get(rec, "totp_pending")) : NULL;
    const char *code = form_str(r->body, "code", 16);
    uint64_t step = secret && code ? totp_check(secret, code, (uint64_t)vc_wall_ms() / 1000, 0) : 0;
    if (step == 0) {
        json_decref(rec);
        audit_record(r, "totp.enrol", r->user, "wrong code");
        http_error(r, 400, secret ? "that code is not the one the app shows now" : "no enrolment under way");
        return;
    }
    json_object_set(rec, "totp", json_object_get(rec, "totp_pending"));
    json_object_del(rec, "totp_pending");
    json_object_set_new(rec, "last_step", json_integer((json_int_t)step));
    json_t *hashes = json_array(), *codes = json_array();
    for (int i = 0; i < RECOVERY_CODES; i++) {
        char c[RECOVERY_LEN], h[65];
        totp_recovery_code(c);
        totp_recovery_hash(c, h);
        json_array_append_new(codes, json_string(c));
        json_array_append_new(hashes, json_string(h));
    }
    json_object_set_new(rec, "recovery", hashes);
    users_put(r->p, r->user, rec);
    json_decref(rec);
    audit_record(r, "totp.enrol", r->user, "ok");
    /* Shown this once: only their hashes are kept. */
    http_json(r, 200, json_pack("{s:o}", "recovery", codes));
}

const route_t api_auth_routes[] = {
    {"POST", "/api/login", ACCESS_OPEN, login},
    {"POST", "/api/logout", ACCESS_SIGNED, logout},
    {"GET", "/api/me", ACCESS_SIGNED, me},
    {"POST", "/api/password", ACCESS_SIGNED, password},
    {"POST", "/api/totp/begin", ACCESS_VIEWER, totp_begin},
    {"GET", "/api/totp/qr.svg", ACCESS_VIEWER, totp_qr},
    {"POST", "/api/totp/confirm", ACCESS_VIEWER, totp_confirm},
};
const size_t api_auth_nroutes = VC_ARRAY_SIZE(api_auth_routes);
