/*
 * The broker's core (broker.h): helpers, the queue, messages from the
 * fronts and from the workers, and the broker's life.
 */
#include "vc_util.h"
#include "broker_internal.h"
#include "vc_events.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>

const char *const wstate_names[] = {"starting", "idle", "busy", "finishing", "retired", "lent"};

/* The moves a worker's state may make (from, then to). Work is given only
 * to an idle worker, lent only from idle, and finishes only from busy; a
 * worker goes idle or retires from any state the broker holds it in. A
 * move not in the table is the broker's own bug, never a worker's doing:
 * what a worker sends is checked before it moves anything. */
static const unsigned char may_move[6][6] = {
    /* to:          STARTING IDLE BUSY FINISHING RETIRED LENT */
    [W_STARTING] = {0, 1, 0, 0, 1, 0},  /* ready, or of an old generation */
    [W_IDLE] = {0, 1, 1, 0, 1, 1},      /* given work, lent, or retired */
    [W_BUSY] = {0, 1, 0, 1, 1, 0},      /* done, answered (finishing), or retired */
    [W_FINISHING] = {0, 1, 0, 1, 1, 0}, /* done, or retired */
    [W_RETIRED] = {0, 1, 0, 0, 1, 0},   /* idle only as it died */
    [W_LENT] = {0, 1, 0, 0, 1, 0},      /* given back, or its front left */
};

void broker_worker_state(worker_t *w, enum wstate to)
{
    VC_ASSERT(may_move[w->state][to]);
    w->state = to;
}

const char *const board_state_names[] = {"idle", "busy", "finishing"};

worker_t *broker_by_pid(broker_t *d, pid_t pid)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].pid == pid)
            return &d->w[i];
    return NULL;
}

/* Out of the epoll set first: a copy of the descriptor in a child of a
 * fork (a new zygote before its exec) would otherwise keep it there. */
void broker_link_close(broker_t *d, worker_t *w)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (w->fd < 0)
        return;
    epoll_ctl(d->epfd, EPOLL_CTL_DEL, w->fd, NULL);
    close(w->fd);
    w->fd = -1;
}

void broker_job_free(job_t *j)
{
    vc_frames_fini(&j->fr);
    free(j->what);
    free(j->script);
    free(j);
}

/* Sends [BackMessage] and, if body is set, [body] to the front fid names
 * (FRONT_ID_LEN bytes; an answer for a front that left is dropped). */
void broker_to_front_id(broker_t *d, const void *fid, const Vc__BackMessage *bm, const char *body, size_t blen)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    uint8_t stack[512];
    size_t len = protobuf_c_message_get_packed_size(&bm->base);
    uint8_t *packed = len <= sizeof(stack) ? stack : vc_malloc(len);
    protobuf_c_message_pack(&bm->base, packed);
    struct iovec f[2] = {{packed, len}, {(void *)body, blen}};
    fronts_send(d->fronts, fid, FRONT_ID_LEN, f, body ? 2 : 1);
    if (packed != stack)
        free(packed);
}

static void to_front(broker_t *d, const vc_frame_t *fid, const Vc__BackMessage *bm, const char *body, size_t blen)
{
    if (fid->len == FRONT_ID_LEN)
        broker_to_front_id(d, fid->data, bm, body, blen);
}

/* An answer from the broker itself: [front-id][BackMessage][text]. */
void broker_answer(broker_t *d, const vc_frame_t *fid, uint64_t req_id, unsigned status, const char *text,
                   const char *retry_after)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    Vc__ResponseHead head = VC__RESPONSE_HEAD__INIT;
    Vc__Header ct = VC__HEADER__INIT, ra = VC__HEADER__INIT;
    Vc__Header *hdrs[2];
    head.id = req_id;
    head.status = status;
    head.final = 1;
    head.error = (char *)text;
    head.reason = status == 502   ? "Bad Gateway"
                  : status == 503 ? "Service Unavailable"
                  : status == 504 ? "Gateway Time-out"
                                  : "";
    ct.name = "Content-Type";
    ct.value.data = (uint8_t *)"text/plain; charset=utf-8";
    ct.value.len = strlen((char *)ct.value.data);
    hdrs[head.n_headers++] = &ct;
    if (retry_after) {
        ra.name = "Retry-After";
        ra.value.data = (uint8_t *)retry_after;
        ra.value.len = strlen(retry_after);
        hdrs[head.n_headers++] = &ra;
    }
    head.headers = hdrs;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_HEAD;
    bm.head = &head;
    char body[128];
    int n = snprintf(body, sizeof(body), "%s\n", text);
    to_front(d, fid, &bm, body, (size_t)n);
}

/* The worker died after the head went out: the front must cut the
 * response rather than pass a truncated body off as whole. */
void broker_abort_stream(broker_t *d, const vc_frame_t *fid, uint64_t req_id)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    Vc__StreamChunk chunk = VC__STREAM_CHUNK__INIT;
    chunk.id = req_id;
    chunk.final = 1;
    chunk.aborted = 1;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_CHUNK;
    bm.chunk = &chunk;
    to_front(d, fid, &bm, NULL, 0);
}

void broker_enqueue(broker_t *d, job_t *j, int at_head)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (at_head)
        vc_queue_push_head(&d->queue, &j->qlink);
    else
        vc_queue_push(&d->queue, &j->qlink);
}

job_t *broker_dequeue(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    vc_qlink_t *l = vc_queue_pop(&d->queue);
    return l ? VC_QUEUE_ITEM(l, job_t, qlink) : NULL;
}

/* Sends a job to an idle worker. The worker gets the frames themselves;
 * the job keeps the front-id and, if it may be retried, copies. */
static void assign(broker_t *d, worker_t *w, job_t *j)
{
    vc_frames_t keep = {0};
    vc_frames_dup(&keep, &j->fr, j->idempotent ? j->fr.n : 1); /* by reference: no byte is copied */
    struct iovec stack[16];
    struct iovec *f = j->fr.n <= VC_ARRAY_SIZE(stack) ? stack : vc_malloc(j->fr.n * sizeof(*f));
    for (size_t i = 0; i < j->fr.n; i++)
        f[i] = vc_frame_iov(&j->fr.f[i]);
    /* The worker is idle, so reading: a blocking write does not wait on
     * anything but the copy. If it fails (the worker is gone, or stopped
     * reading for the link's send timeout) the worker is killed, and its
     * exit, reported by the zygote, answers the job. */
    if (w->fd < 0 || vc_link_send(w->fd, f, j->fr.n) < 0) {
        vc_log(VC_LOG_WARN, "broker", "could not pass %s to worker %d: killed", j->what, (int)w->pid);
        broker_signal(w, SIGKILL);
    }
    if (f != stack)
        free(f);
    vc_frames_fini(&j->fr);
    j->fr = keep;
    broker_worker_state(w, W_BUSY);
    w->job = j;
    w->started = 0;
    w->timed_out = 0;
    w->since_ms = vc_mono_ms();
}

void broker_signal(worker_t *w, int sig)
{
    /* By pid only where the zygote could not open the process (no /proc):
     * then a pid reused since the worker's exit could be another's. */
    if (w->pidfd >= 0 ? pidfd_send_signal(w->pidfd, sig, NULL, 0) : kill(w->pid, sig))
        if (errno != ESRCH)
            vc_log(VC_LOG_WARN, "broker", "cannot signal worker %d: %s", (int)w->pid, strerror(errno));
}

/* A worker finished its work: idle, or, if a reload made it old, told to
 * exit (it is never given work again). */
void broker_make_idle(broker_t *d, worker_t *w)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    w->since_ms = vc_mono_ms();
    if (w->dying) {
        broker_worker_state(w, W_IDLE); /* as it was when it died; broker_pump() and broker_lend() skip it */
    } else if (w->gen != d->gen || w->recycle || w->retire) {
        broker_worker_state(w, W_RETIRED);
        broker_signal(w, SIGTERM);
    } else {
        broker_worker_state(w, W_IDLE);
    }
}

/* Hands queued jobs to idle workers; with none left, idle workers are
 * lent to the fronts. Jobs that still wait (they came from a front with no
 * worker of its own, or over TCP) call lent workers back, one a job. */
void broker_pump(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (d->leaving) {
        broker_bounce_queue(d); /* a retry: the successor runs it */
        return;
    }
    for (size_t i = 0; i < d->nw && d->queue.head; i++)
        if (d->w[i].state == W_IDLE && !d->w[i].dying)
            assign(d, &d->w[i], broker_dequeue(d));
    if (d->queue.head == NULL) {
        broker_lend(d);
        return;
    }
    size_t asked = 0;
    for (size_t i = 0; i < d->nw; i++)
        asked += d->w[i].state == W_LENT && d->w[i].recalled;
    /* Idle ones first (their boards say so), then any. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < d->nw && asked < d->queue.len; i++) {
            worker_t *w = &d->w[i];
            if (w->state != W_LENT || w->recalled)
                continue;
            vc_board_slot_t *bs = pass == 0 ? broker_board_slot(d, w) : NULL;
            if (pass == 0 && (bs == NULL || __atomic_load_n(&bs->state, __ATOMIC_RELAXED) != VC_BOARD_IDLE))
                continue;
            broker_recall(d, w);
            asked++;
        }
}

static int same_front(const job_t *j, const void *fid)
{
    return j->fr.f[0].len == FRONT_ID_LEN && memcmp(j->fr.f[0].data, fid, FRONT_ID_LEN) == 0;
}

/* A request, or a cancel, from a front: [FrontMessage][body...]. */
void broker_on_front(void *arg, const void *fid, const struct iovec *f, int n)
{
    broker_t *d = arg;
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    Vc__FrontMessage *fm = vc__front_message__unpack(NULL, f[0].iov_len, f[0].iov_base);
    if (fm == NULL) {
        vc_log(VC_LOG_WARN, "broker", "dropped a malformed message from a front (%d frames)", n);
        return;
    }
    if (fm->kind_case == VC__FRONT_MESSAGE__KIND_CANCEL) {
        uint64_t id = fm->cancel->id;
        /* Still queued: drop it. Running: the worker finishes, its
         * answer is dropped by the front. */
        for (vc_qlink_t *l = d->queue.head; l; l = l->next) {
            job_t *j = VC_QUEUE_ITEM(l, job_t, qlink);
            if (j->req_id == id && same_front(j, fid)) {
                vc_queue_remove(&d->queue, l);
                broker_job_free(j);
                break;
            }
        }
        /* Running: tell its worker, so connection_aborted() says so. */
        for (size_t i = 0; i < d->nw; i++) {
            worker_t *w = &d->w[i];
            if (w->state == W_BUSY && w->job && w->job->req_id == id && same_front(w->job, fid) && w->fd >= 0)
                vc_link_send_byte(w->fd, WIRE_CANCEL);
        }
        vc__front_message__free_unpacked(fm, NULL);
        return;
    }
    if (fm->kind_case == VC__FRONT_MESSAGE__KIND_LEFT) {
        vc__front_message__free_unpacked(fm, NULL);
        fronts_left(d->fronts, fid); /* leaving.c closes it once done */
        return;
    }
    if (fm->kind_case == VC__FRONT_MESSAGE__KIND_NEED) {
        vc__front_message__free_unpacked(fm, NULL);
        if (!d->leaving)
            broker_move_one(d, fid);
        return;
    }
    if (fm->kind_case == VC__FRONT_MESSAGE__KIND_GIVE_BACK && fm->give_back->lost) {
        broker_front_lost(d, fid, fm->give_back->slot, fm->give_back->outcome);
        vc__front_message__free_unpacked(fm, NULL);
        return;
    }
    if (fm->kind_case == VC__FRONT_MESSAGE__KIND_GIVE_BACK) {
        worker_t *w = broker_lent_worker(d, fid, fm->give_back->slot);
        worker_t *kept = fm->give_back->instead ? broker_lent_worker(d, fid, fm->give_back->instead_of) : NULL;
        vc__front_message__free_unpacked(fm, NULL);
        broker_given_back(d, w, kept);
        return;
    }
    if (fm->kind_case != VC__FRONT_MESSAGE__KIND_REQUEST) {
        vc__front_message__free_unpacked(fm, NULL);
        return;
    }
    Vc__RequestHead *h = fm->request;
    if (d->leaving) {
        /* Sent before the front read our Leaving. */
        broker_bounce(d, fid, h->id);
        vc__front_message__free_unpacked(fm, NULL);
        return;
    }
    d->accepted++;
    job_t *j = vc_calloc(1, sizeof(*j));
    j->req_id = h->id;
    j->enq_ms = vc_mono_ms();
    j->idempotent = !strcmp(h->method, "GET") || !strcmp(h->method, "HEAD");
    j->what = vc_asprintf("%s %.*s", h->method, (int)(h->request_uri.len > 200 ? 200 : h->request_uri.len),
                          (const char *)h->request_uri.data);
    j->script = vc_strdup(h->script_filename);
    vc__front_message__free_unpacked(fm, NULL);
    /* The job's frames: the front-id, then a copy of the message (one
     * block): the job may wait in the queue, and the front's link buffer
     * is reused for what comes next. This is the relayed path's second
     * copy of a request body (docs/BENCHMARKS.md). */
    vc_frames_copy(&j->fr, &(struct iovec){(void *)fid, FRONT_ID_LEN}, 1);
    vc_frames_copy(&j->fr, f, (size_t)n);
    if (vc_queue_full(&d->queue)) {
        int idle = 0;
        for (size_t i = 0; i < d->nw; i++)
            idle |= d->w[i].state == W_IDLE;
        if (!idle) {
            d->rejected_503++;
            vc_log(VC_LOG_WARN, "broker", "queue full (%zu waiting): 503 for %s", d->queue.len, j->what);
            broker_answer(d, &j->fr.f[0], j->req_id, 503, "Service Unavailable: every PHP worker is busy", "1");
            broker_job_free(j);
            return;
        }
    }
    broker_enqueue(d, j, 0);
    broker_pump(d);
}

void broker_finish_job(broker_t *d, worker_t *w)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (w->job) {
        broker_job_free(w->job);
        w->job = NULL;
        d->completed++;
    }
}

/* A worker runs the application's code, and native code in it can write
 * anything to its link: what it sends goes to the front of the job it
 * was given, and must be a part of that job's answer, not another
 * client's (nor a Lend or Recall, which only the broker sends). The unpack
 * costs about a microsecond, on the relay path only: a front with workers
 * lent checks their answers itself. */
static int answers_its_job(const worker_t *w, const struct iovec *msg)
{
    Vc__BackMessage *bm = vc__back_message__unpack(NULL, msg->iov_len, msg->iov_base);
    if (bm == NULL)
        return 0;
    uint64_t id = bm->kind_case == VC__BACK_MESSAGE__KIND_HEAD      ? bm->head->id
                  : bm->kind_case == VC__BACK_MESSAGE__KIND_CHUNK   ? bm->chunk->id
                  : bm->kind_case == VC__BACK_MESSAGE__KIND_PUBLISH ? bm->publish->id
                                                                    : 0;
    vc__back_message__free_unpacked(bm, NULL);
    return id != 0 && id == w->job->req_id;
}

/* One message from a worker: ["R"], or [flag][front-id][BackMessage][body...]
 * for the front of its job. */
static void on_worker_message(broker_t *d, worker_t *w, const struct iovec *f, int n)
{
    char flag = f[0].iov_len == 1 ? *(char *)f[0].iov_base : 0;
    broker_take_smaps(w, flag == WIRE_READY && w->state == W_STARTING);
    if (f[0].iov_len != 1)
        return;
    /* A connection a front lent the worker ended after that front went
     * away (vc_wire.h): the worker has been the broker's since. */
    if (flag == WIRE_CONN_BACK || flag == WIRE_CONN_CLOSED)
        return;
    if (flag == WIRE_READY) {
        broker_finish_job(d, w);
        if (w->state != W_RETIRED)
            broker_make_idle(d, w);
        broker_pump(d);
        return;
    }
    if (n < 3 || w->job == NULL)
        return;
    if (!answers_its_job(w, &f[2])) {
        /* Only native code (an extension, FFI) writes such a thing: the
         * worker is not to be trusted with another request. */
        vc_log(VC_LOG_ERR, "broker", "worker %d sent an answer for a request it was not given: killed", (int)w->pid);
        broker_signal(w, SIGKILL);
        return;
    }
    w->started = 1;
    if (w->job->fr.n > 1) {
        /* Started: no retry any more, drop the copies. */
        for (size_t i = 1; i < w->job->fr.n; i++)
            vc_block_unref(&w->job->fr.f[i].block);
        w->job->fr.n = 1;
    }
    const vc_frame_t *fid = &w->job->fr.f[0]; /* not the one the worker names */
    /* Copied into the front's output buffer: the worker's link buffer is
     * read again at once. */
    fronts_send(d->fronts, fid->data, fid->len, f + 2, (size_t)n - 2);
    if (flag == WIRE_DONE) {
        w->served++;
        broker_finish_job(d, w);
        broker_make_idle(d, w);
        broker_pump(d);
    } else if (flag == WIRE_FINAL) {
        w->served++;
        broker_worker_state(w, W_FINISHING);
    }
}

/* A worker whose answer goes to a front that has not taken what it was
 * sent is not read: it waits in its write (the kernel's buffer is full),
 * and what the broker holds for that front stays bounded. Its death is
 * still seen (the zygote reports it). */
static int held_back(broker_t *d, const worker_t *w)
{
    return w->job && (w->state == W_BUSY || w->state == W_FINISHING) &&
           fronts_backlogged(d->fronts, w->job->fr.f[0].data, w->job->fr.f[0].len);
}

typedef struct worker_read {
    broker_t *d;
    worker_t *w;
    int hangup;
} worker_read_t;

/* Handling may free w's slot only through the zygote's report, never
 * here, so w stays valid. Held back: no further reads (what was read is
 * still handled). */
static int on_worker_read(void *arg, const struct iovec *f, int n)
{
    worker_read_t *r = arg;
    on_worker_message(r->d, r->w, f, n);
    /* Lent (it went idle and to a front): its link is the front's now. */
    return r->w->state == W_LENT || (!r->hangup && held_back(r->d, r->w));
}

/* Reads what a worker sent and handles each whole message. At the end of
 * the stream (the worker died) the link is closed; the zygote's report of
 * the exit answers whatever the worker held. A hung-up link is read even
 * when held back: its end must be seen, or poll() reports it again at
 * once, for ever. */
void broker_on_worker(broker_t *d, worker_t *w, int hangup)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (w->fd < 0 || w->state == W_LENT || (!hangup && held_back(d, w)))
        return;
    worker_read_t r = {d, w, hangup};
    int rc = vc_link_read(w->fd, &w->in, 64, on_worker_read, &r);
    if (rc == -EPROTO) {
        vc_log(VC_LOG_ERR, "broker", "a malformed message from worker %d: killed", (int)w->pid);
        broker_signal(w, SIGKILL);
    }
    if (rc <= 0)
        broker_link_close(d, w);
}

/* With hundreds of workers, poll() over every link cost the broker a
 * third of its time (the kernel walks each descriptor on every call): the
 * links live in an epoll set, and the broker polls its one descriptor. */
int broker_poll_fd(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    return d->epfd;
}

void broker_watch(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        int want = w->fd >= 0 && !held_back(d, w);
        if (w->fd < 0 || w->state == W_LENT || want == w->reading)
            continue;
        struct epoll_event ev = {.events = want ? EPOLLIN : 0, .data.fd = w->fd};
        if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, w->fd, &ev) == 0)
            w->reading = want;
    }
}

static worker_t *by_fd(broker_t *d, int fd)
{
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].fd == fd)
            return &d->w[i];
    return NULL;
}

void broker_on_workers(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    struct epoll_event ev[64];
    int n = epoll_wait(d->epfd, ev, VC_ARRAY_SIZE(ev), 0);
    for (int i = 0; i < n; i++) {
        /* Handling only ever closes links: a descriptor no worker holds
         * any more is skipped. */
        worker_t *w = by_fd(d, ev[i].data.fd);
        if (w)
            broker_on_worker(d, w, (ev[i].events & (EPOLLERR | EPOLLHUP)) != 0);
    }
}

void broker_worker_forked(broker_t *d, pid_t pid, int pidfd, unsigned gen, int fd, worker_clock_t *clock)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (d->spawning > 0 && gen == d->gen)
        d->spawning--;
    VC_GROW(d->w, d->capw, d->nw + 1, 8);
    worker_t *w = &d->w[d->nw++];
    memset(w, 0, sizeof(*w));
    w->pid = pid;
    w->pidfd = pidfd;
    w->fd = fd;
    w->clock = clock;
    w->smaps = -1;
    w->in.take_fds = 1;
    w->slot = broker_take_slot(d);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (fd >= 0 && epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        vc_log(VC_LOG_ERR, "broker", "cannot watch worker %d's link: %s", (int)pid, strerror(errno));
        close(fd);
        w->fd = -1;
        broker_signal(w, SIGKILL); /* never to be heard: its exit is reported like any other */
    }
    w->reading = w->fd >= 0;
    w->gen = gen;
    w->state = W_STARTING; /* a new worker in the slot: no move of an old one */
    w->since_ms = vc_mono_ms();
    /* Fork mode makes a worker per request: not news worth an event. */
    if (strcmp(d->cfg->php.mode, "fork") != 0) {
        char p[16];
        snprintf(p, sizeof(p), "%d", (int)pid);
        vc_bus_publish(d->bus, VC_EVENT(PHP_WORKER_STARTED), VC__SEVERITY__INFO, "pid", p, NULL);
    }
}

int broker_alive(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    return (int)d->nw;
}

void broker_drain(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    /* A generation no zygote has: idle workers go now, busy ones when they
     * finish, and nothing new is forked. */
    broker_new_generation(d, UINT_MAX, d->cfg);
}

void broker_kill_workers(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    for (size_t i = 0; i < d->nw; i++)
        broker_signal(&d->w[i], SIGKILL);
}

broker_t *broker_new(const vc_config_t *cfg, fronts_t *fronts, vc_bus_t *bus)
{
    broker_t *d = vc_calloc(1, sizeof(*d));
    d->magic = BROKER_MAGIC;
    d->cfg = cfg;
    d->queue.max = (size_t)cfg->php.queue_limit;
    d->fronts = fronts;
    d->bus = bus;
    d->run_limit_ms = broker_run_limit(cfg);
    d->lending = strcmp(cfg->php.mode, "fork") != 0;
    pool_size_init(&d->size, cfg);
    fronts_on_change(fronts, broker_on_front_change, d);
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (d->epfd < 0) {
        vc_log(VC_LOG_CRIT, "broker", "epoll_create1: %s", strerror(errno));
        free(d);
        return NULL;
    }
    return d;
}

void broker_destroy(broker_t **pd)
{
    broker_t *d = *pd;
    if (d == NULL)
        return;
    for (job_t *j; (j = broker_dequeue(d)) != NULL;)
        broker_job_free(j);
    for (size_t i = 0; i < d->nw; i++) {
        if (d->w[i].job)
            broker_job_free(d->w[i].job);
        broker_link_close(d, &d->w[i]);
        vc_link_buf_free(&d->w[i].in);
        if (d->w[i].smaps >= 0)
            close(d->w[i].smaps);
    }
    free(d->w);
    free(d->lost);
    close(d->epfd);
    d->magic = 0;
    free(d);
    *pd = NULL;
}
