/*
 * bench/wsload: N Pusher-protocol WebSocket clients in one process (epoll),
 * for bench/realtime. Each connects to HOST:PORT/app/KEY, subscribes to
 * CHANNEL, and answers the server's pings; once all are subscribed it
 * prints "ready N". Then, for every event named "m-MICROSECONDS" it
 * receives, it records the delivery latency (now minus that wall-clock
 * time), and says "got K" each time K, the count received, passes a
 * multiple of N (one more message reached every client). Each line on its
 * standard input prints one JSON line, {"clients", "received", "p50_ms",
 * "p99_ms", "max_ms", "first_us", "last_us"}, and starts the counts
 * again; when its input closes, it exits.
 *
 *   wsload HOST PORT KEY CHANNEL N
 *
 * With KEY "sio:PATH" (sio:/socket.io/) the clients speak Socket.IO
 * instead (Engine.IO 4 over WebSocket, bench/socketio): each joins the
 * namespace "/", answers the server's pings, and an event is
 * 42["m",MICROSECONDS].
 *
 * C rather than Python: 10,000 sockets read by an interpreter measure
 * the interpreter (a fan-out's last delivery waited for the client to
 * parse the 9,999 before it).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct client {
    int fd, state; /* 0 connecting, 1 handshake sent, 2 upgraded, 3 subscribed */
    char buf[65536];
    size_t len;
} client_t;

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void send_text(int fd, const char *text)
{
    size_t n = strlen(text);
    unsigned char f[512];
    size_t h = 0;
    f[h++] = 0x81;
    if (n < 126) {
        f[h++] = (unsigned char)(0x80 | n);
    } else {
        f[h++] = 0x80 | 126;
        f[h++] = (unsigned char)(n >> 8);
        f[h++] = (unsigned char)n;
    }
    memset(f + h, 0, 4); /* a zero mask: the payload goes as it is */
    h += 4;
    memcpy(f + h, text, n);
    if (write(fd, f, h + n) < 0)
        perror("write");
}

static int sio; /* Socket.IO, not the Pusher protocol */
static uint64_t *lat;
static size_t nlat, caplat;
static uint64_t first_us, last_us;
static int nclients;

static void record(uint64_t t)
{
    uint64_t now = now_us();
    if (nlat == caplat) {
        caplat = caplat ? caplat * 2 : 1 << 20;
        lat = realloc(lat, caplat * sizeof(*lat));
    }
    lat[nlat++] = now > t ? now - t : 0;
    if (!first_us)
        first_us = now;
    last_us = now;
    if (nlat % (size_t)nclients == 0) {
        printf("got %zu\n", nlat);
        fflush(stdout);
    }
}

/* Engine.IO's open packet, the namespace's CONNECT, pings, events. */
static void on_sio_text(client_t *c, const char *p, size_t n)
{
    if (n >= 1 && p[0] == '0') {
        send_text(c->fd, "40");
    } else if (n >= 3 && memcmp(p, "40{", 3) == 0) {
        c->state = 3;
    } else if (n == 1 && p[0] == '2') {
        send_text(c->fd, "3");
    } else if (n > 7 && memcmp(p, "42[\"m\",", 7) == 0) {
        record(strtoull(p + 7, NULL, 10));
    }
}

static void on_text(client_t *c, const char *p, size_t n, const char *channel)
{
    if (sio) {
        on_sio_text(c, p, n);
    } else if (memmem(p, n, "pusher:connection_established", 29)) {
        char sub[256];
        snprintf(sub, sizeof(sub), "{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"%s\"}}", channel);
        send_text(c->fd, sub);
    } else if (memmem(p, n, "subscription_succeeded", 22)) {
        c->state = 3;
    } else if (memmem(p, n, "\"pusher:ping\"", 13)) {
        send_text(c->fd, "{\"event\":\"pusher:pong\",\"data\":{}}");
    } else {
        const char *m = memmem(p, n, "\"event\":\"m-", 11);
        if (m)
            record(strtoull(m + 11, NULL, 10));
    }
}

/* Whole frames at the start of c->buf; the rest waits. */
static void on_bytes(client_t *c, const char *channel)
{
    size_t at = 0;
    if (c->state == 1) {
        char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
        if (end == NULL)
            return;
        if (strncmp(c->buf, "HTTP/1.1 101", 12) != 0) {
            fprintf(stderr, "wsload: refused: %.40s\n", c->buf);
            exit(1);
        }
        c->state = 2;
        at = (size_t)(end - c->buf) + 4;
    }
    while (c->len - at >= 2) {
        unsigned char *f = (unsigned char *)c->buf + at;
        uint64_t n = f[1] & 0x7f;
        size_t h = 2;
        if (n == 126) {
            if (c->len - at < 4)
                break;
            n = (uint64_t)f[2] << 8 | f[3];
            h = 4;
        } else if (n == 127) {
            if (c->len - at < 10)
                break;
            n = 0;
            for (int i = 0; i < 8; i++)
                n = n << 8 | f[2 + i];
            h = 10;
        }
        if (c->len - at - h < n)
            break;
        if ((f[0] & 0x0f) == 1)
            on_text(c, (const char *)f + h, (size_t)n, channel);
        at += h + (size_t)n;
    }
    memmove(c->buf, c->buf + at, c->len - at);
    c->len -= at;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The counts so far as one JSON line; then they start again. */
static void report(int clients)
{
    qsort(lat, nlat, sizeof(*lat), cmp);
    printf("{\"clients\":%d,\"received\":%zu,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,"
           "\"first_us\":%llu,\"last_us\":%llu}\n",
           clients, nlat, nlat ? lat[nlat / 2] / 1000.0 : 0, nlat ? lat[nlat * 99 / 100] / 1000.0 : 0,
           nlat ? lat[nlat - 1] / 1000.0 : 0, (unsigned long long)first_us, (unsigned long long)last_us);
    fflush(stdout);
    nlat = 0;
    first_us = last_us = 0;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: wsload HOST PORT KEY CHANNEL N\n");
        return 2;
    }
    const char *host = argv[1], *key = argv[3], *channel = argv[4];
    int port = atoi(argv[2]), n = atoi(argv[5]);
    nclients = n;
    client_t *cs = calloc((size_t)n, sizeof(*cs));
    int ep = epoll_create1(0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    char req[512], target[256];
    sio = strncmp(key, "sio:", 4) == 0;
    if (sio)
        snprintf(target, sizeof(target), "%s?EIO=4&transport=websocket", key + 4);
    else
        snprintf(target, sizeof(target), "/app/%s?protocol=7&client=wsload", key);
    snprintf(req, sizeof(req),
             "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
             "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
             target, host, port);
    int subscribed = 0, ready_said = 0, opened = 0;
    struct epoll_event evs[256];
    fcntl(0, F_SETFL, O_NONBLOCK);
    struct epoll_event in = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
    epoll_ctl(ep, EPOLL_CTL_ADD, 0, &in);
    for (;;) {
        /* Connections open 200 at a time: a SYN flood is not the test. */
        while (opened < n && opened - subscribed < 200) {
            client_t *c = &cs[opened];
            c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            if (c->fd < 0) {
                perror("socket");
                return 1;
            }
            int one = 1;
            setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
            struct epoll_event e = {.events = EPOLLIN | EPOLLOUT, .data.u64 = (uint64_t)opened};
            epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e);
            opened++;
        }
        int k = epoll_wait(ep, evs, 256, 1000);
        for (int i = 0; i < k; i++) {
            if (evs[i].data.u64 == UINT64_MAX) {
                char b[64];
                ssize_t r = read(0, b, sizeof(b));
                if (r <= 0)
                    return 0;
                report(subscribed);
                continue;
            }
            client_t *c = &cs[evs[i].data.u64];
            if (c->state == 0 && (evs[i].events & EPOLLOUT)) {
                if (write(c->fd, req, strlen(req)) < 0) {
                    perror("handshake");
                    return 1;
                }
                c->state = 1;
                struct epoll_event e = {.events = EPOLLIN, .data.u64 = evs[i].data.u64};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
            }
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
                if (r <= 0) {
                    if (r < 0 && errno == EAGAIN)
                        continue;
                    fprintf(stderr, "wsload: a connection closed\n");
                    return 1;
                }
                c->len += (size_t)r;
                int was = c->state;
                on_bytes(c, channel);
                if (was != 3 && c->state == 3)
                    subscribed++;
            }
        }
        if (!ready_said && subscribed == n) {
            printf("ready %d\n", n);
            fflush(stdout);
            ready_said = 1;
        }
    }
}
