/*
 * Step-up (docs/panel.md, "Roles and step-up"): what raises privilege
 * (opening a terminal, viewing a secret, adding a user, resetting one's
 * own two-factor sign-in) takes the caller's password, and a current code
 * from the authenticator or a recovery code if the account has TOTP, in
 * the same request: a stolen session cookie alone is not enough.
 */
#ifndef VC_PANEL_STEP_UP_H
#define VC_PANEL_STEP_UP_H

#include "panel.h"

/* A code from the authenticator (6 digits, a step not used before), or a
 * recovery code, which is then used up. Changes rec; the caller stores
 * it. 1 if good, or if the account has no TOTP. */
int step_up_second_factor(json_t *rec, const char *code);

/* Checks "password" and "code" in r->body against r->user. 1 if they
 * hold (the code's step or the recovery code is used); else answers 403
 * ({"error", "need": "step_up"}), or 429 while the account is locked out,
 * counts the failure as a sign-in's, audits it under action, and
 * returns 0. */
int step_up(preq_t *r, const char *action);

#endif
