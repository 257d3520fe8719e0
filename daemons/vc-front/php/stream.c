/*
 * A PHP answer's body on its way to the client, with the front's memory
 * bounded whatever the client does (nginx's fastcgi buffers and temp file
 * do the same job):
 *
 *   1. in memory, up to front.response_buffer bytes a request;
 *   2. past that, in a temporary file, up to front.response_temp_max
 *      bytes, so the worker finishes and is free while a slow client reads;
 *   3. past that (or with no file), the worker's link is not read until
 *      the client has taken what waits; the worker blocks in its write.
 *      An answer relayed by the broker shares its link with every other
 *      request, which cannot stop for one client: it is cut instead.
 *
 * What h2o is given in one send lives until it calls proceed; the bytes
 * of the queue and of that send together are what "held" counts.
 */
#include "backend_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What one send hands h2o from the file. */
#define SPILL_READ (256u * 1024u)

static size_t mem_limit(const preq_t *p)
{
    return (size_t)p->be->f->settings->response_buffer;
}

static uint64_t file_limit(const preq_t *p)
{
    return (uint64_t)p->be->f->settings->response_temp_max;
}

/* An unnamed file in the front's temp directory: it vanishes with its
 * last descriptor, crash or not. A file system without O_TMPFILE gets a
 * named one, unlinked at once. */
static int open_spill(front_t *f)
{
    int fd = openat(f->temp_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
        return fd;
    static unsigned seq;
    char name[64];
    snprintf(name, sizeof(name), "answer-%d-%u", (int)getpid(), ++seq);
    fd = openat(f->temp_fd, name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        unlinkat(f->temp_fd, name, 0);
    return fd;
}

/* The frame at the file's end, whole, or -1 (no file, over its limit, or
 * a write failed: the disk is full). */
static int spill(preq_t *p, const void *data, size_t len)
{
    front_t *f = p->be->f;
    if (p->spill_broken || f->temp_fd < 0 || p->spill_wr + len > file_limit(p))
        return -1;
    if (p->spill_fd < 0) {
        if ((p->spill_fd = open_spill(f)) < 0) {
            vc_log(VC_LOG_ERR, "stream", "cannot open a temporary file for an answer: %s", vc_strerror(errno));
            p->spill_broken = 1;
            return -1;
        }
        php_stats.answers_spilled++;
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = pwrite(p->spill_fd, (const char *)data + off, len - off, (off_t)(p->spill_wr + off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* Not counted as written: the bytes stay in memory instead. */
            vc_log(VC_LOG_ERR, "stream", "cannot write an answer's temporary file: %s; holding the worker instead",
                   w < 0 ? vc_strerror(errno) : "no progress");
            p->spill_broken = 1;
            return -1;
        }
        off += (size_t)w;
    }
    p->spill_wr += len;
    return 0;
}

void stream_init(preq_t *p)
{
    p->spill_fd = -1;
}

/* Frames [from, n) of fr join the answer, in order: the queue, then the
 * file, then (when the file cannot take them) the frames after it. */
void stream_append(preq_t *p, vc_frames_t *fr, size_t from)
{
    for (size_t i = from; i < fr->n; i++) {
        size_t len = fr->f[i].len;
        if (len == 0)
            continue;
        int file_in_use = p->spill_rd < p->spill_wr || p->after.n > 0;
        if (!file_in_use && p->held + len <= mem_limit(p)) {
            vc_frames_push(&p->queue, &fr->f[i]);
            p->held += len;
        } else if (p->after.n == 0 && spill(p, fr->f[i].data, len) == 0) {
            /* in the file */
        } else {
            /* Over both bounds: kept, since it was read, and the link is
             * read no further (stream_kick) until the client catches up. */
            vc_frames_push(file_in_use ? &p->after : &p->queue, &fr->f[i]);
            p->held += len;
            p->full = 1;
        }
    }
}

/* The file is read to its end: emptied for reuse, and what waited behind
 * it moves up. */
static void file_drained(preq_t *p)
{
    if (p->spill_wr > 0 && ftruncate(p->spill_fd, 0) != 0)
        p->spill_broken = 1; /* the space stays taken: use no more of it */
    p->spill_rd = p->spill_wr = 0;
    vc_frames_t t = p->queue;
    p->queue = p->after;
    p->after = t;
}

static void throttle(preq_t *p, int on)
{
    if (on == p->throttled)
        return;
    p->throttled = on;
    if (p->lw) {
        if (on)
            php_stats.answers_throttled++;
        lent_pause(p->lw, on);
    } else if (on) {
        /* The broker's link carries every client's answers. */
        char limit[32];
        snprintf(limit, sizeof(limit), "%lld", (long long)(mem_limit(p) + file_limit(p)));
        vc_log(VC_LOG_WARN, "stream",
               "cutting the answer to %.*s: its client reads too slowly and %s bytes wait (front.response_buffer "
               "and front.response_temp_max)",
               (int)p->req->path.len, p->req->path.base, limit);
        php_stats.answers_cut++;
        backend_cancel(p);
        p->given_up = p->final_seen = p->aborted = 1;
    }
}

static h2o_send_state_t send_state(const preq_t *p)
{
    int more = p->queue.n > 0 || p->spill_rd < p->spill_wr || p->after.n > 0;
    if (!p->final_seen || more)
        return H2O_SEND_STATE_IN_PROGRESS;
    return p->aborted ? H2O_SEND_STATE_ERROR : H2O_SEND_STATE_FINAL;
}

/* Hands h2o the next part of the answer, one send at a time. */
void stream_kick(preq_t *p)
{
    if (p->req == NULL)
        return;
    if (p->full && p->after.n == 0 && p->spill_rd == p->spill_wr && p->held <= mem_limit(p) / 2)
        p->full = 0;
    throttle(p, p->full && !p->final_seen);
    if (!p->started || p->sending)
        return;
    h2o_iovec_t vecs[64];
    h2o_iovec_t *bufs = vecs;
    size_t n = 0;
    if (p->queue.n > 0) {
        /* The queue becomes what is in flight: its memory must live until
         * proceed. */
        vc_frames_t t = p->inflight;
        p->inflight = p->queue;
        p->queue = t;
        if (p->inflight.n > VC_ARRAY_SIZE(vecs))
            bufs = h2o_mem_alloc_pool(&p->req->pool, sizeof(h2o_iovec_t) * p->inflight.n);
        for (size_t i = 0; i < p->inflight.n; i++)
            bufs[n++] = h2o_iovec_init(p->inflight.f[i].data, p->inflight.f[i].len);
    } else if (p->spill_rd < p->spill_wr) {
        if (p->spill_buf == NULL)
            p->spill_buf = vc_malloc(SPILL_READ);
        uint64_t left = p->spill_wr - p->spill_rd;
        ssize_t r = pread(p->spill_fd, p->spill_buf, left < SPILL_READ ? (size_t)left : SPILL_READ, (off_t)p->spill_rd);
        if (r <= 0) {
            vc_log(VC_LOG_ERR, "stream", "cannot read back an answer's temporary file: %s",
                   r < 0 ? vc_strerror(errno) : "it is shorter than written");
            p->final_seen = p->aborted = p->given_up = 1;
            p->spill_rd = p->spill_wr;
            vc_frames_close(&p->after);
        } else {
            p->spill_rd += (uint64_t)r;
            bufs[n++] = h2o_iovec_init(p->spill_buf, (size_t)r);
        }
        if (p->spill_rd == p->spill_wr)
            file_drained(p);
    } else if (!p->final_seen) {
        return; /* nothing to send yet */
    }
    p->sending = 1;
    /* After a final send h2o may dispose the request (and p) at once. */
    h2o_send(p->req, bufs, n, send_state(p));
}

/* h2o is done with the last send. */
void stream_proceed(preq_t *p)
{
    VC_CHECK_OBJ(p, PREQ_MAGIC);
    size_t sent = vc_frames_bytes(&p->inflight);
    VC_ASSERT(p->held >= sent);
    p->held -= sent;
    vc_frames_close(&p->inflight);
    p->sending = 0;
    stream_kick(p);
}

void stream_fini(preq_t *p)
{
    if (p->throttled && p->lw)
        lent_pause(p->lw, 0); /* its worker's "done" must still be read */
    p->throttled = 0;
    vc_frames_fini(&p->queue);
    vc_frames_fini(&p->inflight);
    vc_frames_fini(&p->after);
    if (p->spill_fd >= 0)
        close(p->spill_fd);
    p->spill_fd = -1;
    free(p->spill_buf);
    p->spill_buf = NULL;
}
