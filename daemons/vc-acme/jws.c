#include "jws.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *jws_b64url(const void *data, size_t len)
{
    size_t n = sodium_base64_encoded_len(len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *out = vc_malloc(n);
    sodium_bin2base64(out, n, data, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return out;
}

EVP_PKEY *jws_key_new(int rsa_bits)
{
    if (rsa_bits)
        return EVP_RSA_gen((unsigned)rsa_bits);
    return EVP_EC_gen("P-256");
}

char *jws_bio_string(BIO *b)
{
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char *out = vc_malloc((size_t)n + 1);
    memcpy(out, p, (size_t)n);
    out[n] = '\0';
    return out;
}

char *jws_key_pem(EVP_PKEY *key)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) == 1 ? jws_bio_string(b) : NULL;
    BIO_free(b);
    return out;
}

EVP_PKEY *jws_key_load_or_make(const char *path, int rsa_bits, char *err, size_t errlen)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        FILE *f = fopen(path, "re");
        if (f) {
            EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
            fclose(f);
            if (k == NULL)
                snprintf(err, errlen, "\"%s\" holds no private key", path);
            return k;
        }
        if (errno != ENOENT)
            break;
        /* Written whole in a temporary file, then linked in place: a
         * second vc-acme starting at once reads the first one's. */
        EVP_PKEY *k = jws_key_new(rsa_bits);
        char *pem = k ? jws_key_pem(k) : NULL;
        EVP_PKEY_free(k);
        if (pem == NULL) {
            snprintf(err, errlen, "no key could be made for \"%s\"", path);
            return NULL;
        }
        char *tmp = vc_asprintf("%s.%d", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        size_t n = strlen(pem);
        int ok = fd >= 0 && write(fd, pem, n) == (ssize_t)n && fsync(fd) == 0;
        if (fd >= 0)
            close(fd);
        if (ok && link(tmp, path) != 0 && errno != EEXIST)
            ok = 0;
        unlink(tmp);
        free(tmp);
        sodium_memzero(pem, n);
        free(pem);
        if (!ok)
            break;
    }
    snprintf(err, errlen, "the key \"%s\" could not be read or made: %s", path, strerror(errno));
    return NULL;
}

/* A big number as base64url of exactly len bytes (JWA's fixed widths). */
static char *bn_b64(const BIGNUM *bn, size_t len)
{
    unsigned char buf[512];
    if (len > sizeof(buf) || BN_bn2binpad(bn, buf, (int)len) < 0)
        return NULL;
    return jws_b64url(buf, len);
}

static char *bn_b64_min(const BIGNUM *bn)
{
    return bn_b64(bn, (size_t)BN_num_bytes(bn));
}

char *jws_jwk(EVP_PKEY *key)
{
    BIGNUM *a = NULL, *b = NULL;
    char *out = NULL;
    if (EVP_PKEY_is_a(key, "EC")) {
        if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, &a) &&
            EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, &b)) {
            char *x = bn_b64(a, 32), *y = bn_b64(b, 32);
            if (x && y)
                out = vc_asprintf("{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}", x, y);
            free(x);
            free(y);
        }
    } else if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_E, &a) &&
               EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N, &b)) {
        char *e = bn_b64_min(a), *n = bn_b64_min(b);
        if (e && n)
            out = vc_asprintf("{\"e\":\"%s\",\"kty\":\"RSA\",\"n\":\"%s\"}", e, n);
        free(e);
        free(n);
    }
    BN_free(a);
    BN_free(b);
    return out;
}

char *jws_thumbprint(EVP_PKEY *key)
{
    char *jwk = jws_jwk(key);
    if (jwk == NULL)
        return NULL;
    unsigned char md[32];
    crypto_hash_sha256(md, (const unsigned char *)jwk, strlen(jwk));
    free(jwk);
    return jws_b64url(md, sizeof(md));
}

/* ES256's signature is r and s, 32 bytes each (RFC 7518 3.4), where
 * OpenSSL gives DER; RS256's is as it comes. */
static char *signature(EVP_PKEY *key, const char *input)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    size_t len = 0;
    unsigned char *der = NULL;
    char *out = NULL;
    if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
        EVP_DigestSign(md, NULL, &len, (const unsigned char *)input, strlen(input)) != 1)
        goto done;
    der = vc_malloc(len);
    if (EVP_DigestSign(md, der, &len, (const unsigned char *)input, strlen(input)) != 1)
        goto done;
    if (!EVP_PKEY_is_a(key, "EC")) {
        out = jws_b64url(der, len);
        goto done;
    }
    const unsigned char *p = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)len);
    if (sig) {
        unsigned char rs[64];
        if (BN_bn2binpad(ECDSA_SIG_get0_r(sig), rs, 32) == 32 && BN_bn2binpad(ECDSA_SIG_get0_s(sig), rs + 32, 32) == 32)
            out = jws_b64url(rs, sizeof(rs));
        ECDSA_SIG_free(sig);
    }
done:
    free(der);
    EVP_MD_CTX_free(md);
    return out;
}

char *jws_sign(EVP_PKEY *key, const char *kid, const char *nonce, const char *url, const char *payload)
{
    const char *alg = EVP_PKEY_is_a(key, "EC") ? "ES256" : "RS256";
    json_t *h = json_pack("{s:s, s:s, s:s}", "alg", alg, "nonce", nonce, "url", url);
    if (kid) {
        json_object_set_new(h, "kid", json_string(kid));
    } else {
        char *jwk = jws_jwk(key);
        json_t *j = jwk ? json_loads(jwk, 0, NULL) : NULL;
        free(jwk);
        if (j == NULL) {
            json_decref(h);
            return NULL;
        }
        json_object_set_new(h, "jwk", j);
    }
    char *htext = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    char *prot = jws_b64url(htext, strlen(htext));
    char *pay = payload ? jws_b64url(payload, strlen(payload)) : vc_strdup("");
    char *input = vc_asprintf("%s.%s", prot, pay);
    char *sig = signature(key, input);
    char *out =
        sig ? vc_asprintf("{\"protected\":\"%s\",\"payload\":\"%s\",\"signature\":\"%s\"}", prot, pay, sig) : NULL;
    free(htext);
    free(prot);
    free(pay);
    free(input);
    free(sig);
    return out;
}

char *jws_eab(EVP_PKEY *account, const char *eab_kid, const char *hmac_b64url, const char *url)
{
    unsigned char key[256];
    size_t klen = 0;
    if (sodium_base642bin(key, sizeof(key), hmac_b64url, strlen(hmac_b64url), NULL, &klen, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        klen == 0)
        return NULL;
    char *jwk = jws_jwk(account);
    json_t *hdr = json_pack("{s:s, s:s, s:s}", "alg", "HS256", "kid", eab_kid, "url", url);
    char *hdr_text = hdr ? json_dumps(hdr, JSON_COMPACT) : NULL;
    char *out = NULL;
    if (jwk && hdr_text) {
        char *p = jws_b64url(hdr_text, strlen(hdr_text)), *b = jws_b64url(jwk, strlen(jwk));
        char *input = vc_asprintf("%s.%s", p, b);
        unsigned char mac[crypto_auth_hmacsha256_BYTES];
        crypto_auth_hmacsha256_state st;
        crypto_auth_hmacsha256_init(&st, key, klen);
        crypto_auth_hmacsha256_update(&st, (const unsigned char *)input, strlen(input));
        crypto_auth_hmacsha256_final(&st, mac);
        char *sig = jws_b64url(mac, sizeof(mac));
        json_t *jws = json_pack("{s:s, s:s, s:s}", "protected", p, "payload", b, "signature", sig);
        out = json_dumps(jws, JSON_COMPACT);
        json_decref(jws);
        free(sig);
        free(input);
        free(p);
        free(b);
    }
    sodium_memzero(key, sizeof(key));
    free(hdr_text);
    json_decref(hdr);
    free(jwk);
    return out;
}
