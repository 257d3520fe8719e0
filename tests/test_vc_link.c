/* The request links (broker <-> worker, front <-> broker): messages of
 * many frames and of many megabytes cross whole and in order, a reader sees
 * nothing until a message is whole, limits are refused, the non-blocking
 * writer keeps what the socket would not take, and endpoints parse. */
#include "vc_link.h"
#include "vc_test.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>

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
    if (vc_link_send(fd, two, 2) != 0)
        return "send big";
    for (int i = 0; i < MANY; i++) {
        tags[i] = (char)('a' + i % 26);
        f[i] = (struct iovec){&tags[i], (size_t)(i % 3)}; /* lengths 0, 1, 2 */
    }
    if (vc_link_send(fd, f, MANY) != 0)
        return "send many";
    if (vc_link_send_byte(fd, 'R') != 0)
        return "send byte";
    return NULL;
}

static int next(int fd, vc_link_buf_t *b, struct iovec *f, size_t max)
{
    for (;;) {
        int n = vc_link_parse(b, f, max);
        if (n != 0)
            return n;
        if (vc_link_fill(fd, b, 0) <= 0)
            return -1;
    }
}

static int count_and_stop(void *arg, const struct iovec *f, int n)
{
    int *seen = arg;
    (void)f;
    (void)n;
    ++*seen;
    return 1; /* no further reads */
}

int main(void)
{
    for (size_t i = 0; i < BIG; i++)
        big[i] = (char)(i * 7 + i / 4096);
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, writer, &sv[1]) == 0);

    static struct iovec f[VC_LINK_MAX_FRAMES];
    vc_link_buf_t b = {0};
    CHECK(next(sv[0], &b, f, VC_LINK_MAX_FRAMES) == 2);
    CHECK(f[0].iov_len == 4 && memcmp(f[0].iov_base, "head", 4) == 0);
    CHECK(f[1].iov_len == BIG && memcmp(f[1].iov_base, big, BIG) == 0);
    vc_link_compact(&b);
    CHECK(next(sv[0], &b, f, VC_LINK_MAX_FRAMES) == MANY);
    int ok = 1;
    for (int i = 0; i < MANY; i++)
        ok &= f[i].iov_len == (size_t)(i % 3) && (i % 3 == 0 || *(char *)f[i].iov_base == 'a' + i % 26);
    CHECK(ok);
    CHECK(next(sv[0], &b, f, VC_LINK_MAX_FRAMES) == 1);
    CHECK(f[0].iov_len == 1 && *(char *)f[0].iov_base == 'R');
    void *err = NULL;
    pthread_join(t, &err);
    CHECK(err == NULL);
    /* Nothing more: a non-blocking fill says so. */
    CHECK(vc_link_fill(sv[0], &b, 1) == -EAGAIN);

    /* Half a message parses to nothing, and the rest completes it. */
    vc_link_buf_t h = {0};
    uint32_t hdr[3] = {1, 5, 0};
    CHECK(write(sv[1], hdr, 8) == 8);
    CHECK(write(sv[1], "abc", 3) == 3);
    CHECK(vc_link_fill(sv[0], &h, 1) == 11);
    CHECK(vc_link_parse(&h, f, 4) == 0 && h.off == 0);
    CHECK(write(sv[1], "de", 2) == 2);
    CHECK(vc_link_fill(sv[0], &h, 1) == 2);
    CHECK(vc_link_parse(&h, f, 4) == 1 && f[0].iov_len == 5 && memcmp(f[0].iov_base, "abcde", 5) == 0);

    /* Over the limits: refused, not read past. */
    vc_link_compact(&h);
    uint32_t bad[1] = {VC_LINK_MAX_FRAMES + 1};
    CHECK(write(sv[1], bad, 4) == 4);
    CHECK(vc_link_fill(sv[0], &h, 1) == 4);
    CHECK(vc_link_parse(&h, f, VC_LINK_MAX_FRAMES) == -EPROTO);
    h.len = h.off = 0;
    uint32_t huge[2] = {1, VC_LINK_MAX_MESSAGE + 1u};
    CHECK(write(sv[1], huge, 8) == 8);
    CHECK(vc_link_fill(sv[0], &h, 1) == 8);
    CHECK(vc_link_parse(&h, f, 4) == -EPROTO);
    h.len = h.off = 0;
    uint32_t none[1] = {0};
    CHECK(write(sv[1], none, 4) == 4);
    CHECK(vc_link_fill(sv[0], &h, 1) == 4);
    CHECK(vc_link_parse(&h, f, 4) == -EPROTO);

    /* A buffer emptied after a large message is given back; a small one
     * is kept for the next message. */
    vc_link_buf_t g = {0};
    static char large[8 + 600000];
    uint32_t one[2] = {htole32(1), htole32(600000)};
    memcpy(large, one, 8);
    vc_link_put(&g, large, sizeof(large));
    CHECK(g.cap > 256 * 1024);
    CHECK(vc_link_parse(&g, f, 4) == 1 && f[0].iov_len == 600000);
    vc_link_compact(&g);
    CHECK(g.cap == 0 && g.p == NULL && g.len == 0);
    CHECK(h.cap > 0 && h.cap <= 256 * 1024);

    /* The non-blocking writer: messages appended, written as far as the
     * socket takes them, the rest kept until it drains; what arrives
     * parses to the same messages, in order. */
    int nb[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, nb) == 0);
    vc_link_buf_t out = {0}, in = {0};
    for (int i = 0; i < 8; i++) {
        struct iovec m[2] = {{"answer", 6}, {big, BIG / 2}};
        vc_link_append(&out, m, 2);
    }
    ssize_t left = vc_link_flush(nb[1], &out);
    CHECK(left > 0 && out.off > 0); /* 12 MiB does not fit in a socket buffer */
    int got = 0;
    while (got < 8) {
        ssize_t r = vc_link_fill(nb[0], &in, 1);
        CHECK(r > 0 || r == -EAGAIN);
        int n;
        while ((n = vc_link_parse(&in, f, 4)) > 0) {
            CHECK(n == 2 && f[0].iov_len == 6 && f[1].iov_len == BIG / 2 && memcmp(f[1].iov_base, big, BIG / 2) == 0);
            got++;
        }
        vc_link_compact(&in);
        if (out.len > 0)
            left = vc_link_flush(nb[1], &out);
    }
    CHECK(left == 0 && out.len == 0 && out.cap == 0); /* a large emptied buffer is given back */
    CHECK(vc_link_fill(nb[0], &in, 1) == -EAGAIN);
    close(nb[0]);
    struct iovec m1 = {"x", 1};
    vc_link_append(&out, &m1, 1);
    CHECK(vc_link_flush(nb[1], &out) == -EPIPE); /* the reader gone: an error, no SIGPIPE */
    close(nb[1]);
    vc_link_buf_free(&out);
    vc_link_buf_free(&in);

    /* A reader that never lets the buffer empty: written bytes make room
     * once they are half of it, so the buffer does not grow for ever. */
    vc_link_buf_t slow = {0};
    char chunk[4096] = {0};
    struct iovec ck = {chunk, sizeof(chunk)};
    for (int i = 0; i < 15; i++)
        vc_link_append(&slow, &ck, 1); /* 15 x 4104 bytes in 64 KiB */
    size_t cap0 = slow.cap;
    CHECK(cap0 == 65536);
    for (int i = 0; i < 1000; i++) {
        slow.off += 4104; /* the reader took one message */
        vc_link_append(&slow, &ck, 1);
    }
    CHECK(slow.cap <= 2 * cap0 && slow.len - slow.off == 15 * 4104); /* at most twice the backlog */
    vc_link_buf_free(&slow);
    /* A buffer may keep more than 256 KiB once emptied. */
    vc_link_buf_t kept = {.keep = 8u << 20};
    struct iovec bigm = {big, BIG};
    vc_link_append(&kept, &bigm, 1);
    kept.off = kept.len;
    vc_link_compact(&kept);
    CHECK(kept.cap >= BIG && kept.p != NULL && kept.keep == 8u << 20);
    vc_link_buf_free(&kept);
    CHECK(kept.p == NULL && kept.keep == 8u << 20);

    /* vc_link_read: every whole message a read brought reaches the
     * callback, even one asking for no more reads (none may wait for a
     * poll that never comes); nothing more is read then. The end of the
     * stream, and a message over the limits. */
    int rp[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, rp) == 0);
    vc_link_buf_t rb = {0};
    struct iovec three[1] = {{"abc", 3}};
    for (int i = 0; i < 3; i++)
        CHECK(vc_link_send(rp[1], three, 1) == 0);
    int seen = 0;
    CHECK(vc_link_read(rp[0], &rb, 16, count_and_stop, &seen) == 1 && seen == 3);
    CHECK(rb.len == 0);
    CHECK(vc_link_read(rp[0], &rb, 16, count_and_stop, &seen) == 1 && seen == 3); /* nothing: 1 */
    uint32_t over = 0xffffffffu;
    CHECK(write(rp[1], &over, 4) == 4);
    CHECK(vc_link_read(rp[0], &rb, 16, count_and_stop, &seen) == -EPROTO);
    vc_link_buf_free(&rb);
    close(rp[1]);
    CHECK(vc_link_read(rp[0], &rb, 16, count_and_stop, &seen) == 0);
    close(rp[0]);
    vc_link_buf_free(&rb);

    /* Endpoints. */
    struct sockaddr_storage sa;
    socklen_t salen;
    const char *why = NULL;
    CHECK(vc_link_address("ipc:///run/vc/php.sock", &sa, &salen, &why) == 0 && sa.ss_family == AF_UNIX);
    CHECK(vc_link_address("tcp://127.0.0.1:7001", &sa, &salen, &why) == 0 && sa.ss_family == AF_INET &&
          ntohs(((struct sockaddr_in *)&sa)->sin_port) == 7001);
    CHECK(vc_link_address("tcp://[::1]:7001", &sa, &salen, &why) == 0 && sa.ss_family == AF_INET6);
    CHECK(vc_link_address("tcp://*:7001", &sa, &salen, &why) == 0);
    CHECK(vc_link_address("tcp://127.0.0.1", &sa, &salen, &why) == -1 && why != NULL);
    CHECK(vc_link_address("tcp://:7001", &sa, &salen, &why) == -1);
    CHECK(vc_link_address("inproc://x", &sa, &salen, &why) == -1);
    CHECK(vc_link_address("ipc://", &sa, &salen, &why) == -1);
    char longp[200];
    memset(longp, 'a', sizeof(longp));
    memcpy(longp, "ipc:///", 7);
    longp[sizeof(longp) - 1] = '\0';
    CHECK(vc_link_address(longp, &sa, &salen, &why) == -1);
    /* A listener replaces a stale socket file, and is reachable. */
    char dir[] = "/tmp/vc-link-test-XXXXXX", ep[128];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(ep, sizeof(ep), "ipc://%s/php.sock", dir);
    ino_t i1, i2;
    int l1 = vc_link_listen(ep, &i1);
    CHECK(l1 >= 0 && i1 != 0);
    close(l1); /* the file stays, as after a crash */
    int l2 = vc_link_listen(ep, &i2);
    CHECK(l2 >= 0 && i2 != i1);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(vc_link_address(ep, &sa, &salen, &why) == 0 && connect(c, (struct sockaddr *)&sa, salen) == 0);
    close(c);
    /* A successor takes the path over while l2 still listens; l2 keeps
     * what it accepted, and its unlisten leaves the successor's file. */
    int c2 = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    CHECK(connect(c2, (struct sockaddr *)&sa, salen) == 0);
    ino_t i3;
    int l3 = vc_link_listen(ep, &i3);
    CHECK(l3 >= 0 && i3 != i2);
    int a2 = accept(l2, NULL, NULL);
    CHECK(a2 >= 0);
    close(a2);
    close(c2);
    vc_link_unlisten(l2, ep, i2);
    struct stat st;
    CHECK(stat(strchr(ep + 6, '/'), &st) == 0 && st.st_ino == i3);
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *)&sa, salen) == 0);
    int a3 = accept(l3, NULL, NULL);
    CHECK(a3 >= 0);
    close(a3);
    close(c);
    vc_link_unlisten(l3, ep, i3);
    CHECK(stat(strchr(ep + 6, '/'), &st) < 0 && errno == ENOENT);
    /* A hidden listener is found only once published. */
    ino_t i4;
    int l4 = vc_link_listen_hidden(ep, &i4);
    CHECK(l4 >= 0);
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *)&sa, salen) < 0);
    close(c);
    CHECK(vc_link_publish(ep) == 0);
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *)&sa, salen) == 0);
    close(c);
    vc_link_unlisten(l4, ep, i4);
    rmdir(dir);

    /* Descriptors (lending a worker's link): each arrives with the message
     * it was attached to, in order, however the reads fall, with plain
     * messages before, between and after. */
    int fp[2], pa[2], pb[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fp) == 0 && pipe(pa) == 0 && pipe(pb) == 0);
    const char *msgs[] = {"one", "lendA", "two", "lendB", "three"};
    for (int i = 0; i < 5; i++) {
        vc_link_buf_t o = {0};
        vc_link_append(&o, &(struct iovec){(void *)msgs[i], strlen(msgs[i])}, 1);
        if (msgs[i][0] == 'l') {
            int fd = msgs[i][4] == 'A' ? pa[1] : pb[1];
            CHECK(vc_link_send_fds(fp[1], o.p, o.len, &fd, 1) == (ssize_t)o.len);
        } else {
            CHECK(vc_link_flush(fp[1], &o) == 0);
        }
        vc_link_buf_free(&o);
    }
    vc_link_buf_t r = {.take_fds = 1};
    int nmsg = 0, paired = 0;
    while (nmsg < 5 && vc_link_fill(fp[0], &r, 0) > 0)
        for (int n; (n = vc_link_parse(&r, f, 4)) > 0; nmsg++) {
            CHECK(n == 1 && f[0].iov_len == strlen(msgs[nmsg]) && !memcmp(f[0].iov_base, msgs[nmsg], f[0].iov_len));
            if (msgs[nmsg][0] != 'l')
                continue;
            int fd = vc_link_take_fd(&r);
            char which = msgs[nmsg][4], back = 0;
            CHECK(fd >= 0 && write(fd, &which, 1) == 1);
            CHECK(read(which == 'A' ? pa[0] : pb[0], &back, 1) == 1 && back == which);
            paired++;
            close(fd);
        }
    CHECK(nmsg == 5 && paired == 2 && vc_link_take_fd(&r) == -1);
    /* A descriptor not taken is closed with the buffer. */
    int keep = pa[1];
    vc_link_buf_t o = {0};
    vc_link_append(&o, &(struct iovec){"lendA", 5}, 1);
    CHECK(vc_link_send_fds(fp[1], o.p, o.len, &keep, 1) == (ssize_t)o.len);
    CHECK(vc_link_fill(fp[0], &r, 0) == (ssize_t)o.len && r.nfds == 1);
    int held = r.fds[0];
    vc_link_buf_free(&r);
    CHECK(fcntl(held, F_GETFD) == -1 && errno == EBADF);
    vc_link_buf_free(&o);
    close(fp[0]);
    close(fp[1]);
    close(pa[0]);
    close(pa[1]);
    close(pb[0]);
    close(pb[1]);

    /* The other end gone: the end of the stream. */
    close(sv[1]);
    CHECK(vc_link_fill(sv[0], &h, 0) == 0);
    vc_link_buf_free(&b);
    vc_link_buf_free(&h);
    close(sv[0]);
    return vc_test_result("vc_link");
}
