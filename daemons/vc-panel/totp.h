/*
 * totp: one-time codes (RFC 6238 over RFC 4226's HOTP: HMAC-SHA1, 30 s
 * steps, 6 digits), their secrets in base32 (RFC 4648, as authenticator
 * apps read them), and the recovery codes given at enrolment.
 */
#ifndef VC_PANEL_TOTP_H
#define VC_PANEL_TOTP_H

#include <stddef.h>
#include <stdint.h>

#define TOTP_SECRET_BYTES 20
#define TOTP_SECRET_B32 33 /* 32 characters and a NUL */
#define TOTP_STEP_S 30
#define RECOVERY_CODES 10
#define RECOVERY_LEN 12 /* "xxxxx-xxxxx" and a NUL */

/* A new random secret, in base32. */
void totp_new_secret(char out[TOTP_SECRET_B32]);
/* The code for a step (unix time / 30) of a base32 secret: 0 to 999999,
 * or -1 if the secret is not base32. */
int totp_code(const char *secret_b32, uint64_t step);
/* Checks a 6-digit code against the steps around now (one either side,
 * for clocks that drift) that come after last_step (a code is used
 * once). Returns the step it matched, or 0. */
uint64_t totp_check(const char *secret_b32, const char *code, uint64_t now_s, uint64_t last_step);
/* "otpauth://totp/Velocity:USER?secret=...&issuer=Velocity" (malloc'd). */
char *totp_uri(const char *user, const char *secret_b32);
/* A new recovery code (lowercase base32, "xxxxx-xxxxx"). */
void totp_recovery_code(char out[RECOVERY_LEN]);
/* What is stored for a recovery code: hex SHA-256 of it, dashes and case
 * ignored. 65 bytes. Codes carry 50 random bits: a slow hash adds nothing. */
void totp_recovery_hash(const char *code, char out[65]);

#endif
