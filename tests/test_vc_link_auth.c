/* The PHP link's key exchange (vc_link_auth.h): both sides with the key
 * get through; a wrong key, a proof sent back, or a replayed one do not. */
#include "vc_link_auth.h"
#include "vc_test.h"

#include <string.h>

static const char *KEY = "0123456789abcdef0123456789abcdef";

/* Copies frames into owned storage, as the other side's read would. */
typedef struct {
    uint8_t buf[3][64];
    struct iovec f[3];
} msg_t;

static void carry(msg_t *m, const struct iovec *f, int n)
{
    for (int i = 0; i < n; i++) {
        memcpy(m->buf[i], f[i].iov_base, f[i].iov_len);
        m->f[i] = (struct iovec){m->buf[i], f[i].iov_len};
    }
}

int main(void)
{
    vc_link_auth_t pool = {.key = KEY}, front = {.key = KEY};
    struct iovec f[3];
    uint8_t mac[VC_LINK_MAC], mac2[VC_LINK_MAC];
    msg_t challenge, proof, reply;

    vc_link_auth_challenge(&pool, f);
    carry(&challenge, f, 2);
    CHECK(vc_link_auth_is_challenge(challenge.f, 2));
    CHECK(vc_link_auth_answer(&front, challenge.f, 2, f, mac) == 0);
    carry(&proof, f, 3);
    CHECK(!vc_link_auth_is_challenge(proof.f, 3));
    CHECK(vc_link_auth_check_front(&pool, proof.f, 3, f, mac2) == 0);
    carry(&reply, f, 2);
    CHECK(vc_link_auth_check_pool(&front, reply.f, 2) == 0);

    /* The front's proof sent back as the pool's: refused (the labels). */
    struct iovec back[2] = {proof.f[0], proof.f[1]};
    CHECK(vc_link_auth_check_pool(&front, back, 2) < 0);
    /* A recorded proof, replayed to a new challenge: refused. */
    vc_link_auth_t pool2 = {.key = KEY};
    vc_link_auth_challenge(&pool2, f);
    CHECK(vc_link_auth_check_front(&pool2, proof.f, 3, f, mac2) < 0);
    /* Another key on either side: refused. */
    vc_link_auth_t other = {.key = "another key of thirty-two chars!"};
    CHECK(vc_link_auth_check_front(&other, proof.f, 3, f, mac2) < 0);
    CHECK(vc_link_auth_check_pool(&other, reply.f, 2) < 0);
    /* A proof one bit off: refused. */
    proof.buf[1][5] ^= 1;
    CHECK(vc_link_auth_check_front(&pool, proof.f, 3, f, mac2) < 0);
    /* Wrong shapes: refused. */
    CHECK(vc_link_auth_answer(&front, proof.f, 3, f, mac) < 0);
    CHECK(vc_link_auth_check_front(&pool, challenge.f, 2, f, mac2) < 0);
    struct iovec short_nonce[2] = {challenge.f[0], {challenge.buf[1], 31}};
    CHECK(vc_link_auth_answer(&front, short_nonce, 2, f, mac) < 0);
    CHECK(vc_link_auth_check_pool(&front, NULL, 0) < 0);
    return vc_test_result("vc_link_auth");
}
