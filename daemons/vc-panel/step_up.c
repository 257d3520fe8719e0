/* The password and code again, in the request that raises privilege (step_up.h). */
#include "step_up.h"
#include "forms.h"
#include "lockout.h"
#include "totp.h"
#include "users.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

int step_up_second_factor(json_t *rec, const char *code)
{
    const char *secret = json_string_value(json_object_get(rec, "totp"));
    if (secret == NULL)
        return 1; /* not enrolled */
    if (code == NULL || code[0] == '\0')
        return 0;
    json_int_t last = json_integer_value(json_object_get(rec, "last_step"));
    uint64_t step = totp_check(secret, code, (uint64_t)vc_wall_ms() / 1000, (uint64_t)last);
    if (step) {
        json_object_set_new(rec, "last_step", json_integer((json_int_t)step));
        return 1;
    }
    char hash[65];
    totp_recovery_hash(code, hash);
    json_t *codes = json_object_get(rec, "recovery");
    size_t i;
    json_t *c;
    json_array_foreach(codes, i, c)
    {
        const char *h = json_string_value(c);
        if (h && strlen(h) == 64 && sodium_memcmp(h, hash, 64) == 0) {
            json_array_remove(codes, i);
            return 1;
        }
    }
    return 0;
}

static void refuse(preq_t *r, const char *why)
{
    r->p->refused++;
    http_json(r, 403, json_pack("{s:s,s:s}", "error", why, "need", "step_up"));
}

int step_up(preq_t *r, const char *action)
{
    panel_t *p = r->p;
    char ukey[80];
    snprintf(ukey, sizeof(ukey), "u:%s", r->user);
    int locked;
    if (lockout_wait(p->lockout, ukey, vc_wall_ms(), &locked) > 0) {
        http_error(r, 429, "too many wrong passwords or codes for this account: wait before trying again");
        return 0;
    }
    const char *password = form_str(r->body, "password", PASSWORD_MAX), *code = form_str(r->body, "code", 16);
    json_t *rec = users_get(p, r->user);
    /* The hash's time is spent even when nothing was given. */
    int ok = users_check_password(rec, password ? password : "");
    int enrolled = rec && json_object_get(rec, "totp") != NULL;
    if (ok && !step_up_second_factor(rec, code))
        ok = 0;
    if (!ok) {
        json_decref(rec);
        if (password || code) {
            lockout_failed(p->lockout, ukey, vc_wall_ms());
            audit_record(r, action, r->user, "step-up refused: wrong password or code");
        }
        refuse(r, enrolled ? "this asks for your password and a fresh code from your authenticator (or a recovery "
                             "code) again"
                           : "this asks for your password again");
        return 0;
    }
    users_put(p, r->user, rec); /* the step or the recovery code used */
    json_decref(rec);
    lockout_passed(p->lockout, ukey);
    return 1;
}
