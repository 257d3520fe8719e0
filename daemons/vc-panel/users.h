/*
 * users: the panel's accounts. A record holds the role ("admin" or
 * "viewer"), the Argon2id hash of the password (libsodium's
 * crypto_pwhash_str), must_change (set by `vc panel passwd` and by a new
 * account: the first sign-in must choose a password of its own), and
 * once enrolled the TOTP secret, its last used step and the hashes of
 * the recovery codes left.
 */
#ifndef VC_PANEL_USERS_H
#define VC_PANEL_USERS_H

#include "panel.h"

#define PASSWORD_MIN 12
#define PASSWORD_MAX 256

/* The user's record (a new reference), or NULL. */
json_t *users_get(panel_t *p, const char *user);
int users_put(panel_t *p, const char *user, const json_t *rec);
/* Sets user's password (making the user with role if new; role NULL
 * keeps it). 0, or -1 with why (too short, too long, ...). */
int users_set_password(panel_t *p, const char *user, const char *password, const char *role, int must_change, char *why,
                       size_t whylen);
/* 1 if password is rec's. Takes Argon2id's time whether or not the user
 * exists (rec NULL), so the answer's time does not say which. */
int users_check_password(const json_t *rec, const char *password);
/* How many accounts there are. */
size_t users_count(panel_t *p);
/* DATA/panel/first-password (malloc'd), where the first start writes
 * the first admin's password. */
char *users_first_password_file(const panel_t *p);
/* user's password changed: the first password, if it was user's, is
 * removed (it is worth nothing now, and was a secret on disk). */
void users_first_password_spent(panel_t *p, const char *user);
/* A random password for a new account or the first start (malloc'd). */
char *users_random_password(void);

#endif
