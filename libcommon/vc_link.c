#include "vc_link.h"
#include "vc_util.h"

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The iovecs of one writev(): the frame count, then a length and the
 * bytes of each frame. Large messages go in several calls. */
#define IOV_BATCH 64

/* A buffer emptied after a large message is given back: a worker that
 * once took an 8 MB upload must not keep 8 MB of its own for ever. A
 * buffer may keep more (b->keep): growing one again for every large
 * message costs a page fault for each of its pages. */
#define KEEP_CAP (256 * 1024)

static size_t keep_cap(const vc_link_buf_t *b)
{
    return b->keep > KEEP_CAP ? b->keep : KEEP_CAP;
}

static int write_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

int vc_link_send(int fd, const struct iovec *frames, size_t n)
{
    uint32_t count = htole32((uint32_t)n);
    uint32_t lens[IOV_BATCH]; /* lens[k]: the length iovec k points at */
    struct iovec iov[IOV_BATCH];
    int k = 0;
    iov[k++] = (struct iovec){&count, sizeof(count)};
    for (size_t i = 0; i < n; i++) {
        if (k + 2 > IOV_BATCH) {
            int rc = write_all(fd, iov, k);
            if (rc < 0)
                return rc;
            k = 0;
        }
        uint32_t *len = &lens[k];
        *len = htole32((uint32_t)frames[i].iov_len);
        iov[k++] = (struct iovec){len, sizeof(*len)};
        if (frames[i].iov_len > 0)
            iov[k++] = frames[i];
    }
    return write_all(fd, iov, k);
}

int vc_link_send_byte(int fd, char c)
{
    struct iovec f = {&c, 1};
    return vc_link_send(fd, &f, 1);
}

int vc_link_send_byte_with_fd(int fd, char c, int pass)
{
    /* One frame of one byte: the frame count, its length, the byte. */
    char msg[9];
    uint32_t one = htole32(1);
    memcpy(msg, &one, 4);
    memcpy(msg + 4, &one, 4);
    msg[8] = c;
    ssize_t n;
    do
        n = vc_link_send_fds(fd, msg, sizeof(msg), &pass, 1);
    while (n == -EAGAIN && poll(&(struct pollfd){.fd = fd, .events = POLLOUT}, 1, -1) >= 0);
    if (n < 0)
        return (int)n;
    struct iovec rest = {msg + n, sizeof(msg) - (size_t)n};
    return rest.iov_len ? write_all(fd, &rest, 1) : 0;
}

static void reserve(vc_link_buf_t *b, size_t more)
{
    if (b->cap - b->len >= more)
        return;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap - b->len < more)
        cap *= 2;
    b->p = vc_realloc(b->p, cap);
    b->cap = cap;
}

void vc_link_put(vc_link_buf_t *b, const void *p, size_t n)
{
    reserve(b, n);
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void put(vc_link_buf_t *b, const void *p, size_t n)
{
    if (n == 0)
        return; /* an empty frame may have no base */
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

void vc_link_append(vc_link_buf_t *out, const struct iovec *frames, size_t n)
{
    size_t total = sizeof(uint32_t) * (n + 1);
    for (size_t i = 0; i < n; i++)
        total += frames[i].iov_len;
    /* Written bytes are dropped when room is needed and they are at least
     * half the buffer (so each byte moves at most once on average): a
     * buffer a slow reader never lets empty must not grow for ever, nor
     * be moved whole for each small message. */
    if (out->off > 0 && out->cap - out->len < total && out->off >= out->len - out->off) {
        memmove(out->p, out->p + out->off, out->len - out->off);
        out->len -= out->off;
        out->off = 0;
    }
    reserve(out, total);
    uint32_t v = htole32((uint32_t)n);
    put(out, &v, sizeof(v));
    for (size_t i = 0; i < n; i++) {
        v = htole32((uint32_t)frames[i].iov_len);
        put(out, &v, sizeof(v));
        if (frames[i].iov_len)
            put(out, frames[i].iov_base, frames[i].iov_len);
    }
}

ssize_t vc_link_flush(int fd, vc_link_buf_t *out)
{
    while (out->off < out->len) {
        ssize_t w = send(fd, out->p + out->off, out->len - out->off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return (ssize_t)(out->len - out->off);
            return -errno;
        }
        out->off += (size_t)w;
    }
    vc_link_reset(out);
    return 0;
}

ssize_t vc_link_send_fds(int fd, const void *msg, size_t len, const int *fds, size_t nfds)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } ctl;
    if (nfds == 0 || nfds > 4 || len == 0)
        return -EINVAL;
    memset(&ctl, 0, sizeof(ctl));
    struct iovec iov = {(void *)msg, len};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = CMSG_SPACE(sizeof(int) * nfds)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    for (;;) {
        ssize_t w = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        return w < 0 ? -errno : w;
    }
}

int vc_link_take_fd(vc_link_buf_t *b)
{
    if (b->nfds == 0)
        return -1;
    int fd = b->fds[0];
    memmove(b->fds, b->fds + 1, (b->nfds - 1) * sizeof(int));
    b->nfds--;
    return fd;
}

static void keep_fds(vc_link_buf_t *b, struct msghdr *mh)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        if (b->nfds + n > b->capfds) {
            b->capfds = b->nfds + n + 8;
            b->fds = vc_realloc(b->fds, b->capfds * sizeof(int));
        }
        memcpy(b->fds + b->nfds, CMSG_DATA(c), n * sizeof(int));
        b->nfds += n;
    }
}

ssize_t vc_link_fill(int fd, vc_link_buf_t *b, int nonblock)
{
    reserve(b, 16384);
    for (;;) {
        ssize_t got;
        if (b->take_fds) {
            /* One read brings the descriptors of one message at most:
             * the kernel ends it after the data they came with. */
            union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * 8)];
            } ctl;
            struct iovec iov = {b->p + b->len, b->cap - b->len};
            struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
            got = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | (nonblock ? MSG_DONTWAIT : 0));
            if (got >= 0)
                keep_fds(b, &mh);
        } else {
            got = recv(fd, b->p + b->len, b->cap - b->len, nonblock ? MSG_DONTWAIT : 0);
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        b->len += (size_t)got;
        return got;
    }
}

int vc_link_parse(vc_link_buf_t *b, struct iovec *frames, size_t max)
{
    size_t at = b->off, avail = b->len - b->off;
    uint32_t count, len;
    if (avail < sizeof(count))
        return 0;
    memcpy(&count, b->p + at, sizeof(count));
    count = le32toh(count);
    if (count == 0 || count > VC_LINK_MAX_FRAMES || count > max)
        return -EPROTO;
    size_t pos = sizeof(count), total = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (avail - pos < sizeof(len))
            return 0;
        memcpy(&len, b->p + at + pos, sizeof(len));
        len = le32toh(len);
        pos += sizeof(len);
        total += len;
        if (total > VC_LINK_MAX_MESSAGE)
            return -EPROTO;
        if (avail - pos < len)
            return 0;
        frames[i] = (struct iovec){b->p + at + pos, len};
        pos += len;
    }
    b->off += pos;
    return (int)count;
}

/* The bytes only: descriptors wait to be taken. */
static void free_bytes(vc_link_buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = b->off = 0;
}

static void close_fds(vc_link_buf_t *b)
{
    for (size_t i = 0; i < b->nfds; i++)
        close(b->fds[i]);
    b->nfds = 0;
}

void vc_link_compact(vc_link_buf_t *b)
{
    if (b->off == 0)
        return;
    memmove(b->p, b->p + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
    if (b->len == 0 && b->cap > keep_cap(b))
        free_bytes(b);
}

void vc_link_reset(vc_link_buf_t *b)
{
    b->len = b->off = 0;
    if (b->cap > keep_cap(b))
        free_bytes(b);
    close_fds(b);
}

int vc_link_read(int fd, vc_link_buf_t *b, int budget, vc_link_message_cb cb, void *arg)
{
    static struct iovec frames[VC_LINK_MAX_FRAMES];
    for (int i = 0; i < budget; i++) {
        ssize_t got = vc_link_fill(fd, b, 1);
        if (got == -EAGAIN || got == -EWOULDBLOCK)
            return 1;
        if (got <= 0)
            return (int)got;
        int drained = b->len < b->cap, n, stop = 0;
        while ((n = vc_link_parse(b, frames, VC_LINK_MAX_FRAMES)) > 0)
            stop |= cb(arg, frames, n);
        if (n < 0)
            return n;
        vc_link_compact(b);
        if (stop || drained)
            return 1;
    }
    return 1;
}

void vc_link_buf_free(vc_link_buf_t *b)
{
    free_bytes(b);
    close_fds(b);
    free(b->fds);
    b->fds = NULL;
    b->capfds = 0;
}

int vc_link_address(const char *endpoint, struct sockaddr_storage *sa, socklen_t *len, const char **why)
{
    memset(sa, 0, sizeof(*sa));
    if (strncmp(endpoint, "ipc://", 6) == 0) {
        struct sockaddr_un *un = (struct sockaddr_un *)sa;
        const char *path = endpoint + 6;
        if (*path == '\0' || strlen(path) >= sizeof(un->sun_path)) {
            *why = "a Unix socket path must have 1 to 107 bytes";
            return -1;
        }
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, path);
        *len = (socklen_t)sizeof(*un);
        return 0;
    }
    if (strncmp(endpoint, "tcp://", 6) != 0) {
        *why = "expected ipc://PATH or tcp://HOST:PORT";
        return -1;
    }
    const char *host = endpoint + 6, *colon = strrchr(host, ':');
    if (colon == NULL || colon[1] == '\0') {
        *why = "a tcp:// endpoint needs a port";
        return -1;
    }
    char name[256];
    size_t hlen = (size_t)(colon - host);
    if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
        host++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(name)) {
        *why = "a tcp:// endpoint needs a host";
        return -1;
    }
    memcpy(name, host, hlen);
    name[hlen] = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res = NULL;
    int any = strcmp(name, "*") == 0;
    if (any)
        hints.ai_flags |= AI_PASSIVE;
    if (getaddrinfo(any ? NULL : name, colon + 1, &hints, &res) != 0 || res == NULL) {
        *why = "the host or port does not resolve";
        return -1;
    }
    memcpy(sa, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* A Unix socket is bound under a temporary name beside its path (PATH.PID)
 * and renamed onto it when the process is ready to serve (vc_link_publish):
 * a successor (vc restart php) takes the path over in one step, so a front
 * connecting meanwhile finds the old listener or the new one, never no file,
 * and never one still booting; the old process's listener keeps its
 * connections. */
static int hidden_name(const struct sockaddr_un *sa, struct sockaddr_un *tmp)
{
    *tmp = *sa;
    int n = snprintf(tmp->sun_path, sizeof(tmp->sun_path), "%s.%d", sa->sun_path, (int)getpid());
    return n > 0 && (size_t)n < sizeof(tmp->sun_path);
}

static int bind_unix(int fd, const struct sockaddr_un *sa, ino_t *ino)
{
    struct sockaddr_un tmp;
    const struct sockaddr_un *at = hidden_name(sa, &tmp) ? &tmp : sa;
    struct stat st;
    if (lstat(at->sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(at->sun_path); /* left by a process that died, as ZeroMQ's ipc:// does */
    if (bind(fd, (const struct sockaddr *)at, sizeof(*at)) < 0)
        return -1;
    if (lstat(at->sun_path, &st) == 0)
        *ino = st.st_ino;
    return 0;
}

int vc_link_publish(const char *endpoint)
{
    struct sockaddr_storage sa;
    socklen_t len;
    const char *why;
    struct sockaddr_un tmp;
    if (vc_link_address(endpoint, &sa, &len, &why) < 0)
        return -EINVAL;
    if (sa.ss_family != AF_UNIX || !hidden_name((struct sockaddr_un *)&sa, &tmp))
        return 0; /* TCP, or a path too long to hide: bound in place */
    if (rename(tmp.sun_path, ((struct sockaddr_un *)&sa)->sun_path) < 0)
        return -errno;
    return 0;
}

int vc_link_listen_hidden(const char *endpoint, ino_t *ino)
{
    struct sockaddr_storage sa;
    socklen_t len;
    const char *why;
    ino_t unused;
    if (ino == NULL)
        ino = &unused;
    *ino = 0;
    if (vc_link_address(endpoint, &sa, &len, &why) < 0)
        return -EINVAL;
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc;
    if (sa.ss_family == AF_UNIX) {
        rc = bind_unix(fd, (struct sockaddr_un *)&sa, ino);
    } else {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        rc = bind(fd, (struct sockaddr *)&sa, len);
    }
    if (rc < 0 || listen(fd, 128) < 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    return fd;
}

int vc_link_listen(const char *endpoint, ino_t *ino)
{
    int fd = vc_link_listen_hidden(endpoint, ino);
    if (fd < 0)
        return fd;
    int rc = vc_link_publish(endpoint);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

void vc_link_unlisten(int fd, const char *endpoint, ino_t ino)
{
    if (fd >= 0)
        close(fd);
    struct sockaddr_storage sa;
    socklen_t len;
    const char *why;
    struct stat st;
    if (ino == 0 || vc_link_address(endpoint, &sa, &len, &why) < 0 || sa.ss_family != AF_UNIX)
        return;
    /* Only our own file: a successor's, renamed over it, stays. */
    const char *path = ((struct sockaddr_un *)&sa)->sun_path;
    if (lstat(path, &st) == 0 && st.st_ino == ino)
        unlink(path);
}
