/*
 * The JSON Web Signatures ACME asks for (RFC 8555 6.2, RFC 7515): every
 * request is a flattened JWS signed with the account key, ES256 (P-256),
 * whose protected header names the account (kid) or, before it has one,
 * carries the public key (jwk). Keys are made and kept as PEM, 0600.
 */
#ifndef VC_ACME_JWS_H
#define VC_ACME_JWS_H

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <stddef.h>

/* The key in path (PEM), made there first (0600, atomically) if it is
 * not. rsa_bits 0: P-256. NULL with err. */
EVP_PKEY *jws_key_load_or_make(const char *path, int rsa_bits, char *err, size_t errlen);
/* A new key: P-256, or RSA of rsa_bits. */
EVP_PKEY *jws_key_new(int rsa_bits);
/* The key as PEM (malloc'd). */
char *jws_key_pem(EVP_PKEY *key);
/* What a memory BIO holds, as a string (malloc'd). */
char *jws_bio_string(BIO *b);

/* base64url without padding (RFC 7515 2), malloc'd. */
char *jws_b64url(const void *data, size_t len);

/* The account key's JWK ({"crv","kty","x","y"}, the members in order, no
 * spaces: RFC 7638's input) and its thumbprint (RFC 7638, base64url). */
char *jws_jwk(EVP_PKEY *key);
char *jws_thumbprint(EVP_PKEY *key);

/* {"protected","payload","signature"}: payload NULL for a POST-as-GET
 * (an empty payload); kid NULL to send the jwk instead. malloc'd, or NULL
 * if signing failed. */
char *jws_sign(EVP_PKEY *key, const char *kid, const char *nonce, const char *url, const char *payload);

/* External Account Binding (RFC 8555 7.3.4): the account's JWK, signed
 * HS256 with the CA's MAC key (hmac_b64url: base64url, as CAs hand it
 * out) under its key id, for newAccount at url. The JWS as a JSON
 * string (malloc'd), or NULL if the key is not base64url. */
char *jws_eab(EVP_PKEY *account, const char *eab_kid, const char *hmac_b64url, const char *url);

#endif
