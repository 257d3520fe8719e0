#include "jwt.h"
#include "vc_util.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

/* A token longer than this is refused unread (a cookie is at most 4 KiB). */
#define MAX_TOKEN 8192

long jwt_b64url_decode(const char *s, size_t len, unsigned char *out)
{
    if (len % 4 == 1)
        return -1;
    /* OpenSSL decodes standard base64 with its padding: translate. */
    size_t padded = (len + 3) / 4 * 4;
    char *std = vc_malloc(padded + 1);
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
        else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
            free(std);
            return -1;
        }
        std[i] = c;
    }
    for (size_t i = len; i < padded; i++)
        std[i] = '=';
    int n = padded ? EVP_DecodeBlock(out, (const unsigned char *)std, (int)padded) : 0;
    free(std);
    if (n < 0)
        return -1;
    return n - (long)(padded - len); /* EVP_DecodeBlock counts the padding's zero bytes */
}

static json_t *decode_json(const char *s, size_t len)
{
    unsigned char *buf = vc_malloc(len * 3 / 4 + 4);
    long n = jwt_b64url_decode(s, len, buf);
    json_t *j = n >= 0 ? json_loadb((const char *)buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL) : NULL;
    free(buf);
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

json_t *jwt_hs256_verify(const char *token, size_t len, const char *key, size_t key_len, int64_t now, const char **why)
{
    *why = "not a JWT (three base64url parts)";
    if (len == 0 || len > MAX_TOKEN)
        return NULL;
    const char *dot1 = memchr(token, '.', len);
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', (size_t)(token + len - dot1 - 1)) : NULL;
    if (dot2 == NULL || memchr(dot2 + 1, '.', (size_t)(token + len - dot2 - 1)))
        return NULL;
    json_t *header = decode_json(token, (size_t)(dot1 - token));
    const char *alg = header ? json_string_value(json_object_get(header, "alg")) : NULL;
    int hs256 = alg && strcmp(alg, "HS256") == 0;
    json_decref(header);
    if (!hs256) {
        *why = "the token's algorithm is not HS256";
        return NULL;
    }
    unsigned char sig[64], want[EVP_MAX_MD_SIZE];
    unsigned want_len = 0;
    size_t sl = (size_t)(token + len - dot2 - 1);
    if (sl > 60 || jwt_b64url_decode(dot2 + 1, sl, sig) != 32) {
        *why = "the token's signature is not an HS256 one";
        return NULL;
    }
    HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)token, (size_t)(dot2 - token), want, &want_len);
    if (want_len != 32 || CRYPTO_memcmp(sig, want, 32) != 0) {
        *why = "the token is not signed with this hub's key";
        return NULL;
    }
    json_t *claims = decode_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (claims == NULL) {
        *why = "the token's claims are not a JSON object";
        return NULL;
    }
    json_t *exp = json_object_get(claims, "exp"), *nbf = json_object_get(claims, "nbf");
    if ((exp && (!json_is_number(exp) || json_number_value(exp) <= (double)now)) ||
        (nbf && (!json_is_number(nbf) || json_number_value(nbf) > (double)now))) {
        json_decref(claims);
        *why = "the token has expired, or is not yet in force";
        return NULL;
    }
    *why = NULL;
    return claims;
}
