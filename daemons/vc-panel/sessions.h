/*
 * sessions: who is signed in. The cookie carries 32 random bytes; LMDB
 * keeps only their SHA-256 (a copy of the database signs nobody in),
 * with the user, a CSRF token and the times. A session is made at a
 * sign-in and never from anything the client names, so a session id an
 * attacker planted before it is worth nothing (no fixation).
 */
#ifndef VC_PANEL_SESSIONS_H
#define VC_PANEL_SESSIONS_H

#include "panel.h"

/* The cookie: __Host- makes a browser refuse it unless Secure, with
 * Path=/ and no Domain. */
#define SESSION_COOKIE "__Host-vc_panel"
#define SESSION_TOKEN_LEN 43 /* base64url of 32 bytes */

/* A new session for user; token (the cookie) and the CSRF token are
 * written out. 0, or a negative error. */
int sessions_new(panel_t *p, const char *user, const char *addr, char token[SESSION_TOKEN_LEN + 1],
                 char csrf[SESSION_TOKEN_LEN + 1]);
/* Finds the session of a cookie and fills r's session fields (user,
 * role and must_change read from the user's record now, so a role taken
 * away is gone at once). Touches it. 1 if found and alive, else 0. */
int sessions_find(panel_t *p, const char *token, preq_t *r);
/* Ends the session r holds. */
void sessions_drop(panel_t *p, const char *sid);
/* Ends every session of user but keep (a sid, or NULL for all). */
void sessions_drop_user(panel_t *p, const char *user, const char *keep);
/* Whether the session sid is alive and its user still an admin (a
 * terminal stays open only so long); touch: it was used (the idle time
 * starts again). */
int sessions_admin_alive(panel_t *p, const char *sid, int touch);
/* Removes sessions past their idle time or their age. */
void sessions_expire(panel_t *p);

#endif
