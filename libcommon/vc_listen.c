#include "vc_listen.h"
#include "vc_log.h"
#include "vc_util.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
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
    /* SO_REUSEADDR only: a port in TIME_WAIT is ours to bind again. Never
     * SO_REUSEPORT: a second suite on the same port would bind it too and
     * the kernel would split the clients between the two, silently. The
     * fronts share the one socket the supervisor binds. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (sa->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, sa, len) != 0 || listen(fd, 4096) != 0) {
        int e = errno;
        close(fd);
        vc_log(VC_LOG_ERR, "listen", "bind() failed while listening on \"%s\": %s%s", spec, strerror(e),
               e == EADDRINUSE ? " (another server, or another suite, holds this port)" : "");
        errno = e;
        return -1;
    }
    return fd;
}

/* Sockets handed over already bound (systemd's socket activation), each
 * waiting for the listen line with its address. */
typedef struct adopted {
    int fd;
    struct sockaddr_storage addr;
    int dual; /* an IPv6 socket that takes IPv4 too (IPV6_V6ONLY off) */
    int taken;
} adopted_t;
static adopted_t *adopted;
static size_t nadopted;

/* "1.2.3.4:80" or "[::]:80": for log lines, and to match a listen line. */
static void describe(const struct sockaddr *sa, char *out, size_t len)
{
    char host[INET6_ADDRSTRLEN];
    unsigned port = vc_sockaddr_host(sa, host, sizeof(host));
    snprintf(out, len, sa->sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
}

int vc_listen_adopt(int fd)
{
    int type = 0, accepting = 0;
    socklen_t tl = sizeof(type), al = sizeof(accepting);
    adopted_t a = {.fd = fd};
    socklen_t len = sizeof(a.addr);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &al) != 0 || !accepting ||
        getsockname(fd, (struct sockaddr *)&a.addr, &len) != 0 ||
        (a.addr.ss_family != AF_INET && a.addr.ss_family != AF_INET6)) {
        vc_log(VC_LOG_WARN, "listen", "fd %d handed over is not a listening TCP socket: closed", fd);
        close(fd);
        return -1;
    }
    if (a.addr.ss_family == AF_INET6) {
        int v6only = 1;
        socklen_t vl = sizeof(v6only);
        getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &vl);
        a.dual = !v6only;
    }
    /* As open_one() makes its own: close-on-exec (the fronts get them
     * through VC_LISTEN_FDS), non-blocking, no Nagle. */
    int one = 1;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    adopted = vc_realloc(adopted, (nadopted + 1) * sizeof(*adopted));
    adopted[nadopted++] = a;
    return 0;
}

/* The socket handed over for sa (dual: only one that takes IPv4 too), or -1. */
static int take_adopted(const struct sockaddr *sa, const char *spec, int dual)
{
    for (size_t i = 0; i < nadopted; i++) {
        adopted_t *a = &adopted[i];
        if (a->taken || (dual && !a->dual))
            continue;
        char want[80], have[80];
        describe(sa, want, sizeof(want));
        describe((const struct sockaddr *)&a->addr, have, sizeof(have));
        if (strcmp(want, have) != 0)
            continue;
        a->taken = 1;
        vc_log(VC_LOG_INFO, "listen", "\"%s\": the socket handed over for %s%s", spec, have,
               a->dual ? " (IPv4 too)" : "");
        return a->fd;
    }
    return -1;
}

/* The handed-over socket for sa, else a new one bound here. */
static int adopt_or_open(const struct sockaddr *sa, socklen_t len, const char *spec)
{
    int fd = take_adopted(sa, spec, 0);
    return fd >= 0 ? fd : open_one(sa, len, spec);
}

size_t vc_listen_adopted_unused(void)
{
    size_t unused = 0;
    for (size_t i = 0; i < nadopted; i++) {
        if (adopted[i].taken)
            continue;
        char where[80];
        describe((const struct sockaddr *)&adopted[i].addr, where, sizeof(where));
        vc_log(VC_LOG_WARN, "listen",
               "a socket for %s was handed over (systemd's velocity.socket?) but no listen line names it: "
               "connections there are never answered; name it in the configuration or remove it from the "
               "socket unit",
               where);
        close(adopted[i].fd);
        unused++;
    }
    free(adopted);
    adopted = NULL;
    nadopted = 0;
    return unused;
}

static void push(vc_listener_t **ls, size_t *n, int fd, int kind, const char *spec)
{
    *ls = vc_realloc(*ls, (*n + 1) * sizeof(**ls));
    (*ls)[*n].fd = fd;
    (*ls)[*n].kind = kind;
    (*ls)[*n].spec = vc_strdup(spec);
    (*n)++;
}

int vc_listen_open(const char *spec, int kind, vc_listener_t **fds, size_t *nfds)
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
        /* systemd's ListenStream=PORT is one IPv6 socket that takes IPv4
         * too: it is both of ours. */
        int fd = take_adopted((struct sockaddr *)&a6, spec, 1);
        if (fd >= 0) {
            push(fds, nfds, fd, kind, spec);
            return 1;
        }
        fd = adopt_or_open((struct sockaddr *)&a4, sizeof(a4), spec);
        if (fd < 0)
            return -1;
        push(fds, nfds, fd, kind, spec);
        fd = adopt_or_open((struct sockaddr *)&a6, sizeof(a6), spec);
        if (fd >= 0)
            push(fds, nfds, fd, kind, spec);
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
        fd = adopt_or_open((struct sockaddr *)&a4, sizeof(a4), spec);
    else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1)
        fd = adopt_or_open((struct sockaddr *)&a6, sizeof(a6), spec);
    else {
        vc_log(VC_LOG_ERR, "listen", "\"%s\": the host must be an IP address", spec);
        return -1;
    }
    if (fd < 0)
        return -1;
    push(fds, nfds, fd, kind, spec);
    return 1;
}

char *vc_listen_export(const vc_listener_t *ls, size_t n)
{
    char *out = vc_strdup("");
    for (size_t i = 0; i < n; i++) {
        char *next = vc_asprintf("%s%s%d:%d:%s", out, i ? ";" : "", ls[i].fd, ls[i].kind, ls[i].spec);
        free(out);
        out = next;
    }
    return out;
}

int vc_listen_import(const char *env, vc_listener_t **ls, size_t *n)
{
    if (env == NULL || *env == '\0')
        return 0;
    char *copy = vc_strdup(env), *save = NULL;
    int r = 0;
    for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        int fd, kind, off = 0;
        if (sscanf(tok, "%d:%d:%n", &fd, &kind, &off) != 2 || off == 0 || fd < 0 || kind < 0 ||
            kind > VC_LISTEN_ADMIN) {
            r = -1;
            break;
        }
        push(ls, n, fd, kind, tok + off);
    }
    free(copy);
    return r;
}

void vc_listen_free(vc_listener_t **ls, size_t *n, int close_fds)
{
    for (size_t i = 0; i < *n; i++) {
        if (close_fds)
            close((*ls)[i].fd);
        free((*ls)[i].spec);
    }
    free(*ls);
    *ls = NULL;
    *n = 0;
}
