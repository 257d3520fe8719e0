/* The broker <-> worker link: messages of many frames and of many
 * megabytes cross whole and in order, a reader sees nothing until a
 * message is whole, and limits are refused. */
#include "../daemons/vc-php/wlink.h"
#include "vc_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#define BIG (3u * 1024 * 1024)
#define MANY 100

static char big[BIG];

/* Writes, from another thread, what main() reads: a 3 MiB body (larger
 * than the socket's buffer) and a message of MANY frames (more than one
 * sendmsg() batch), then a one-byte message. */
static void *writer(void *arg)
{
    int fd = *(int *)arg;
    struct iovec f[MANY];
    char tags[MANY];
    struct iovec two[2] = {{"head", 4}, {big, BIG}};
    if (wlink_send(fd, two, 2) != 0)
        return "send big";
    for (int i = 0; i < MANY; i++) {
        tags[i] = (char)('a' + i % 26);
        f[i] = (struct iovec){&tags[i], (size_t)(i % 3)}; /* lengths 0, 1, 2 */
    }
    if (wlink_send(fd, f, MANY) != 0)
        return "send many";
    if (wlink_send_byte(fd, 'R') != 0)
        return "send byte";
    return NULL;
}

static int next(int fd, wlink_buf_t *b, struct iovec *f, size_t max)
{
    for (;;) {
        int n = wlink_parse(b, f, max);
        if (n != 0)
            return n;
        if (wlink_fill(fd, b, 0) <= 0)
            return -1;
    }
}

int main(void)
{
    for (size_t i = 0; i < BIG; i++)
        big[i] = (char)(i * 7 + i / 4096);
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, writer, &sv[1]) == 0);

    static struct iovec f[WLINK_MAX_FRAMES];
    wlink_buf_t b = {0};
    CHECK(next(sv[0], &b, f, WLINK_MAX_FRAMES) == 2);
    CHECK(f[0].iov_len == 4 && memcmp(f[0].iov_base, "head", 4) == 0);
    CHECK(f[1].iov_len == BIG && memcmp(f[1].iov_base, big, BIG) == 0);
    wlink_compact(&b);
    CHECK(next(sv[0], &b, f, WLINK_MAX_FRAMES) == MANY);
    int ok = 1;
    for (int i = 0; i < MANY; i++)
        ok &= f[i].iov_len == (size_t)(i % 3) && (i % 3 == 0 || *(char *)f[i].iov_base == 'a' + i % 26);
    CHECK(ok);
    CHECK(next(sv[0], &b, f, WLINK_MAX_FRAMES) == 1);
    CHECK(f[0].iov_len == 1 && *(char *)f[0].iov_base == 'R');
    void *err = NULL;
    pthread_join(t, &err);
    CHECK(err == NULL);
    /* Nothing more: a non-blocking fill says so. */
    CHECK(wlink_fill(sv[0], &b, 1) == -EAGAIN);

    /* Half a message parses to nothing, and the rest completes it. */
    wlink_buf_t h = {0};
    uint32_t hdr[3] = {1, 5, 0};
    CHECK(write(sv[1], hdr, 8) == 8);
    CHECK(write(sv[1], "abc", 3) == 3);
    CHECK(wlink_fill(sv[0], &h, 1) == 11);
    CHECK(wlink_parse(&h, f, 4) == 0 && h.off == 0);
    CHECK(write(sv[1], "de", 2) == 2);
    CHECK(wlink_fill(sv[0], &h, 1) == 2);
    CHECK(wlink_parse(&h, f, 4) == 1 && f[0].iov_len == 5 && memcmp(f[0].iov_base, "abcde", 5) == 0);

    /* Over the limits: refused, not read past. */
    wlink_compact(&h);
    uint32_t bad[1] = {WLINK_MAX_FRAMES + 1};
    CHECK(write(sv[1], bad, 4) == 4);
    CHECK(wlink_fill(sv[0], &h, 1) == 4);
    CHECK(wlink_parse(&h, f, WLINK_MAX_FRAMES) == -EPROTO);
    h.len = h.off = 0;
    uint32_t huge[2] = {1, WLINK_MAX_MESSAGE + 1u};
    CHECK(write(sv[1], huge, 8) == 8);
    CHECK(wlink_fill(sv[0], &h, 1) == 8);
    CHECK(wlink_parse(&h, f, 4) == -EPROTO);
    h.len = h.off = 0;
    uint32_t none[1] = {0};
    CHECK(write(sv[1], none, 4) == 4);
    CHECK(wlink_fill(sv[0], &h, 1) == 4);
    CHECK(wlink_parse(&h, f, 4) == -EPROTO);

    /* A buffer emptied after a large message is given back; a small one
     * is kept for the next message. */
    wlink_buf_t g = {0};
    g.cap = 1024 * 1024;
    g.p = malloc(g.cap);
    uint32_t one[2] = {1, 1000};
    memcpy(g.p, one, 8);
    g.len = 8 + 1000;
    CHECK(wlink_parse(&g, f, 4) == 1 && f[0].iov_len == 1000);
    wlink_compact(&g);
    CHECK(g.cap == 0 && g.p == NULL && g.len == 0);
    CHECK(h.cap > 0 && h.cap <= 256 * 1024);

    /* The other end gone: the end of the stream. */
    close(sv[1]);
    CHECK(wlink_fill(sv[0], &h, 0) == 0);
    wlink_buf_free(&b);
    wlink_buf_free(&h);
    close(sv[0]);
    return vc_test_result("wlink");
}
