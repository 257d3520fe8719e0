/*
 * vc_listen: sockets handed over already bound (systemd's socket
 * activation) are taken by the listen line with their address, a dual-stack
 * IPv6 one by ":port"; others are bound here; one no line names is closed.
 */
#include "vc_listen.h"
#include "vc_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* A listening socket on 127.0.0.1 (or [::] taking IPv4 too), any port. */
static int listening(int family, unsigned *port)
{
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(*a);
    } else {
        int zero = 0;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        len = sizeof(*a);
    }
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 16) != 0) {
        close(fd);
        return -1;
    }
    len = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

static int connects(unsigned port)
{
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = connect(c, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(c);
    return ok;
}

int main(void)
{
    unsigned p4, p6 = 0, punused;
    int fd4 = listening(AF_INET, &p4);
    int fd6 = listening(AF_INET6, &p6); /* -1 where IPv6 is off */
    int unused = listening(AF_INET, &punused);
    int udp = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(fd4 >= 0 && unused >= 0 && udp >= 0);

    CHECK(vc_listen_adopt(fd4) == 0);
    CHECK(fd6 < 0 || vc_listen_adopt(fd6) == 0);
    CHECK(vc_listen_adopt(unused) == 0);
    CHECK(vc_listen_adopt(udp) == -1);                  /* not a listening TCP socket */
    CHECK(fcntl(udp, F_GETFD) == -1 && errno == EBADF); /* and closed */

    vc_listener_t *ls = NULL;
    size_t n = 0;
    char spec[64];
    snprintf(spec, sizeof(spec), "127.0.0.1:%u", p4);
    CHECK(vc_listen_open(spec, VC_LISTEN_HTTP, &ls, &n) == 1);
    CHECK(n == 1 && ls[0].fd == fd4); /* taken, not bound again */
    CHECK(fcntl(fd4, F_GETFD) & FD_CLOEXEC);
    CHECK(fcntl(fd4, F_GETFL) & O_NONBLOCK);
    CHECK(connects(p4));
    if (fd6 >= 0) {
        /* ":port" is IPv4 and IPv6: the one dual-stack socket is both. */
        snprintf(spec, sizeof(spec), ":%u", p6);
        CHECK(vc_listen_open(spec, VC_LISTEN_HTTPS, &ls, &n) == 1);
        CHECK(n == 2 && ls[1].fd == fd6);
        CHECK(connects(p6));
    }
    /* A line no socket was handed over for is bound here. */
    size_t before = n;
    CHECK(vc_listen_open("127.0.0.1:0", VC_LISTEN_ADMIN, &ls, &n) == 1);
    CHECK(n == before + 1 && ls[n - 1].fd != fd4 && ls[n - 1].fd != unused);

    /* The one no line names is closed, with a warning. */
    CHECK(vc_listen_adopted_unused() == 1);
    CHECK(fcntl(unused, F_GETFD) == -1 && errno == EBADF);
    CHECK(!connects(punused));
    CHECK(vc_listen_adopted_unused() == 0);
    vc_listen_free(&ls, &n, 1);
    return vc_test_result("vc_listen");
}
