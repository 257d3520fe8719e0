/*
 * vc_link_auth: the PHP link's authentication over TCP, with a shared key
 * (`link_key`). Over a Unix socket the pool knows its peer's user
 * (SO_PEERCRED); over TCP anyone who reaches the port could pose as a front
 * and run PHP with the parameters it likes (php-fpm's open FastCGI port), or
 * pose as the pool and read the requests. So each side proves it holds the
 * key before anything else crosses:
 *
 *   pool  -> front   "vc-link-challenge", nonce P (32 random bytes)
 *   front -> pool    "vc-link-proof", HMAC-SHA256(key, "front" P), nonce F
 *   pool  -> front   "vc-link-proof", HMAC-SHA256(key, "pool" F)
 *
 * Each message is one vc_link message of those frames. The labels keep a
 * proof from being sent back as the other side's; fresh nonces on both
 * sides keep a recorded exchange from being replayed. The key is not the
 * link's encryption: requests still cross in the clear (keep the link on a
 * private network).
 */
#ifndef VC_LINK_AUTH_H
#define VC_LINK_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define VC_LINK_NONCE 32
#define VC_LINK_MAC 32

typedef struct vc_link_auth {
    const char *key;
    uint8_t mine[VC_LINK_NONCE]; /* the nonce this side sent */
} vc_link_auth_t;

/* The pool's first message: fills frames (2) with the challenge; the
 * nonce is kept in a. */
void vc_link_auth_challenge(vc_link_auth_t *a, struct iovec frames[2]);

/* The front answers a challenge: 0 and frames (3) with its proof and its
 * own nonce (kept in a; frames point into out, which must outlive them),
 * or -1 if the message is not a challenge. */
int vc_link_auth_answer(vc_link_auth_t *a, const struct iovec *in, int n, struct iovec frames[3],
                        uint8_t out[VC_LINK_MAC]);

/* The pool checks the front's proof: 0 and frames (2) with the pool's own
 * proof (pointing into out), or -1 (not a proof, or the wrong key). */
int vc_link_auth_check_front(const vc_link_auth_t *a, const struct iovec *in, int n, struct iovec frames[2],
                             uint8_t out[VC_LINK_MAC]);

/* Whether a message is a challenge (a pool that wants a key from a front
 * that has none). */
int vc_link_auth_is_challenge(const struct iovec *in, int n);

/* The front checks the pool's proof: 0, or -1. */
int vc_link_auth_check_pool(const vc_link_auth_t *a, const struct iovec *in, int n);

#endif
