#include "wlink.h"
#include "vc_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The iovecs of one writev(): the frame count, then a length and the
 * bytes of each frame. Large messages go in several calls. */
#define IOV_BATCH 64

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

int wlink_send(int fd, const struct iovec *frames, size_t n)
{
    uint32_t count = (uint32_t)n;
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
        *len = (uint32_t)frames[i].iov_len;
        iov[k++] = (struct iovec){len, sizeof(*len)};
        if (frames[i].iov_len > 0)
            iov[k++] = frames[i];
    }
    return write_all(fd, iov, k);
}

int wlink_send_byte(int fd, char c)
{
    struct iovec f = {&c, 1};
    return wlink_send(fd, &f, 1);
}

ssize_t wlink_fill(int fd, wlink_buf_t *b, int nonblock)
{
    if (b->cap - b->len < 16384) {
        b->cap = b->cap ? b->cap * 2 : 65536;
        b->p = vc_realloc(b->p, b->cap);
    }
    for (;;) {
        ssize_t got = recv(fd, b->p + b->len, b->cap - b->len, nonblock ? MSG_DONTWAIT : 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        b->len += (size_t)got;
        return got;
    }
}

int wlink_parse(wlink_buf_t *b, struct iovec *frames, size_t max)
{
    size_t at = b->off, avail = b->len - b->off;
    uint32_t count, len;
    if (avail < sizeof(count))
        return 0;
    memcpy(&count, b->p + at, sizeof(count));
    if (count == 0 || count > WLINK_MAX_FRAMES || count > max)
        return -EPROTO;
    size_t pos = sizeof(count), total = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (avail - pos < sizeof(len))
            return 0;
        memcpy(&len, b->p + at + pos, sizeof(len));
        pos += sizeof(len);
        total += len;
        if (total > WLINK_MAX_MESSAGE)
            return -EPROTO;
        if (avail - pos < len)
            return 0;
        frames[i] = (struct iovec){b->p + at + pos, len};
        pos += len;
    }
    b->off += pos;
    return (int)count;
}

/* A buffer emptied after a large message is given back: a worker that
 * once took an 8 MB upload must not keep 8 MB of its own for ever. */
#define KEEP_CAP (256 * 1024)

void wlink_compact(wlink_buf_t *b)
{
    if (b->off == 0)
        return;
    memmove(b->p, b->p + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
    if (b->len == 0 && b->cap > KEEP_CAP)
        wlink_buf_free(b);
}

void wlink_buf_free(wlink_buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}
