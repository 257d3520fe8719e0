/*
 * JSON Web Tokens signed with HS256 (RFC 7519, RFC 7515), as Mercure's
 * publishers and subscribers present them. Only HS256 is accepted: a
 * token naming "none" or any other algorithm is refused, whatever its
 * signature says. exp and nbf are checked when present.
 */
#ifndef VC_FRONT_JWT_H
#define VC_FRONT_JWT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The token's claims (a new reference) if token is signed with key and
 * in force at now (seconds since the epoch); else NULL with *why set. */
json_t *jwt_hs256_verify(const char *token, size_t len, const char *key, size_t key_len, int64_t now, const char **why);

/* base64url without padding (RFC 4648 5) into out (room for len*3/4+3
 * bytes). The length decoded, or -1 if s is not base64url. */
long jwt_b64url_decode(const char *s, size_t len, unsigned char *out);

#endif
