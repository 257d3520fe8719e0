#include "fronts.h"
#include "vc_link.h"
#include "vc_link_auth.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "request.pb-c.h"

/* A front that reads nothing while this much is queued for it is stuck
 * (stopped, or wedged): its link is closed, it reconnects when it can. */
#define OUT_LIMIT (256u * 1024u * 1024u)
#define OUT_KEEP (8u * 1024u * 1024u)
/* Links beyond this are refused: each is a descriptor and a buffer. */
#define MAX_FRONTS FRONTS_MAX
/* Reads from one front per turn of the loop, so one busy front cannot
 * starve the workers' links. */
#define READ_BUDGET 16
/* A front over TCP proves it holds the link key within this. */
#define AUTH_MS 5000

typedef struct front_link {
    int fd; /* -1: a free slot */
    uint32_t serial;
    int stuck;       /* over OUT_LIMIT: closed at the next flush, not while its
                      * input may be in use */
    int unix_socket; /* workers can be lent to it */
    pid_t pid;       /* the front's process, over a Unix socket; else 0 */
    int board_fd;    /* -1 until the first lend */
    vc_board_t *board;
    int board_sent; /* with the first lend that went */
    int left;       /* it said Left: nothing new comes on this link */
    int authing;    /* over TCP with a link key: not a front until its proof */
    int refused;    /* its proof was wrong: closed after the read */
    uint64_t auth_deadline_ms;
    vc_link_auth_t auth;
    char peer[64]; /* its address, for the log */
    vc_link_buf_t in, out;
} front_link_t;

struct fronts {
    int listen_fd; /* -1 once leaving */
    char *endpoint;
    ino_t listen_ino; /* its socket file */
    front_link_t *l;
    size_t nl;
    uint32_t serial;
    /* What the last fronts_pollitems filled: the listener, then links. */
    size_t polled[MAX_FRONTS];
    size_t npolled;
    size_t lend_at; /* round robin of the fronts workers are lent to */
    fronts_change_cb change;
    void *change_arg;
    char *key; /* link_key, or NULL */
};

void fronts_set_key(fronts_t *fs, const char *key)
{
    if (fs->key)
        sodium_memzero(fs->key, strlen(fs->key));
    free(fs->key);
    fs->key = key && *key ? vc_strdup(key) : NULL;
}

fronts_t *fronts_new(const char *endpoint)
{
    ino_t ino;
    int fd = vc_link_listen_hidden(endpoint, &ino); /* fronts_publish */
    if (fd < 0) {
        vc_log(VC_LOG_CRIT, "fronts", "could not listen at \"%s\" for fronts: %s", endpoint, vc_strerror(-fd));
        return NULL;
    }
    fronts_t *fs = vc_calloc(1, sizeof(*fs));
    fs->listen_fd = fd;
    fs->listen_ino = ino;
    fs->endpoint = vc_strdup(endpoint);
    return fs;
}

static void make_id(char id[FRONT_ID_LEN], uint32_t slot, uint32_t serial)
{
    memcpy(id, &slot, 4);
    memcpy(id + 4, &serial, 4);
}

void fronts_on_change(fronts_t *fs, fronts_change_cb cb, void *arg)
{
    fs->change = cb;
    fs->change_arg = arg;
}

static void unmap_board(front_link_t *l)
{
    if (l->board)
        munmap(l->board, sizeof(vc_board_t));
    if (l->board_fd >= 0)
        close(l->board_fd);
    l->board = NULL;
    l->board_fd = -1;
}

static void drop(fronts_t *fs, front_link_t *l, const char *why)
{
    if (why)
        vc_log(VC_LOG_WARN, "fronts", "closed the link of a front: %s", why);
    /* The workers lent to it come back first: their board is still
     * readable during the call. A link that never proved the key was
     * never a front. */
    if (fs && fs->change && !l->authing) {
        char id[FRONT_ID_LEN];
        l->stuck = 1; /* nothing more is lent to it */
        make_id(id, (uint32_t)(l - fs->l), l->serial);
        fs->change(fs->change_arg, id, l->board, 0);
    }
    unmap_board(l);
    close(l->fd);
    l->fd = -1;
    vc_link_buf_free(&l->in);
    vc_link_buf_free(&l->out);
}

void fronts_destroy(fronts_t **pfs)
{
    fronts_t *fs = *pfs;
    if (fs == NULL)
        return;
    for (size_t i = 0; i < fs->nl; i++)
        if (fs->l[i].fd >= 0)
            drop(NULL, &fs->l[i], NULL);
    fronts_unlisten(fs);
    fronts_set_key(fs, NULL);
    free(fs->endpoint);
    free(fs->l);
    free(fs);
    *pfs = NULL;
}

size_t fronts_count(fronts_t *fs)
{
    return 1 + fs->nl;
}

size_t fronts_linked(const fronts_t *fs)
{
    size_t n = 0;
    for (size_t i = 0; i < fs->nl; i++)
        n += fs->l[i].fd >= 0 && !fs->l[i].authing;
    return n;
}

/* A refused link, said at most every 10 s: a front with the wrong key
 * tries again ten times a second. */
static void refused(const front_link_t *l, const char *why)
{
    static uint64_t said_ms;
    static unsigned quiet;
    uint64_t now = vc_mono_ms();
    if (said_ms && now - said_ms < 10000) {
        quiet++;
        return;
    }
    vc_log(VC_LOG_WARN, "fronts", "refused a link from %s: %s (and %u more since the last said)", l->peer, why, quiet);
    said_ms = now;
    quiet = 0;
}

size_t fronts_pollitems(fronts_t *fs, zmq_pollitem_t *items, size_t max, int accepting)
{
    size_t n = 0;
    fs->npolled = 0;
    if (max == 0)
        return 0;
    items[n++] = (zmq_pollitem_t){NULL, fs->listen_fd, accepting && fs->listen_fd >= 0 ? ZMQ_POLLIN : 0, 0};
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < fs->nl && n < max; i++) {
        front_link_t *l = &fs->l[i];
        if (l->fd >= 0 && l->authing && now > l->auth_deadline_ms) {
            refused(l, "no proof of the link key in time");
            drop(fs, l, NULL);
        }
        if (l->fd < 0)
            continue;
        short ev = (short)(ZMQ_POLLIN | (l->out.len > l->out.off ? ZMQ_POLLOUT : 0));
        fs->polled[fs->npolled++] = i;
        items[n++] = (zmq_pollitem_t){NULL, l->fd, ev, 0};
    }
    return n;
}

/* Who may link as a front over the Unix socket: the suite's user
 * (VC_SUITE_UID, set when the suite dropped root), or root, and with no
 * users to tell apart, our own. */
static int front_user(uid_t uid)
{
    const char *suite = getenv("VC_SUITE_UID");
    if (suite && *suite)
        return uid == 0 || uid == (uid_t)atol(suite);
    return uid == 0 || uid == getuid();
}

static void peer_name(int fd, char *buf, size_t len)
{
    struct sockaddr_storage sa;
    socklen_t salen = sizeof(sa);
    char host[48] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&sa, &salen) == 0) {
        if (sa.ss_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof(host));
            port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
        } else if (sa.ss_family == AF_INET6) {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, host, sizeof(host));
            port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
        }
    }
    snprintf(buf, len, "%s port %d", host, port);
}

/* A front is in: the broker may send it work. */
static void linked(fronts_t *fs, size_t i)
{
    front_link_t *l = &fs->l[i];
    if (l->peer[0])
        vc_log(VC_LOG_INFO, "fronts", "a front linked (slot %zu, from %s, the link key checked)", i, l->peer);
    else
        vc_log(VC_LOG_INFO, "fronts", "a front linked (slot %zu, pid %d)", i, (int)l->pid);
    if (fs->change) {
        char id[FRONT_ID_LEN];
        make_id(id, (uint32_t)i, l->serial);
        fs->change(fs->change_arg, id, NULL, 1);
    }
}

static void accept_fronts(fronts_t *fs)
{
    for (;;) {
        int fd = accept4(fs->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                vc_log(VC_LOG_ERR, "fronts", "accept() failed: %s", vc_strerror(errno));
            return;
        }
        struct ucred cred = {0};
        socklen_t credlen = sizeof(cred);
        int peer_known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) == 0 && cred.pid > 0;
        if (peer_known && !front_user(cred.uid)) {
            /* The pool's socket directory lets the suite's group in; a
             * process of any other user (a worker of this pool among
             * them) posing as a front would be lent workers. */
            vc_log(VC_LOG_WARN, "fronts", "refused a link from pid %d (uid %d): not the suite's user", (int)cred.pid,
                   (int)cred.uid);
            close(fd);
            continue;
        }
        size_t i = 0;
        while (i < fs->nl && fs->l[i].fd >= 0)
            i++;
        if (i == fs->nl) {
            if (fs->nl == MAX_FRONTS) {
                vc_log(VC_LOG_ERR, "fronts", "refused a front: already %d linked", MAX_FRONTS);
                close(fd);
                continue;
            }
            fs->l = vc_realloc(fs->l, (fs->nl + 1) * sizeof(*fs->l));
            fs->nl++;
        }
        front_link_t *l = &fs->l[i];
        memset(l, 0, sizeof(*l));
        l->fd = fd;
        /* A front's answers pass through out one after another: growing
         * it again for each large one costs a page fault a page. */
        l->out.keep = OUT_KEEP;
        l->serial = ++fs->serial;
        l->board_fd = -1;
        struct sockaddr_storage sa;
        socklen_t salen = sizeof(sa);
        l->unix_socket = getsockname(fd, (struct sockaddr *)&sa, &salen) == 0 && sa.ss_family == AF_UNIX;
        if (l->unix_socket && peer_known)
            l->pid = cred.pid;
        if (!l->unix_socket && fs->key) {
            /* Not a front until it proves it holds the key. */
            peer_name(fd, l->peer, sizeof(l->peer));
            l->authing = 1;
            l->auth_deadline_ms = vc_mono_ms() + AUTH_MS;
            l->auth.key = fs->key;
            struct iovec frames[2];
            vc_link_auth_challenge(&l->auth, frames);
            vc_link_append(&l->out, frames, 2);
            continue;
        }
        linked(fs, i);
    }
}

/* The first message over TCP with a key: the front's proof. */
static void check_proof(fronts_t *fs, front_link_t *l, const struct iovec *f, int n)
{
    struct iovec frames[2];
    uint8_t mac[VC_LINK_MAC];
    if (vc_link_auth_check_front(&l->auth, f, n, frames, mac) < 0) {
        refused(l, "it does not hold the link key (link_key)");
        l->refused = 1;
        return;
    }
    vc_link_append(&l->out, frames, 2);
    l->authing = 0;
    linked(fs, (size_t)(l - fs->l));
}

typedef struct front_read {
    fronts_t *fs;
    front_link_t *l;
    char id[FRONT_ID_LEN];
    fronts_message_cb cb;
    void *arg;
} front_read_t;

/* The handler may queue answers to l (never moving fs->l). A link over
 * its limit is closed at the next flush: what it sent meanwhile is not
 * run, and it is read no further. */
static int on_front_read(void *arg, const struct iovec *f, int n)
{
    front_read_t *r = arg;
    if (r->l->authing) {
        check_proof(r->fs, r->l, f, n);
        return r->l->refused;
    }
    if (!r->l->stuck)
        r->cb(r->arg, r->id, f, n);
    return r->l->stuck;
}

static void read_front(fronts_t *fs, size_t slot, fronts_message_cb cb, void *arg)
{
    front_read_t r = {.fs = fs, .l = &fs->l[slot], .cb = cb, .arg = arg};
    make_id(r.id, (uint32_t)slot, r.l->serial);
    int rc = vc_link_read(r.l->fd, &r.l->in, READ_BUDGET, on_front_read, &r);
    if (r.l->refused) {
        drop(fs, r.l, NULL);
    } else if (rc == -EPROTO) {
        drop(fs, r.l, "a malformed message");
    } else if (rc <= 0) {
        if (!r.l->authing) /* else it was never a front */
            vc_log(VC_LOG_INFO, "fronts", "a front left (slot %zu)", slot);
        drop(fs, r.l, NULL);
    }
}

static void write_front(fronts_t *fs, front_link_t *l)
{
    ssize_t left = vc_link_flush(l->fd, &l->out);
    if (left < 0)
        drop(fs, l, vc_strerror((int)-left));
}

void fronts_on_poll(fronts_t *fs, const zmq_pollitem_t *items, size_t n, fronts_message_cb cb, void *arg)
{
    if (n == 0)
        return;
    for (size_t k = 1; k < n && k - 1 < fs->npolled; k++) {
        front_link_t *l = &fs->l[fs->polled[k - 1]];
        if (l->fd < 0 || l->fd != items[k].fd)
            continue;
        if (items[k].revents & ZMQ_POLLOUT)
            write_front(fs, l);
        if (l->fd >= 0 && items[k].revents & (ZMQ_POLLIN | ZMQ_POLLERR))
            read_front(fs, fs->polled[k - 1], cb, arg);
    }
    if (items[0].revents & ZMQ_POLLIN && fs->listen_fd >= 0)
        accept_fronts(fs);
}

static front_link_t *by_id(fronts_t *fs, const void *fid, size_t fidlen)
{
    uint32_t slot, serial;
    if (fidlen != FRONT_ID_LEN)
        return NULL;
    memcpy(&slot, fid, 4);
    memcpy(&serial, (const char *)fid + 4, 4);
    if (slot >= fs->nl || fs->l[slot].fd < 0 || fs->l[slot].serial != serial || fs->l[slot].stuck ||
        fs->l[slot].authing)
        return NULL;
    return &fs->l[slot];
}

int fronts_backlogged(fronts_t *fs, const void *fid, size_t fidlen)
{
    front_link_t *l = by_id(fs, fid, fidlen);
    return l && l->out.len - l->out.off > FRONT_BACKLOG;
}

int fronts_send(fronts_t *fs, const void *fid, size_t fidlen, const struct iovec *frames, size_t n)
{
    front_link_t *l = by_id(fs, fid, fidlen);
    if (l == NULL)
        return -1;
    vc_link_append(&l->out, frames, n);
    if (l->out.len - l->out.off > OUT_LIMIT)
        l->stuck = 1;
    return 0;
}

void fronts_flush(fronts_t *fs)
{
    for (size_t i = 0; i < fs->nl; i++) {
        front_link_t *l = &fs->l[i];
        if (l->fd >= 0 && l->stuck)
            drop(fs, l, "it read nothing while 256 MiB of answers waited");
        else if (l->fd >= 0 && l->out.len > l->out.off)
            write_front(fs, l);
    }
}

int fronts_lender(fronts_t *fs, char fid[FRONT_ID_LEN])
{
    for (size_t k = 0; k < fs->nl; k++) {
        size_t i = (fs->lend_at + k) % fs->nl;
        front_link_t *l = &fs->l[i];
        if (l->fd >= 0 && l->unix_socket && !l->stuck && l->out.len - l->out.off <= FRONT_BACKLOG) {
            fs->lend_at = i + 1;
            make_id(fid, (uint32_t)i, l->serial);
            return 1;
        }
    }
    return 0;
}

pid_t fronts_pid(fronts_t *fs, const void *fid)
{
    front_link_t *l = by_id(fs, fid, FRONT_ID_LEN);
    return l ? l->pid : 0;
}

vc_board_t *fronts_board(fronts_t *fs, const void *fid)
{
    front_link_t *l = by_id(fs, fid, FRONT_ID_LEN);
    return l ? l->board : NULL;
}

/* The front's board: a memfd of its own, so one front cannot read or
 * write another's. */
static int make_board(front_link_t *l)
{
    int fd = memfd_create("vc-board", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, sizeof(vc_board_t)) < 0) {
        vc_log(VC_LOG_ERR, "fronts", "cannot make a board for a front: %s", vc_strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *p = mmap(NULL, sizeof(vc_board_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        vc_log(VC_LOG_ERR, "fronts", "cannot map a front's board: %s", vc_strerror(errno));
        close(fd);
        return -1;
    }
    l->board_fd = fd;
    l->board = p;
    return 0;
}

int fronts_lend(fronts_t *fs, const void *fid, uint32_t slot, pid_t pid, int worker_fd)
{
    front_link_t *l = by_id(fs, fid, FRONT_ID_LEN);
    if (l == NULL || !l->unix_socket || (l->board == NULL && make_board(l) < 0))
        return -1;
    /* The descriptor goes with the lend's first byte: everything queued
     * before it must be out, or the front would pair it with the wrong
     * message. */
    if (l->out.len > l->out.off && vc_link_flush(l->fd, &l->out) != 0)
        return -1;
    if (slot >= VC_BOARD_SLOTS)
        return -1;
    /* A slot is reused after 4,096 workers: what the last one left there
     * (busy since long ago) must not be read as this one's state before
     * the front writes it. */
    vc_board_slot_t *bs = &l->board->slot[slot];
    vc_board_begin(bs);
    uint32_t seq = bs->seq;
    memset(bs, 0, sizeof(*bs));
    bs->seq = seq;
    vc_board_end(bs);
    Vc__Lend lend = VC__LEND__INIT;
    lend.slot = slot;
    lend.pid = (uint32_t)pid;
    lend.board = !l->board_sent;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_LEND;
    bm.lend = &lend;
    uint8_t packed[64];
    size_t len = protobuf_c_message_get_packed_size(&bm.base);
    if (len > sizeof(packed))
        return -1;
    protobuf_c_message_pack(&bm.base, packed);
    vc_link_append(&l->out, &(struct iovec){packed, len}, 1);
    int fds[2] = {worker_fd, l->board_fd};
    ssize_t w = vc_link_send_fds(l->fd, l->out.p + l->out.off, l->out.len - l->out.off, fds, lend.board ? 2 : 1);
    if (w <= 0) {
        l->out.len = l->out.off; /* not sent: taken back out */
        return -1;
    }
    l->board_sent = 1;
    l->out.off += (size_t)w; /* the rest, if any, goes as plain bytes */
    if (l->out.off == l->out.len)
        vc_link_reset(&l->out);
    return 0;
}

size_t fronts_boards(fronts_t *fs, vc_board_t **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < fs->nl && n < max; i++)
        if (fs->l[i].fd >= 0 && fs->l[i].board)
            out[n++] = fs->l[i].board;
    return n;
}

int fronts_publish(fronts_t *fs)
{
    int rc = vc_link_publish(fs->endpoint);
    if (rc < 0)
        vc_log(VC_LOG_CRIT, "fronts", "could not put the fronts' socket at \"%s\": %s", fs->endpoint, vc_strerror(-rc));
    return rc;
}

void fronts_unlisten(fronts_t *fs)
{
    if (fs->listen_fd < 0)
        return;
    vc_link_unlisten(fs->listen_fd, fs->endpoint, fs->listen_ino);
    fs->listen_fd = -1;
}

size_t fronts_ids(fronts_t *fs, char (*ids)[FRONT_ID_LEN], size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < fs->nl && n < max; i++)
        if (fs->l[i].fd >= 0 && !fs->l[i].stuck && !fs->l[i].authing)
            make_id(ids[n++], (uint32_t)i, fs->l[i].serial);
    return n;
}

void fronts_left(fronts_t *fs, const void *fid)
{
    front_link_t *l = by_id(fs, fid, FRONT_ID_LEN);
    if (l)
        l->left = 1;
}

int fronts_close_if_done(fronts_t *fs, const void *fid)
{
    front_link_t *l = by_id(fs, fid, FRONT_ID_LEN);
    if (l == NULL || !l->left || l->out.len > l->out.off)
        return 0;
    vc_log(VC_LOG_INFO, "fronts", "closed the link of a front: this pool is leaving and holds nothing for it");
    drop(fs, l, NULL);
    return 1;
}
