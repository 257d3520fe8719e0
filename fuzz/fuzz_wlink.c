/* libFuzzer: the broker's reading of what a worker sends over its link
 * (daemons/vc-php/wlink.c). A worker runs the application's PHP, so its
 * bytes are not trusted: any split of any bytes into reads must parse to
 * whole messages whose frames lie inside the buffer, or be refused. */
#include "../daemons/vc-php/wlink.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct iovec frames[WLINK_MAX_FRAMES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        abort();
    wlink_buf_t b = {0};
    /* The first byte says how the rest is cut into writes. */
    size_t step = size ? (size_t)data[0] % 64 + 1 : 1;
    for (size_t at = size ? 1 : 0; at < size; at += step) {
        size_t n = size - at < step ? size - at : step;
        if (write(sv[1], data + at, n) != (ssize_t)n)
            abort();
        if (wlink_fill(sv[0], &b, 1) <= 0)
            abort();
        int got;
        while ((got = wlink_parse(&b, frames, WLINK_MAX_FRAMES)) > 0) {
            for (int i = 0; i < got; i++) {
                const char *p = frames[i].iov_base;
                if (p < b.p || p + frames[i].iov_len > b.p + b.len)
                    abort(); /* a frame outside what was read */
            }
        }
        if (got < 0) {
            if (got != -EPROTO)
                abort();
            break; /* the broker kills such a worker */
        }
        wlink_compact(&b);
    }
    /* And the writer: what wlink_send writes, wlink_parse reads back. */
    struct iovec f[3] = {{(void *)data, size / 3}, {(void *)(data + size / 3), size / 3}, {(void *)"x", 1}};
    wlink_buf_t r = {0};
    if (wlink_send(sv[1], f, 3) != 0)
        abort();
    while (wlink_parse(&r, frames, 3) == 0)
        if (wlink_fill(sv[0], &r, 0) <= 0)
            abort();
    if (frames[0].iov_len != size / 3 || memcmp(frames[0].iov_base, data, size / 3) != 0 || frames[2].iov_len != 1)
        abort();
    wlink_buf_free(&r);
    wlink_buf_free(&b);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
