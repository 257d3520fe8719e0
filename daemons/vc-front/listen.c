#include "listen.h"
#include "vc_log.h"
#include "vc_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int open_one(const struct sockaddr *sa, socklen_t len, const char *spec)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (sa->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, sa, len) != 0 || listen(fd, 4096) != 0) {
        int e = errno;
        close(fd);
        vc_log(VC_LOG_ERR, "listen", "bind() failed while listening on \"%s\": %s", spec, strerror(e));
        errno = e;
        return -1;
    }
    return fd;
}

static void push(int **fds, size_t *n, int fd)
{
    *fds = vc_realloc(*fds, (*n + 1) * sizeof(int));
    (*fds)[(*n)++] = fd;
}

int listen_open(const char *spec, int **fds, size_t *nfds)
{
    const char *colon = strrchr(spec, ':');
    if (colon == NULL || colon[1] == '\0') {
        vc_log(VC_LOG_ERR, "listen", "\"%s\" is not host:port", spec);
        return -1;
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535) {
        vc_log(VC_LOG_ERR, "listen", "\"%s\": bad port", spec);
        return -1;
    }
    char host[256];
    size_t hlen = (size_t)(colon - spec);
    if (hlen >= sizeof(host))
        return -1;
    memcpy(host, spec, hlen);
    host[hlen] = '\0';
    if (hlen == 0 || !strcmp(host, "*")) {
        /* Every address: IPv4 and IPv6 each (IPv6 may be off: tolerated). */
        struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        struct sockaddr_in6 a6 = {
            .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = in6addr_any};
        int fd = open_one((struct sockaddr *)&a4, sizeof(a4), spec);
        if (fd < 0)
            return -1;
        push(fds, nfds, fd);
        fd = open_one((struct sockaddr *)&a6, sizeof(a6), spec);
        if (fd >= 0)
            push(fds, nfds, fd);
        return fd >= 0 ? 2 : 1;
    }
    if (host[0] == '[' && hlen > 2 && host[hlen - 1] == ']') {
        memmove(host, host + 1, hlen - 2);
        host[hlen - 2] = '\0';
    }
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    int fd;
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1)
        fd = open_one((struct sockaddr *)&a4, sizeof(a4), spec);
    else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1)
        fd = open_one((struct sockaddr *)&a6, sizeof(a6), spec);
    else {
        vc_log(VC_LOG_ERR, "listen", "\"%s\": the host must be an IP address", spec);
        return -1;
    }
    if (fd < 0)
        return -1;
    push(fds, nfds, fd);
    return 1;
}
