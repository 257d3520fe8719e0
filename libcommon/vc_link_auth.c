#include "vc_link_auth.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static const char CHALLENGE[] = "vc-link-challenge", PROOF[] = "vc-link-proof";

static int is(const struct iovec *f, const char *word)
{
    return f->iov_len == strlen(word) && memcmp(f->iov_base, word, f->iov_len) == 0;
}

/* HMAC-SHA256(key, label || nonce) */
static void mac(const char *key, const char *label, const uint8_t *nonce, uint8_t out[VC_LINK_MAC])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)key, strlen(key));
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label));
    crypto_auth_hmacsha256_update(&st, nonce, VC_LINK_NONCE);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st));
}

/* randombytes_buf needs it; it fails only without a source of randomness,
 * where nothing may go on. */
static void init(void)
{
    if (sodium_init() < 0)
        abort();
}

void vc_link_auth_challenge(vc_link_auth_t *a, struct iovec frames[2])
{
    init();
    randombytes_buf(a->mine, sizeof(a->mine));
    frames[0] = (struct iovec){(void *)CHALLENGE, sizeof(CHALLENGE) - 1};
    frames[1] = (struct iovec){a->mine, sizeof(a->mine)};
}

int vc_link_auth_answer(vc_link_auth_t *a, const struct iovec *in, int n, struct iovec frames[3],
                        uint8_t out[VC_LINK_MAC])
{
    if (n != 2 || !is(&in[0], CHALLENGE) || in[1].iov_len != VC_LINK_NONCE)
        return -1;
    mac(a->key, "front", in[1].iov_base, out);
    init();
    randombytes_buf(a->mine, sizeof(a->mine));
    frames[0] = (struct iovec){(void *)PROOF, sizeof(PROOF) - 1};
    frames[1] = (struct iovec){out, VC_LINK_MAC};
    frames[2] = (struct iovec){a->mine, sizeof(a->mine)};
    return 0;
}

int vc_link_auth_check_front(const vc_link_auth_t *a, const struct iovec *in, int n, struct iovec frames[2],
                             uint8_t out[VC_LINK_MAC])
{
    if (n != 3 || !is(&in[0], PROOF) || in[1].iov_len != VC_LINK_MAC || in[2].iov_len != VC_LINK_NONCE)
        return -1;
    uint8_t want[VC_LINK_MAC];
    mac(a->key, "front", a->mine, want);
    if (sodium_memcmp(want, in[1].iov_base, VC_LINK_MAC) != 0)
        return -1;
    mac(a->key, "pool", in[2].iov_base, out);
    frames[0] = (struct iovec){(void *)PROOF, sizeof(PROOF) - 1};
    frames[1] = (struct iovec){out, VC_LINK_MAC};
    return 0;
}

int vc_link_auth_check_pool(const vc_link_auth_t *a, const struct iovec *in, int n)
{
    if (n != 2 || !is(&in[0], PROOF) || in[1].iov_len != VC_LINK_MAC)
        return -1;
    uint8_t want[VC_LINK_MAC];
    mac(a->key, "pool", a->mine, want);
    return sodium_memcmp(want, in[1].iov_base, VC_LINK_MAC) == 0 ? 0 : -1;
}

int vc_link_auth_is_challenge(const struct iovec *in, int n)
{
    return n == 2 && is(&in[0], CHALLENGE);
}
