/* libFuzzer: the reading of what comes over a request link
 * (libcommon/vc_link.c): a worker's bytes to the broker or, once lent, to
 * a front (a worker runs the application's PHP), and anything that
 * connects to the pool's endpoint, and the link key's exchange over TCP
 * (libcommon/vc_link_auth.c).
 * Neither is trusted: any split of any bytes into reads must parse to
 * whole messages whose frames lie inside the buffer, or be refused. */
#include "vc_link.h"
#include "vc_link_auth.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct iovec frames[VC_LINK_MAX_FRAMES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        abort();
    vc_link_buf_t b = {0};
    /* The first byte says how the rest is cut into writes, and whether it
     * is read as a front reads its pool link (recvmsg, for descriptors). */
    size_t step = size ? (size_t)data[0] % 64 + 1 : 1;
    b.take_fds = size && (data[0] & 0x80);
    for (size_t at = size ? 1 : 0; at < size; at += step) {
        size_t n = size - at < step ? size - at : step;
        if (write(sv[1], data + at, n) != (ssize_t)n)
            abort();
        if (vc_link_fill(sv[0], &b, 1) <= 0)
            abort();
        int got;
        while ((got = vc_link_parse(&b, frames, VC_LINK_MAX_FRAMES)) > 0) {
            for (int i = 0; i < got; i++) {
                const char *p = frames[i].iov_base;
                if (p < b.p || p + frames[i].iov_len > b.p + b.len)
                    abort(); /* a frame outside what was read */
            }
            /* Over TCP with a key, a pool's first message from a front is
             * its proof, and a front's from the pool a challenge: no
             * bytes pass without the key. */
            static vc_link_auth_t auth = {.key = "fuzz fuzz fuzz fuzz fuzz fuzz fuzz"};
            struct iovec out[3];
            uint8_t mac[VC_LINK_MAC];
            if (vc_link_auth_check_front(&auth, frames, got, out, mac) == 0 ||
                vc_link_auth_check_pool(&auth, frames, got) == 0)
                abort();
            if (vc_link_auth_answer(&auth, frames, got, out, mac) == 0 && !vc_link_auth_is_challenge(frames, got))
                abort();
        }
        if (got < 0) {
            if (got != -EPROTO)
                abort();
            break; /* the broker kills such a worker */
        }
        vc_link_compact(&b);
    }
    /* And the writer: what vc_link_send writes, vc_link_parse reads back. */
    struct iovec f[3] = {{(void *)data, size / 3}, {(void *)(data + size / 3), size / 3}, {(void *)"x", 1}};
    vc_link_buf_t r = {0};
    if (vc_link_send(sv[1], f, 3) != 0)
        abort();
    while (vc_link_parse(&r, frames, 3) == 0)
        if (vc_link_fill(sv[0], &r, 0) <= 0)
            abort();
    if (frames[0].iov_len != size / 3 || memcmp(frames[0].iov_base, data, size / 3) != 0 || frames[2].iov_len != 1)
        abort();
    /* The non-blocking writer's buffer parses back the same. */
    vc_link_buf_t a = {0};
    vc_link_append(&a, f, 3);
    if (vc_link_parse(&a, frames, 3) != 3 || frames[1].iov_len != size / 3 ||
        memcmp(frames[1].iov_base, data + size / 3, size / 3) != 0 || a.off != a.len)
        abort();
    vc_link_buf_free(&a);
    vc_link_buf_free(&r);
    vc_link_buf_free(&b);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
