/* totp.h: RFC 6238 codes and recovery codes. */
#include "totp.h"
#include "vc_util.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

static const char B32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

static void base32(const unsigned char *in, size_t n, char *out)
{
    uint32_t buf = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        buf = (buf << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            out[o++] = B32[(buf >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits > 0)
        out[o++] = B32[(buf << (5 - bits)) & 31];
    out[o] = '\0';
}

/* Decodes base32 (case and padding ignored): the byte count, or -1. */
static int unbase32(const char *in, unsigned char *out, size_t max)
{
    uint32_t buf = 0;
    int bits = 0;
    size_t o = 0;
    for (; *in && *in != '='; in++) {
        const char *p = strchr(B32, toupper((unsigned char)*in));
        if (p == NULL || *in == '\0')
            return -1;
        buf = (buf << 5) | (uint32_t)(p - B32);
        bits += 5;
        if (bits >= 8) {
            if (o == max)
                return -1;
            out[o++] = (unsigned char)(buf >> (bits - 8));
            bits -= 8;
        }
    }
    return (int)o;
}

void totp_new_secret(char out[TOTP_SECRET_B32])
{
    unsigned char key[TOTP_SECRET_BYTES];
    randombytes_buf(key, sizeof(key));
    base32(key, sizeof(key), out);
    sodium_memzero(key, sizeof(key));
}

int totp_code(const char *secret_b32, uint64_t step)
{
    unsigned char key[64], msg[8], md[EVP_MAX_MD_SIZE];
    int klen = unbase32(secret_b32, key, sizeof(key));
    if (klen <= 0)
        return -1;
    for (int i = 7; i >= 0; i--, step >>= 8)
        msg[i] = (unsigned char)(step & 0xff);
    unsigned mdlen = 0;
    HMAC(EVP_sha1(), key, klen, msg, sizeof(msg), md, &mdlen);
    sodium_memzero(key, sizeof(key));
    /* RFC 4226 5.3: dynamic truncation. */
    int off = md[mdlen - 1] & 0x0f;
    uint32_t bin =
        ((uint32_t)(md[off] & 0x7f) << 24) | ((uint32_t)md[off + 1] << 16) | ((uint32_t)md[off + 2] << 8) | md[off + 3];
    return (int)(bin % 1000000);
}

uint64_t totp_check(const char *secret_b32, const char *code, uint64_t now_s, uint64_t last_step)
{
    if (strlen(code) != 6 || strspn(code, "0123456789") != 6)
        return 0;
    int want = atoi(code);
    uint64_t now = now_s / TOTP_STEP_S;
    for (uint64_t step = now - 1; step <= now + 1; step++) {
        if (step <= last_step)
            continue;
        /* Every step is computed, matched or not: the time taken does
         * not say which one matched. */
        int got = totp_code(secret_b32, step);
        if (got >= 0 && got == want)
            return step;
    }
    return 0;
}

char *totp_uri(const char *user, const char *secret_b32)
{
    /* user is a checked name (forms.c): nothing in it needs escaping. */
    return vc_asprintf("otpauth://totp/Velocity:%s?secret=%s&issuer=Velocity&algorithm=SHA1&digits=6&period=%d", user,
                       secret_b32, TOTP_STEP_S);
}

void totp_recovery_code(char out[RECOVERY_LEN])
{
    unsigned char r[10];
    randombytes_buf(r, sizeof(r));
    for (int i = 0, o = 0; i < 10; i++) {
        if (i == 5)
            out[o++] = '-';
        out[o++] = (char)tolower((unsigned char)B32[r[i] & 31]);
    }
    out[RECOVERY_LEN - 1] = '\0';
}

void totp_recovery_hash(const char *code, char out[65])
{
    char norm[64];
    size_t n = 0;
    for (; *code && n < sizeof(norm) - 1; code++)
        if (*code != '-' && *code != ' ')
            norm[n++] = (char)tolower((unsigned char)*code);
    unsigned char md[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(md, (const unsigned char *)norm, n);
    sodium_bin2hex(out, 65, md, sizeof(md));
}
