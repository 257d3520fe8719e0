/* sessions.h: sessions in LMDB, keyed by the hash of their cookie. */
#include "sessions.h"
#include "records.h"
#include "users.h"
#include "vc_util.h"

#include <sodium.h>
#include <string.h>

static void random_token(char out[SESSION_TOKEN_LEN + 1])
{
    unsigned char r[32];
    randombytes_buf(r, sizeof(r));
    sodium_bin2base64(out, SESSION_TOKEN_LEN + 1, r, sizeof(r), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

static void sid_of(const char *token, char sid[65])
{
    unsigned char md[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(md, (const unsigned char *)token, strlen(token));
    sodium_bin2hex(sid, 65, md, sizeof(md));
}

int sessions_new(panel_t *p, const char *user, const char *addr, char token[SESSION_TOKEN_LEN + 1],
                 char csrf[SESSION_TOKEN_LEN + 1])
{
    random_token(token);
    random_token(csrf);
    char sid[65];
    sid_of(token, sid);
    int64_t now = vc_wall_ms();
    json_t *rec = json_pack("{s:s,s:s,s:I,s:I,s:s}", "user", user, "csrf", csrf, "created", (json_int_t)now, "seen",
                            (json_int_t)now, "addr", addr);
    int rc = records_put(p->store, PANEL_DB_SESSIONS, sid, rec);
    json_decref(rec);
    return rc;
}

static int alive(panel_t *p, const json_t *rec, int64_t now)
{
    int64_t created = json_integer_value(json_object_get(rec, "created"));
    int64_t seen = json_integer_value(json_object_get(rec, "seen"));
    return now - seen < p->cfg->idle_timeout_ms && now - created < p->cfg->session_max_ms;
}

int sessions_find(panel_t *p, const char *token, preq_t *r)
{
    if (strlen(token) != SESSION_TOKEN_LEN)
        return 0;
    /* r->sid is set only for a session found alive: http.c takes a set
     * sid for a signed-in client. */
    char sid[65];
    sid_of(token, sid);
    r->sid[0] = '\0';
    json_t *rec = records_get(p->store, PANEL_DB_SESSIONS, sid);
    if (rec == NULL)
        return 0;
    int64_t now = vc_wall_ms();
    const char *user = json_string_value(json_object_get(rec, "user"));
    const char *csrf = json_string_value(json_object_get(rec, "csrf"));
    json_t *u = user ? users_get(p, user) : NULL;
    const char *role = u ? json_string_value(json_object_get(u, "role")) : NULL;
    int ok = u && role && csrf && alive(p, rec, now) && strlen(user) < sizeof(r->user) &&
             strlen(role) < sizeof(r->role) && strlen(csrf) < sizeof(r->csrf);
    if (ok) {
        strcpy(r->sid, sid);
        strcpy(r->user, user);
        strcpy(r->role, role);
        strcpy(r->csrf, csrf);
        r->must_change = json_is_true(json_object_get(u, "must_change"));
        /* Seen again: written at most every 10 s, not on each call. */
        if (now - json_integer_value(json_object_get(rec, "seen")) > 10000) {
            json_object_set_new(rec, "seen", json_integer(now));
            records_put(p->store, PANEL_DB_SESSIONS, sid, rec);
        }
    } else {
        /* Gone, or its user is: no one may hold it again. */
        records_put(p->store, PANEL_DB_SESSIONS, sid, NULL);
    }
    json_decref(u);
    json_decref(rec);
    return ok;
}

void sessions_drop(panel_t *p, const char *sid)
{
    records_put(p->store, PANEL_DB_SESSIONS, sid, NULL);
}

void sessions_drop_user(panel_t *p, const char *user, const char *keep)
{
    json_t *all = records_all(p->store, PANEL_DB_SESSIONS);
    const char *sid;
    json_t *rec;
    json_object_foreach(all, sid, rec)
    {
        const char *u = json_string_value(json_object_get(rec, "user"));
        if (u && strcmp(u, user) == 0 && (keep == NULL || strcmp(sid, keep) != 0))
            records_put(p->store, PANEL_DB_SESSIONS, sid, NULL);
    }
    json_decref(all);
}

void sessions_expire(panel_t *p)
{
    json_t *all = records_all(p->store, PANEL_DB_SESSIONS);
    int64_t now = vc_wall_ms();
    const char *sid;
    json_t *rec;
    json_object_foreach(all, sid, rec)
    {
        if (!alive(p, rec, now))
            records_put(p->store, PANEL_DB_SESSIONS, sid, NULL);
    }
    json_decref(all);
}

int sessions_admin_alive(panel_t *p, const char *sid, int touch)
{
    json_t *rec = records_get(p->store, PANEL_DB_SESSIONS, sid);
    int64_t now = vc_wall_ms();
    const char *user = rec ? json_string_value(json_object_get(rec, "user")) : NULL;
    json_t *u = user ? users_get(p, user) : NULL;
    const char *role = u ? json_string_value(json_object_get(u, "role")) : NULL;
    int ok = role && strcmp(role, "admin") == 0 && alive(p, rec, now);
    if (ok && touch && now - json_integer_value(json_object_get(rec, "seen")) > 10000) {
        json_object_set_new(rec, "seen", json_integer(now));
        records_put(p->store, PANEL_DB_SESSIONS, sid, rec);
    }
    json_decref(u);
    json_decref(rec);
    return ok;
}
