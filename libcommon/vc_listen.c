#include "vc_listen.h"
#include "vc_log.h"
#include "vc_util.h"

#include <arpa/inet.h>
#include <stdio.h>
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
        int fd = open_one((struct sockaddr *)&a4, sizeof(a4), spec);
        if (fd < 0)
            return -1;
        push(fds, nfds, fd, kind, spec);
        fd = open_one((struct sockaddr *)&a6, sizeof(a6), spec);
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
        fd = open_one((struct sockaddr *)&a4, sizeof(a4), spec);
    else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1)
        fd = open_one((struct sockaddr *)&a6, sizeof(a6), spec);
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
