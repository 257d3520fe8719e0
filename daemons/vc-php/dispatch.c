#include "dispatch.h"
#include "fronts.h"
#include "pool.h"
#include "vc_log.h"
#include "vc_msg.h"
#include "vc_util.h"
#include "wire.h"
#include "vc_link.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "request.pb-c.h"

/* Crash-loop guard: this many crashes inside the window slow spawning.
 * Only a worker's own faults count (a signal like SIGSEGV or SIGABRT, a
 * non-zero exit): SIGKILL comes from outside (an operator, the OOM killer,
 * our own time limit), and the pool refills at once after it. */
#define CRASH_WINDOW_MS 60000
#define CRASH_BURST 5
#define SPAWN_BACKOFF_MAX_MS 10000

typedef struct job {
    vc_frames_t fr; /* [front-id][FrontMessage][body...] while queued;
                     * afterwards [front-id] plus, for a retryable
                     * request, copies of the rest */
    uint64_t req_id;
    uint64_t enq_ms;
    int retries;
    int idempotent; /* GET or HEAD: may run again on another worker */
    char *what;     /* "GET /x.php" for logs */
    char *script;
    struct job *next;
} job_t;

/* W_RETIRED: of an older generation (a reload happened), told to exit.
 * W_LENT: its link is with a front, which sends it requests itself; what
 * it does is on that front's board (libcommon/vc_board.h). */
enum wstate { W_STARTING, W_IDLE, W_BUSY, W_FINISHING, W_RETIRED, W_LENT };
static const char *const wstate_names[] = {"starting", "idle", "busy", "finishing", "retired", "lent"};
static const char *const board_state_names[] = {"idle", "busy", "finishing"};

typedef struct worker {
    pid_t pid;
    int fd;           /* the link (libcommon/vc_link.h); -1 once it is closed */
    int reading;      /* the link is in the epoll set with EPOLLIN */
    vc_link_buf_t in; /* what the worker sent, not yet handled */
    unsigned gen;     /* the zygote generation it was forked from */
    enum wstate state;
    job_t *job;        /* set while W_BUSY or W_FINISHING */
    int started;       /* the response has begun: no retry */
    int timed_out;     /* killed for running too long */
    int recycle;       /* over the memory ceiling: exits once idle */
    int retire;        /* the pool shrank: exits once idle */
    int dying;         /* exited: what it wrote is being read, no new work */
    uint64_t since_ms; /* start of the current state */
    uint64_t served;
    int slot;                   /* its board slot; -1: none (never lent) */
    char lent_to[FRONT_ID_LEN]; /* W_LENT: the front */
    int recalled;               /* W_LENT: asked back */
    int front_said;             /* W_LENT: its link ended, the front said */
    int moving;                 /* recalled for the front in move_to */
    char move_to[FRONT_ID_LEN];
    char front_action[16]; /* what it did (see lent_exited) */
} worker_t;

/* A lent worker that exited, its report waiting for its front's word. */
#define LOST_WAIT_MS 2000
typedef struct lost {
    char fid[FRONT_ID_LEN];
    int slot;
    pid_t pid;
    int clean, own_fault, recycled;
    int busy, finishing, started, timed_out, idempotent, retries; /* the board */
    char how[64], what[208], script[256];
    uint64_t due_ms;
} lost_t;

struct dispatch {
    const vc_config_t *cfg;
    unsigned gen; /* new work goes only to workers of this generation */
    fronts_t *fronts;
    vc_bus_t *bus;
    int epfd; /* the workers' links: one descriptor for the broker's poll */
    worker_t *w;
    size_t nw, capw;
    job_t *qhead, *qtail;
    size_t qlen;
    int spawning; /* asked of the zygote, not yet forked */
    uint64_t crashes[CRASH_BURST];
    size_t ncrash;
    uint64_t spawn_after_ms;
    unsigned backoff_ms;
    uint64_t run_limit_ms; /* 0: none */
    pool_size_t size;
    size_t sample_at; /* round robin of the memory samples */
    uint64_t last_sample_ms;
    int lending;                       /* not in fork mode */
    uint8_t slot_used[VC_BOARD_SLOTS]; /* board slots, one per worker */
    size_t next_slot;                  /* given out in turn, so a slot is
                                        * not reused while a front may
                                        * still hold its last worker */
    lost_t *lost;
    size_t nlost;
    /* counters */
    uint64_t accepted, completed, rejected_503, timed_out_504, failed_502, retried, crashed, killed;
};

static uint64_t run_limit(const vc_config_t *cfg);
static void lend(dispatch_t *d);
static void recall(dispatch_t *d, worker_t *w);
static vc_board_slot_t *board_slot(dispatch_t *d, const worker_t *w);
static void report_overdue(dispatch_t *d, const void *gone_fid);
static void front_lost(dispatch_t *d, const void *fid, uint32_t slot, const char *action);

/* ---- helpers -------------------------------------------------------------- */

static worker_t *by_pid(dispatch_t *d, pid_t pid)
{
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].pid == pid)
            return &d->w[i];
    return NULL;
}

/* Out of the epoll set first: a copy of the descriptor in a child of a
 * fork (a new zygote before its exec) would otherwise keep it there. */
static void link_close(dispatch_t *d, worker_t *w)
{
    if (w->fd < 0)
        return;
    epoll_ctl(d->epfd, EPOLL_CTL_DEL, w->fd, NULL);
    close(w->fd);
    w->fd = -1;
}

static void job_free(job_t *j)
{
    vc_frames_fini(&j->fr);
    free(j->what);
    free(j->script);
    free(j);
}

/* Sends [BackMessage] and, if body is set, [body] to the front fid names
 * (FRONT_ID_LEN bytes; an answer for a front that left is dropped). */
static void to_front_id(dispatch_t *d, const void *fid, const Vc__BackMessage *bm, const char *body, size_t blen)
{
    uint8_t stack[512];
    size_t len = protobuf_c_message_get_packed_size(&bm->base);
    uint8_t *packed = len <= sizeof(stack) ? stack : vc_malloc(len);
    protobuf_c_message_pack(&bm->base, packed);
    struct iovec f[2] = {{packed, len}, {(void *)body, blen}};
    fronts_send(d->fronts, fid, FRONT_ID_LEN, f, body ? 2 : 1);
    if (packed != stack)
        free(packed);
}

static void to_front(dispatch_t *d, const zmq_msg_t *fid, const Vc__BackMessage *bm, const char *body, size_t blen)
{
    if (zmq_msg_size((zmq_msg_t *)fid) == FRONT_ID_LEN)
        to_front_id(d, zmq_msg_data((zmq_msg_t *)fid), bm, body, blen);
}

/* An answer from the broker itself: [front-id][BackMessage][text]. */
static void answer(dispatch_t *d, const zmq_msg_t *fid, uint64_t req_id, unsigned status, const char *text,
                   const char *retry_after)
{
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
static void abort_stream(dispatch_t *d, const zmq_msg_t *fid, uint64_t req_id)
{
    Vc__StreamChunk chunk = VC__STREAM_CHUNK__INIT;
    chunk.id = req_id;
    chunk.final = 1;
    chunk.aborted = 1;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_CHUNK;
    bm.chunk = &chunk;
    to_front(d, fid, &bm, NULL, 0);
}

/* ---- the queue ------------------------------------------------------------ */

static void enqueue(dispatch_t *d, job_t *j, int at_head)
{
    j->next = NULL;
    if (at_head) {
        j->next = d->qhead;
        d->qhead = j;
        if (d->qtail == NULL)
            d->qtail = j;
    } else {
        if (d->qtail)
            d->qtail->next = j;
        else
            d->qhead = j;
        d->qtail = j;
    }
    d->qlen++;
}

static job_t *dequeue(dispatch_t *d)
{
    job_t *j = d->qhead;
    if (j) {
        d->qhead = j->next;
        if (d->qhead == NULL)
            d->qtail = NULL;
        d->qlen--;
        j->next = NULL;
    }
    return j;
}

/* Sends a job to an idle worker. The worker gets the frames themselves;
 * the job keeps the front-id and, if it may be retried, copies. */
static void assign(dispatch_t *d, worker_t *w, job_t *j)
{
    vc_frames_t keep = {0};
    size_t ncopy = j->idempotent ? j->fr.n : 1;
    for (size_t i = 0; i < ncopy; i++) {
        if (keep.n == keep.cap) {
            keep.cap = keep.cap ? keep.cap * 2 : 4;
            keep.f = vc_realloc(keep.f, keep.cap * sizeof(zmq_msg_t));
        }
        zmq_msg_init(&keep.f[keep.n]);
        zmq_msg_copy(&keep.f[keep.n], &j->fr.f[i]);
        keep.n++;
    }
    struct iovec stack[16];
    struct iovec *f = j->fr.n <= VC_ARRAY_SIZE(stack) ? stack : vc_malloc(j->fr.n * sizeof(*f));
    for (size_t i = 0; i < j->fr.n; i++)
        f[i] = (struct iovec){zmq_msg_data(&j->fr.f[i]), zmq_msg_size(&j->fr.f[i])};
    /* The worker is idle, so reading: a blocking write does not wait on
     * anything but the copy. If it fails (the worker is gone, or stopped
     * reading for the link's send timeout) the worker is killed, and its
     * exit, reported by the zygote, answers the job. */
    if (w->fd < 0 || vc_link_send(w->fd, f, j->fr.n) < 0) {
        vc_log(VC_LOG_WARN, "dispatch", "could not pass %s to worker %d: killed", j->what, (int)w->pid);
        kill(w->pid, SIGKILL);
    }
    if (f != stack)
        free(f);
    vc_frames_fini(&j->fr);
    j->fr = keep;
    w->state = W_BUSY;
    w->job = j;
    w->started = 0;
    w->timed_out = 0;
    w->since_ms = vc_mono_ms();
}

/* A worker finished its work: idle, or, if a reload made it old, told to
 * exit (it is never given work again). */
static void make_idle(dispatch_t *d, worker_t *w)
{
    w->since_ms = vc_mono_ms();
    if (w->dying) {
        w->state = W_IDLE; /* as it was when it died; pump() and lend() skip it */
    } else if (w->gen != d->gen || w->recycle || w->retire) {
        w->state = W_RETIRED;
        kill(w->pid, SIGTERM);
    } else {
        w->state = W_IDLE;
    }
}

/* Hands queued jobs to idle workers; with none left, idle workers are
 * lent to the fronts. Jobs that still wait (they came from a front with no
 * worker of its own, or over TCP) call lent workers back, one a job. */
static void pump(dispatch_t *d)
{
    for (size_t i = 0; i < d->nw && d->qhead; i++)
        if (d->w[i].state == W_IDLE && !d->w[i].dying)
            assign(d, &d->w[i], dequeue(d));
    if (d->qhead == NULL) {
        lend(d);
        return;
    }
    size_t asked = 0;
    for (size_t i = 0; i < d->nw; i++)
        asked += d->w[i].state == W_LENT && d->w[i].recalled;
    /* Idle ones first (their boards say so), then any. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < d->nw && asked < d->qlen; i++) {
            worker_t *w = &d->w[i];
            if (w->state != W_LENT || w->recalled)
                continue;
            vc_board_slot_t *bs = pass == 0 ? board_slot(d, w) : NULL;
            if (pass == 0 && (bs == NULL || __atomic_load_n(&bs->state, __ATOMIC_RELAXED) != VC_BOARD_IDLE))
                continue;
            recall(d, w);
            asked++;
        }
}

/* ---- lending -------------------------------------------------------------- */

/* A worker idle in the broker goes to a front linked over a Unix socket,
 * which then sends it requests and reads its answers itself: a request
 * wakes two processes (front and worker) instead of four. The broker
 * keeps its own copy of the link, out of its epoll set, and has it back
 * when the front gives the worker back (a Recall, or the front found no
 * more use) or goes away. */

static vc_board_slot_t *board_slot(dispatch_t *d, const worker_t *w)
{
    vc_board_t *b = fronts_board(d->fronts, w->lent_to);
    return b && w->slot >= 0 ? &b->slot[w->slot] : NULL;
}

/* What a lent worker does, per its front's board (idle if unknown). */
static void lent_state(dispatch_t *d, const worker_t *w, vc_board_slot_t *out)
{
    vc_board_slot_t *bs = board_slot(d, w);
    if (bs)
        vc_board_read(bs, out);
    else
        memset(out, 0, sizeof(*out));
}

static int take_slot(dispatch_t *d)
{
    for (size_t k = 0; k < VC_BOARD_SLOTS; k++) {
        size_t i = (d->next_slot + k) % VC_BOARD_SLOTS;
        if (!d->slot_used[i]) {
            d->slot_used[i] = 1;
            d->next_slot = i + 1;
            return (int)i;
        }
    }
    return -1;
}

static void lend(dispatch_t *d)
{
    if (!d->lending)
        return;
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        if (w->state != W_IDLE || w->dying || w->fd < 0 || w->slot < 0 || w->in.len > w->in.off)
            continue;
        char fid[FRONT_ID_LEN];
        int moved = w->moving && fronts_lend(d->fronts, w->move_to, (uint32_t)w->slot, w->pid, w->fd) == 0;
        w->moving = 0;
        if (moved)
            memcpy(fid, w->move_to, FRONT_ID_LEN);
        else if (!fronts_lender(d->fronts, fid) || fronts_lend(d->fronts, fid, (uint32_t)w->slot, w->pid, w->fd) < 0)
            return;
        epoll_ctl(d->epfd, EPOLL_CTL_DEL, w->fd, NULL);
        w->reading = 0;
        w->state = W_LENT;
        w->recalled = 0;
        w->timed_out = 0;
        memcpy(w->lent_to, fid, FRONT_ID_LEN);
        w->since_ms = vc_mono_ms();
    }
}

/* A worker that must itself come back (to exit), not just any worker. */
static int must_return(const dispatch_t *d, const worker_t *w)
{
    return w->gen != d->gen || w->recycle || w->retire;
}

/* A worker asked back only because the pool needs one (requests wait
 * here, or at another front) may be answered by any idle one: the front
 * may have made this one busy since the board said it was idle, and its
 * request may be long. */
static void recall(dispatch_t *d, worker_t *w)
{
    if (w->state != W_LENT || w->recalled)
        return;
    Vc__Recall r = VC__RECALL__INIT;
    r.slot = (uint32_t)w->slot;
    r.any = !must_return(d, w);
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_RECALL;
    bm.recall = &r;
    to_front_id(d, w->lent_to, &bm, NULL, 0);
    w->recalled = 1;
}

/* The link is the broker's again; s is the worker's last board entry. */
static void take_back(dispatch_t *d, worker_t *w, const vc_board_slot_t *s)
{
    w->served += s->served;
    w->recalled = 0;
    /* The front's event loop made the link non-blocking (the flag is the
     * socket's, shared by both copies): the broker's writes block. */
    int fl = w->fd >= 0 ? fcntl(w->fd, F_GETFL) : -1;
    if (fl >= 0 && (fl & O_NONBLOCK))
        fcntl(w->fd, F_SETFL, fl & ~O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = w->fd};
    if (w->fd >= 0 && epoll_ctl(d->epfd, EPOLL_CTL_ADD, w->fd, &ev) == 0) {
        w->reading = 1;
    } else {
        vc_log(VC_LOG_ERR, "dispatch", "cannot watch worker %d's link again: killed", (int)w->pid);
        kill(w->pid, SIGKILL);
    }
    make_idle(d, w);
}

/* The front gave w back; if in place of kept (recalled with any), kept
 * stays lent and w does what kept was asked back for. */
static void given_back(dispatch_t *d, worker_t *w, worker_t *kept)
{
    if (kept && kept != w && kept->recalled) {
        kept->recalled = 0;
        if (w && kept->moving) {
            w->moving = 1;
            memcpy(w->move_to, kept->move_to, FRONT_ID_LEN);
        }
        kept->moving = 0;
        if (must_return(d, kept)) /* became so since: ask for it alone */
            recall(d, kept);
    }
    if (w) {
        vc_board_slot_t s;
        lent_state(d, w, &s);
        take_back(d, w, &s);
        pump(d);
    }
}

static worker_t *lent_worker(dispatch_t *d, const void *fid, uint32_t slot)
{
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].state == W_LENT && d->w[i].slot == (int)slot && !memcmp(d->w[i].lent_to, fid, FRONT_ID_LEN))
            return &d->w[i];
    return NULL;
}

/* A front has requests waiting and all its workers busy (with several
 * front processes): one worker idle here, or idle at another front, goes
 * to it. One a time, so fronts trade workers as their loads shift rather
 * than all at once. */
static void move_one(dispatch_t *d, const void *fid)
{
    worker_t *pick = NULL;
    for (size_t i = 0; i < d->nw && pick == NULL; i++) {
        worker_t *w = &d->w[i];
        if (w->state == W_IDLE && !w->dying && w->slot >= 0)
            pick = w;
        else if (w->state == W_LENT && !w->recalled && memcmp(w->lent_to, fid, FRONT_ID_LEN) != 0) {
            vc_board_slot_t *bs = board_slot(d, w);
            if (bs && __atomic_load_n(&bs->state, __ATOMIC_RELAXED) == VC_BOARD_IDLE)
                pick = w;
        }
    }
    if (pick == NULL)
        return;
    pick->moving = 1;
    memcpy(pick->move_to, fid, FRONT_ID_LEN);
    if (pick->state == W_IDLE)
        lend(d);
    else
        recall(d, pick);
}

/* A front linked: it gets the idle workers (a front linked over TCP
 * gets none). A front left: its idle workers come back. A busy one is killed: its
 * client is gone with the front, and the front may have read part of its
 * answer or written part of a request, so its link holds no clean message
 * boundary for the broker to start from. */
static void on_front_change(void *arg, const void *fid, vc_board_t *board, int linked)
{
    dispatch_t *d = arg;
    if (linked) {
        lend(d); /* the workers idle here, at once */
        return;
    }
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        if (w->state != W_LENT || memcmp(w->lent_to, fid, FRONT_ID_LEN) != 0)
            continue;
        vc_board_slot_t s;
        memset(&s, 0, sizeof(s));
        if (board && w->slot >= 0)
            vc_board_read(&board->slot[w->slot], &s);
        if (s.state == VC_BOARD_IDLE) {
            take_back(d, w, &s);
        } else {
            vc_log(VC_LOG_WARN, "dispatch", "worker %d was running %s for a front that left: killed", (int)w->pid,
                   s.what);
            w->state = W_RETIRED;
            kill(w->pid, SIGKILL);
        }
    }
    report_overdue(d, fid);
    if (board) {
        d->accepted += board->accepted;
        d->completed += board->completed;
        d->rejected_503 += board->rejected_503;
        d->timed_out_504 += board->timed_out_504;
        d->failed_502 += board->failed_502;
        d->retried += board->retried;
    }
}

/* ---- fronts --------------------------------------------------------------- */

static int same_front(const job_t *j, const void *fid)
{
    return zmq_msg_size((zmq_msg_t *)&j->fr.f[0]) == FRONT_ID_LEN &&
           memcmp(zmq_msg_data((zmq_msg_t *)&j->fr.f[0]), fid, FRONT_ID_LEN) == 0;
}

/* A request, or a cancel, from a front: [FrontMessage][body...]. */
void dispatch_on_front(void *arg, const void *fid, const struct iovec *f, int n)
{
    dispatch_t *d = arg;
    Vc__FrontMessage *fm = vc__front_message__unpack(NULL, f[0].iov_len, f[0].iov_base);
    if (fm == NULL) {
        vc_log(VC_LOG_WARN, "dispatch", "dropped a malformed message from a front (%d frames)", n);
        return;
    }
    if (fm->kind_case == VC__FRONT_MESSAGE__KIND_CANCEL) {
        uint64_t id = fm->cancel->id;
        /* Still queued: drop it. Running: the worker finishes, its
         * answer is dropped by the front. */
        for (job_t **pp = &d->qhead, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
            job_t *j = *pp;
            if (j->req_id == id && same_front(j, fid)) {
                *pp = j->next;
                if (d->qtail == j)
                    d->qtail = prev;
                d->qlen--;
                job_free(j);
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
    if (fm->kind_case == VC__FRONT_MESSAGE__KIND_NEED) {
        vc__front_message__free_unpacked(fm, NULL);
        move_one(d, fid);
        return;
    }
    if (fm->kind_case == VC__FRONT_MESSAGE__KIND_GIVE_BACK && fm->give_back->lost) {
        front_lost(d, fid, fm->give_back->slot, fm->give_back->action ? fm->give_back->action : "");
        vc__front_message__free_unpacked(fm, NULL);
        return;
    }
    if (fm->kind_case == VC__FRONT_MESSAGE__KIND_GIVE_BACK) {
        worker_t *w = lent_worker(d, fid, fm->give_back->slot);
        worker_t *kept = fm->give_back->instead ? lent_worker(d, fid, fm->give_back->instead_of) : NULL;
        vc__front_message__free_unpacked(fm, NULL);
        given_back(d, w, kept);
        return;
    }
    if (fm->kind_case != VC__FRONT_MESSAGE__KIND_REQUEST) {
        vc__front_message__free_unpacked(fm, NULL);
        return;
    }
    Vc__RequestHead *h = fm->request;
    d->accepted++;
    job_t *j = vc_calloc(1, sizeof(*j));
    j->req_id = h->id;
    j->enq_ms = vc_mono_ms();
    j->idempotent = !strcmp(h->method, "GET") || !strcmp(h->method, "HEAD");
    j->what = vc_asprintf("%s %.*s", h->method, (int)(h->request_uri.len > 200 ? 200 : h->request_uri.len),
                          (const char *)h->request_uri.data);
    j->script = vc_strdup(h->script_filename);
    vc__front_message__free_unpacked(fm, NULL);
    /* The job's frames: the front-id, then copies of the message's. */
    vc_frames_append(&j->fr, &(struct iovec){(void *)fid, FRONT_ID_LEN}, 1);
    vc_frames_append(&j->fr, f, (size_t)n);
    if (d->qlen >= (size_t)d->cfg->php.queue_limit) {
        int idle = 0;
        for (size_t i = 0; i < d->nw; i++)
            idle |= d->w[i].state == W_IDLE;
        if (!idle) {
            d->rejected_503++;
            vc_log(VC_LOG_WARN, "dispatch", "queue full (%zu waiting): 503 for %s", d->qlen, j->what);
            answer(d, &j->fr.f[0], j->req_id, 503, "Service Unavailable: every PHP worker is busy", "1");
            job_free(j);
            return;
        }
    }
    enqueue(d, j, 0);
    pump(d);
}

/* ---- workers -------------------------------------------------------------- */

static void finish_job(dispatch_t *d, worker_t *w)
{
    if (w->job) {
        job_free(w->job);
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
    uint64_t id = bm->kind_case == VC__BACK_MESSAGE__KIND_HEAD    ? bm->head->id
                  : bm->kind_case == VC__BACK_MESSAGE__KIND_CHUNK ? bm->chunk->id
                                                                  : 0;
    vc__back_message__free_unpacked(bm, NULL);
    return id != 0 && id == w->job->req_id;
}

/* One message from a worker: ["R"], or [flag][front-id][BackMessage][body...]
 * for the front of its job. */
static void on_worker_message(dispatch_t *d, worker_t *w, const struct iovec *f, int n)
{
    if (f[0].iov_len != 1)
        return;
    char flag = *(char *)f[0].iov_base;
    if (flag == WIRE_READY) {
        finish_job(d, w);
        if (w->state != W_RETIRED)
            make_idle(d, w);
        pump(d);
        return;
    }
    if (n < 3 || w->job == NULL)
        return;
    if (!answers_its_job(w, &f[2])) {
        /* Only native code (an extension, FFI) writes such a thing: the
         * worker is not to be trusted with another request. */
        vc_log(VC_LOG_ERR, "dispatch", "worker %d sent an answer for a request it was not given: killed", (int)w->pid);
        kill(w->pid, SIGKILL);
        return;
    }
    w->started = 1;
    if (w->job->fr.n > 1) {
        /* Started: no retry any more, drop the copies. */
        for (size_t i = 1; i < w->job->fr.n; i++)
            zmq_msg_close(&w->job->fr.f[i]);
        w->job->fr.n = 1;
    }
    const zmq_msg_t *fid = &w->job->fr.f[0]; /* not the one the worker names */
    fronts_send(d->fronts, zmq_msg_data((zmq_msg_t *)fid), zmq_msg_size((zmq_msg_t *)fid), f + 2, (size_t)n - 2);
    if (flag == WIRE_DONE) {
        w->served++;
        finish_job(d, w);
        make_idle(d, w);
        pump(d);
    } else if (flag == WIRE_FINAL) {
        w->served++;
        w->state = W_FINISHING;
    }
}

/* A worker whose answer goes to a front that has not taken what it was
 * sent is not read: it waits in its write (the kernel's buffer is full),
 * and what the broker holds for that front stays bounded. Its death is
 * still seen (the zygote reports it). */
static int held_back(dispatch_t *d, const worker_t *w)
{
    return w->job && (w->state == W_BUSY || w->state == W_FINISHING) &&
           fronts_backlogged(d->fronts, zmq_msg_data((zmq_msg_t *)&w->job->fr.f[0]),
                             zmq_msg_size((zmq_msg_t *)&w->job->fr.f[0]));
}

typedef struct worker_read {
    dispatch_t *d;
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
static void on_worker(dispatch_t *d, worker_t *w, int hangup)
{
    if (w->fd < 0 || w->state == W_LENT || (!hangup && held_back(d, w)))
        return;
    worker_read_t r = {d, w, hangup};
    int rc = vc_link_read(w->fd, &w->in, 64, on_worker_read, &r);
    if (rc == -EPROTO) {
        vc_log(VC_LOG_ERR, "dispatch", "a malformed message from worker %d: killed", (int)w->pid);
        kill(w->pid, SIGKILL);
    }
    if (rc <= 0)
        link_close(d, w);
}

/* With hundreds of workers, poll() over every link cost the broker a
 * third of its time (the kernel walks each descriptor on every call): the
 * links live in an epoll set, and the broker polls its one descriptor. */
int dispatch_poll_fd(dispatch_t *d)
{
    return d->epfd;
}

void dispatch_watch(dispatch_t *d)
{
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

static worker_t *by_fd(dispatch_t *d, int fd)
{
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].fd == fd)
            return &d->w[i];
    return NULL;
}

void dispatch_on_workers(dispatch_t *d)
{
    struct epoll_event ev[64];
    int n = epoll_wait(d->epfd, ev, VC_ARRAY_SIZE(ev), 0);
    for (int i = 0; i < n; i++) {
        /* Handling only ever closes links: a descriptor no worker holds
         * any more is skipped. */
        worker_t *w = by_fd(d, ev[i].data.fd);
        if (w)
            on_worker(d, w, (ev[i].events & (EPOLLERR | EPOLLHUP)) != 0);
    }
}

void dispatch_worker_forked(dispatch_t *d, pid_t pid, unsigned gen, int fd)
{
    if (d->spawning > 0 && gen == d->gen)
        d->spawning--;
    if (d->nw == d->capw) {
        d->capw = d->capw ? d->capw * 2 : 8;
        d->w = vc_realloc(d->w, d->capw * sizeof(worker_t));
    }
    worker_t *w = &d->w[d->nw++];
    memset(w, 0, sizeof(*w));
    w->pid = pid;
    w->fd = fd;
    w->slot = take_slot(d);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (fd >= 0 && epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        vc_log(VC_LOG_ERR, "dispatch", "cannot watch worker %d's link: %s", (int)pid, strerror(errno));
        close(fd);
        w->fd = -1;
        kill(pid, SIGKILL); /* never to be heard: its exit is reported like any other */
    }
    w->reading = w->fd >= 0;
    w->gen = gen;
    w->state = W_STARTING;
    w->since_ms = vc_mono_ms();
    /* Fork mode makes a worker per request: not news worth an event. */
    if (strcmp(d->cfg->php.mode, "fork") != 0) {
        char p[16];
        snprintf(p, sizeof(p), "%d", (int)pid);
        vc_bus_publish(d->bus, "php.worker.started", VC__SEVERITY__INFO, "pid", p, NULL);
    }
}

/* A worker that exited with an error after answering its request whole:
 * not a crash (its client has the answer, with the error PHP showed), but
 * logged with the request that ended it. */
static void log_ended_after(dispatch_t *d, const char *pidstr, const char *how, const char *what, const char *script,
                            int recycled)
{
    vc_log(VC_LOG_NOTICE, "pool", "worker %s ended (%s) after answering %s (\"%s\")", pidstr, how, what, script);
    vc_bus_publish(d->bus, recycled ? "php.worker.recycled" : "php.worker.exited", VC__SEVERITY__INFO, "pid", pidstr,
                   "status", how, "request", what, "script", script, NULL);
}

static void note_crash(dispatch_t *d)
{
    uint64_t now = vc_mono_ms();
    d->crashes[d->ncrash++ % CRASH_BURST] = now;
    if (d->ncrash < CRASH_BURST)
        return;
    uint64_t oldest = d->crashes[d->ncrash % CRASH_BURST];
    if (now - oldest < CRASH_WINDOW_MS) {
        d->backoff_ms = d->backoff_ms ? d->backoff_ms * 2 : 250;
        if (d->backoff_ms > SPAWN_BACKOFF_MAX_MS)
            d->backoff_ms = SPAWN_BACKOFF_MAX_MS;
        d->spawn_after_ms = now + d->backoff_ms;
        vc_log(VC_LOG_ERR, "pool", "%d workers crashed within %d s: waiting %u ms before the next fork", CRASH_BURST,
               CRASH_WINDOW_MS / 1000, d->backoff_ms);
    } else {
        d->backoff_ms = 0;
    }
}

/* A lent worker died. Its front answers its client and says how (a
 * GiveBack with lost set): only the front knows whether the answer was in
 * the link when the worker died. The exit is reported once both the
 * zygote and the front have told, or after LOST_WAIT_MS with what the
 * board said. */
static void report_lent(dispatch_t *d, const lost_t *x, const char *action)
{
    char pidstr[16];
    snprintf(pidstr, sizeof(pidstr), "%d", (int)x->pid);
    if (action && *action) {
        d->crashed++;
        vc_log(VC_LOG_ERR, "pool", "worker %s died (%s) running %s (\"%s\"): %s", pidstr, x->how, x->what, x->script,
               action);
        vc_bus_publish(d->bus, "php.worker.crashed", VC__SEVERITY__ERROR, "pid", pidstr, "status", x->how, "request",
                       x->what, "script", x->script, "action", action, NULL);
        if (x->own_fault)
            note_crash(d);
    } else if (!x->clean && (x->finishing || (action && x->busy))) {
        /* It ended after its answer was whole (a fatal error or exit() in
         * worker mode ends the worker with its request): that request is
         * named. action "" from the front: the answer was whole, though the
         * board, read before the front had read it, still said busy. */
        log_ended_after(d, pidstr, x->how, x->what, x->script, x->recycled);
    } else if (!x->clean) {
        d->crashed++;
        vc_log(VC_LOG_ERR, "pool", "worker %s died (%s) while idle", pidstr, x->how);
        vc_bus_publish(d->bus, "php.worker.crashed", VC__SEVERITY__ERROR, "pid", pidstr, "status", x->how, "action",
                       "none", NULL);
        if (x->own_fault)
            note_crash(d);
    } else {
        vc_bus_publish(d->bus, x->recycled ? "php.worker.recycled" : "php.worker.exited", VC__SEVERITY__INFO, "pid",
                       pidstr, "status", x->how, NULL);
    }
}

/* The board's word, when the front's does not come. */
static const char *guess_action(const lost_t *x)
{
    return !x->busy                           ? ""
           : x->started                       ? "aborted"
           : x->timed_out                     ? "504"
           : x->idempotent && x->retries == 0 ? "retried"
                                              : "502";
}

static void lent_exited(dispatch_t *d, worker_t *w, const char *how, int clean, int own_fault)
{
    vc_board_slot_t s;
    lent_state(d, w, &s);
    lost_t x = {.pid = w->pid, .slot = w->slot, .clean = clean, .own_fault = own_fault};
    memcpy(x.fid, w->lent_to, FRONT_ID_LEN);
    snprintf(x.how, sizeof(x.how), "%s", how);
    snprintf(x.what, sizeof(x.what), "%s", s.what);
    snprintf(x.script, sizeof(x.script), "%s", s.script);
    x.busy = s.state == VC_BOARD_BUSY;
    x.finishing = s.state == VC_BOARD_FINISHING;
    x.started = (int)s.started;
    x.timed_out = s.timed_out || w->timed_out;
    x.idempotent = (int)s.idempotent;
    x.retries = (int)s.retries;
    x.recycled = w->recycle || (x.finishing && d->cfg->php.max_requests > 0);
    if (w->front_said) {
        report_lent(d, &x, w->front_action);
        return;
    }
    x.due_ms = vc_mono_ms() + LOST_WAIT_MS;
    d->lost = vc_realloc(d->lost, (d->nlost + 1) * sizeof(*d->lost));
    d->lost[d->nlost++] = x;
}

/* The front's word on a lent worker whose link ended. */
static void front_lost(dispatch_t *d, const void *fid, uint32_t slot, const char *action)
{
    worker_t *w = lent_worker(d, fid, slot);
    if (w) { /* before the zygote's report: kept for it */
        w->front_said = 1;
        snprintf(w->front_action, sizeof(w->front_action), "%s", action);
        return;
    }
    for (size_t i = 0; i < d->nlost; i++)
        if (d->lost[i].slot == (int)slot && !memcmp(d->lost[i].fid, fid, FRONT_ID_LEN)) {
            lost_t x = d->lost[i];
            d->lost[i] = d->lost[--d->nlost];
            report_lent(d, &x, action);
            return;
        }
}

/* Reports still waiting for a front that left, or past their time. */
static void report_overdue(dispatch_t *d, const void *gone_fid)
{
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < d->nlost;) {
        lost_t *x = &d->lost[i];
        if (now >= x->due_ms || (gone_fid && !memcmp(x->fid, gone_fid, FRONT_ID_LEN))) {
            lost_t c = *x;
            d->lost[i] = d->lost[--d->nlost];
            report_lent(d, &c, guess_action(&c));
        } else {
            i++;
        }
    }
}

void dispatch_worker_exited(dispatch_t *d, pid_t pid, int status)
{
    worker_t *w = by_pid(d, pid);
    if (w == NULL)
        return;
    char pidstr[16], how[64];
    snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
    if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(how, sizeof(how), "exit %d", WEXITSTATUS(status));
    int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    int own_fault = !clean && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    if (w->state != W_LENT && w->fd >= 0) {
        /* What it wrote before it exited is read first: the zygote's
         * report can come before the end of the link is read, and a
         * worker mode worker ends after a fatal error with its answer
         * whole. Without this its request was run again (a GET) or
         * answered 502 twice over. */
        w->dying = 1;
        on_worker(d, w, 1);
    }
    job_t *j = w->job;
    if (w->state == W_LENT) {
        lent_exited(d, w, how, clean, own_fault);
    } else if (j && w->state == W_BUSY) {
        /* Mid-request. */
        const char *action;
        d->crashed++;
        if (!w->started && !w->timed_out && j->idempotent && j->retries == 0 && j->fr.n >= 2)
            action = "retried";
        else if (w->started)
            action = "aborted";
        else if (w->timed_out)
            action = "504";
        else
            action = "502";
        vc_log(VC_LOG_ERR, "pool", "worker %d died (%s) running %s (\"%s\"): %s", (int)pid, how, j->what, j->script,
               action);
        vc_bus_publish(d->bus, "php.worker.crashed", VC__SEVERITY__ERROR, "pid", pidstr, "status", how, "request",
                       j->what, "script", j->script, "action", action, NULL);
        if (action[0] == 'r') {
            j->retries++;
            d->retried++;
            enqueue(d, j, 1);
        } else {
            if (w->started) {
                abort_stream(d, &j->fr.f[0], j->req_id);
            } else if (w->timed_out) {
                d->timed_out_504++;
                answer(d, &j->fr.f[0], j->req_id, 504, "Gateway Timeout: the script ran too long", NULL);
            } else {
                d->failed_502++;
                answer(d, &j->fr.f[0], j->req_id, 502, "Bad Gateway: the PHP worker died", NULL);
            }
            job_free(j);
        }
        w->job = NULL;
        if (own_fault)
            note_crash(d);
    } else if (!clean && j && w->state == W_FINISHING) {
        log_ended_after(d, pidstr, how, j->what, j->script, 0);
        finish_job(d, w);
    } else {
        if (j)
            finish_job(d, w);
        if (!clean && w->state != W_FINISHING && w->state != W_RETIRED) {
            d->crashed++;
            vc_log(VC_LOG_ERR, "pool", "worker %d died (%s) while %s", (int)pid, how, wstate_names[w->state]);
            vc_bus_publish(d->bus, "php.worker.crashed", VC__SEVERITY__ERROR, "pid", pidstr, "status", how, "action",
                           "none", NULL);
            if (own_fault)
                note_crash(d);
        } else if (strcmp(d->cfg->php.mode, "fork") != 0) {
            /* A worker at max_requests (its last answer was final) or over
             * the memory ceiling was recycled; others just exited. */
            int recycled = w->recycle || (w->state == W_FINISHING && d->cfg->php.max_requests > 0);
            vc_bus_publish(d->bus, recycled ? "php.worker.recycled" : "php.worker.exited", VC__SEVERITY__INFO, "pid",
                           pidstr, "status", how, NULL);
        }
    }
    /* Remove from the table (order does not matter). */
    if (w->slot >= 0)
        d->slot_used[w->slot] = 0;
    link_close(d, w);
    vc_link_buf_free(&w->in);
    *w = d->w[--d->nw];
    pump(d);
}

int dispatch_wanted(dispatch_t *d)
{
    if (vc_mono_ms() < d->spawn_after_ms)
        return 0;
    long have = 0;
    for (size_t i = 0; i < d->nw; i++)
        have += d->w[i].gen == d->gen;
    long want = (long)d->size.target - have - d->spawning;
    return want > 0 ? (int)want : 0;
}

void dispatch_new_generation(dispatch_t *d, unsigned gen, const vc_config_t *cfg)
{
    if (d->cfg != cfg && gen != UINT_MAX)
        pool_size_init(&d->size, cfg);
    d->gen = gen;
    d->cfg = cfg;
    d->spawning = 0;
    d->run_limit_ms = run_limit(cfg);
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        if (w->gen != gen && (w->state == W_IDLE || w->state == W_STARTING)) {
            w->state = W_RETIRED;
            kill(w->pid, SIGTERM);
        } else if (w->gen != gen) {
            recall(d, w); /* it exits once given back */
        }
    }
    d->lending = strcmp(cfg->php.mode, "fork") != 0;
}

int dispatch_generation_alive(dispatch_t *d, unsigned gen)
{
    int n = 0;
    for (size_t i = 0; i < d->nw; i++)
        n += d->w[i].gen == gen;
    return n;
}

void dispatch_spawn_requested(dispatch_t *d)
{
    d->spawning++;
}

static long pss_kib(pid_t pid, long *uss);

static long rss_kib(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Idle and busy workers, lent ones as their boards say, and requests
 * waiting here and in the fronts. */
static void tally(dispatch_t *d, int *idle, int *busy, size_t *queued)
{
    *idle = *busy = 0;
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        int state = w->state;
        if (state == W_LENT) {
            vc_board_slot_t s;
            lent_state(d, w, &s);
            state = s.state == VC_BOARD_IDLE ? W_IDLE : W_BUSY;
        }
        *idle += state == W_IDLE;
        *busy += state == W_BUSY || state == W_FINISHING;
    }
    vc_board_t *b[FRONTS_MAX];
    size_t nb = fronts_boards(d->fronts, b, FRONTS_MAX);
    *queued = d->qlen;
    for (size_t i = 0; i < nb; i++)
        *queued += b[i]->queued;
}

/* A worker to let go when the pool shrinks: an idle one here, else one
 * lent (asked back; it exits once given back). */
static void retire_one(dispatch_t *d)
{
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].state == W_IDLE && d->w[i].gen == d->gen) {
            d->w[i].state = W_RETIRED;
            kill(d->w[i].pid, SIGTERM);
            return;
        }
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].state == W_LENT && d->w[i].gen == d->gen && !d->w[i].retire) {
            d->w[i].retire = 1;
            recall(d, &d->w[i]);
            return;
        }
}

static void publish_size(dispatch_t *d, const char *why)
{
    char n[24];
    snprintf(n, sizeof(n), "%lld", (long long)d->size.target);
    vc_log(VC_LOG_NOTICE, "pool", "pool size %s to %s", why, n);
    vc_bus_publish(d->bus, "php.pool.scaled", VC__SEVERITY__INFO, "workers", n, "why", why, NULL);
}

/* Sizing and the memory ceiling: one worker's memory is read per second
 * at most, so the cost stays flat however big the pool. */
static void pool_tick(dispatch_t *d, uint64_t now)
{
    int idle, busy;
    size_t queued;
    tally(d, &idle, &busy, &queued);
    long sample = 0;
    if (d->nw > 0 && now - d->last_sample_ms >= 1000) {
        d->last_sample_ms = now;
        worker_t *w = &d->w[d->sample_at++ % d->nw];
        if (d->size.automatic)
            sample = pss_kib(w->pid, NULL);
        if (d->cfg->php.max_memory > 0 && !w->recycle && rss_kib(w->pid) * 1024 > d->cfg->php.max_memory) {
            vc_log(VC_LOG_NOTICE, "pool", "worker %d is above php.max_memory: recycling it", (int)w->pid);
            w->recycle = 1;
            if (w->state == W_IDLE)
                make_idle(d, w);
            else
                recall(d, w);
        }
    }
    int change = pool_size_tick(&d->size, idle, busy, queued, sample, now);
    if (change > 0) {
        publish_size(d, "grown");
    } else if (change < 0) {
        retire_one(d);
        publish_size(d, "shrunk");
    }
}

void dispatch_scale(dispatch_t *d, int64_t n)
{
    pool_size_set(&d->size, n);
    /* Too many: idle ones of the current generation go first. */
    long have = 0;
    for (size_t i = 0; i < d->nw; i++)
        have += d->w[i].gen == d->gen && d->w[i].state != W_RETIRED && !d->w[i].retire;
    for (; have > n; have--)
        retire_one(d);
    publish_size(d, "set");
}

void dispatch_on_tick(dispatch_t *d)
{
    uint64_t now = vc_mono_ms();
    report_overdue(d, NULL);
    /* The queue is in arrival order: only its head can be the oldest. */
    while (d->qhead && now - d->qhead->enq_ms >= (uint64_t)d->cfg->php.queue_timeout_ms) {
        job_t *j = dequeue(d);
        d->timed_out_504++;
        vc_log(VC_LOG_WARN, "dispatch", "%s waited %llu ms for a worker: 504", j->what,
               (unsigned long long)(now - j->enq_ms));
        answer(d, &j->fr.f[0], j->req_id, 504, "Gateway Timeout: no PHP worker became free", NULL);
        job_free(j);
    }
    pool_tick(d, now);
    if (d->run_limit_ms == 0)
        return;
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        if (w->state == W_LENT && !w->timed_out) {
            vc_board_slot_t *bs = board_slot(d, w), s;
            if (bs == NULL)
                continue;
            vc_board_read(bs, &s);
            /* The front may have started it after `now` was read: a
             * since_ms past now is a request just begun, not one that
             * wrapped round to an age of 2^64 ms. */
            /* Finishing (after fastcgi_finish_request()) is still its
             * request: the same limit, counted from the request's start. */
            if ((s.state != VC_BOARD_BUSY && s.state != VC_BOARD_FINISHING) || s.since_ms >= now ||
                now - s.since_ms < d->run_limit_ms)
                continue;
            /* Said on the board first: its front answers 504, not 502. */
            __atomic_store_n(&bs->timed_out, 1, __ATOMIC_RELEASE);
            w->timed_out = 1;
            d->killed++;
            vc_log(VC_LOG_ERR, "pool", "worker %d ran \"%s\" (%s) for %llu ms: killing it", (int)w->pid, s.script,
                   s.what, (unsigned long long)(now - s.since_ms));
            kill(w->pid, SIGKILL);
        }
        if ((w->state == W_BUSY || w->state == W_FINISHING) && !w->timed_out && now - w->since_ms >= d->run_limit_ms) {
            w->timed_out = 1;
            d->killed++;
            vc_log(VC_LOG_ERR, "pool", "worker %d ran \"%s\" (%s) for %llu ms: killing it", (int)w->pid,
                   w->job ? w->job->what : "", w->job ? w->job->script : "", (unsigned long long)(now - w->since_ms));
            kill(w->pid, SIGKILL);
        }
    }
}

long dispatch_next_timeout(dispatch_t *d)
{
    long t = 1000;
    uint64_t now = vc_mono_ms();
    if (d->qhead) {
        uint64_t due = d->qhead->enq_ms + (uint64_t)d->cfg->php.queue_timeout_ms;
        long left = due > now ? (long)(due - now) : 0;
        if (left < t)
            t = left;
    }
    if (d->spawn_after_ms > now && (long)(d->spawn_after_ms - now) < t)
        t = (long)(d->spawn_after_ms - now);
    return t;
}

/* From /proc/PID/smaps_rollup, in KiB (0 if gone): the proportional set
 * size (its share of every page it maps), and with uss set, the unique
 * set size (its private pages: what one more worker costs). */
static long pss_kib(pid_t pid, long *uss)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    long pss = 0, kib;
    if (uss)
        *uss = 0;
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "Pss: %ld kB", &kib) == 1)
            pss = kib;
        else if (uss &&
                 (sscanf(line, "Private_Clean: %ld kB", &kib) == 1 || sscanf(line, "Private_Dirty: %ld kB", &kib) == 1))
            *uss += kib;
    }
    fclose(f);
    return pss;
}

void dispatch_status(dispatch_t *d, Vc__Reply *reply)
{
    int idle, busy;
    size_t queued;
    tally(d, &idle, &busy, &queued);
    /* What the fronts counted for the workers lent to them. */
    uint64_t accepted = d->accepted, completed = d->completed, r503 = d->rejected_503, r504 = d->timed_out_504,
             r502 = d->failed_502, retried = d->retried;
    vc_board_t *b[FRONTS_MAX];
    size_t nb = fronts_boards(d->fronts, b, FRONTS_MAX);
    for (size_t i = 0; i < nb; i++) {
        accepted += b[i]->accepted;
        completed += b[i]->completed;
        r503 += b[i]->rejected_503;
        r504 += b[i]->timed_out_504;
        r502 += b[i]->failed_502;
        retried += b[i]->retried;
    }
    vc_reply_field(reply, "health", "%s", d->nw > 0 ? "ok" : "no workers");
    vc_reply_field(reply, "mode", "%s", d->cfg->php.mode);
    vc_reply_field(reply, "workers", "%zu", d->nw);
    vc_reply_field(reply, "workers_wanted", "%lld", (long long)d->size.target);
    vc_reply_field(reply, "workers_min", "%lld", (long long)d->size.min);
    vc_reply_field(reply, "workers_max", "%lld", (long long)d->size.max);
    vc_reply_field(reply, "idle", "%d", idle);
    vc_reply_field(reply, "busy", "%d", busy);
    vc_reply_field(reply, "queued", "%zu", queued);
    vc_reply_field(reply, "accepted", "%llu", (unsigned long long)accepted);
    vc_reply_field(reply, "completed", "%llu", (unsigned long long)completed);
    vc_reply_field(reply, "rejected_503", "%llu", (unsigned long long)r503);
    vc_reply_field(reply, "timeout_504", "%llu", (unsigned long long)r504);
    vc_reply_field(reply, "failed_502", "%llu", (unsigned long long)r502);
    vc_reply_field(reply, "retried", "%llu", (unsigned long long)retried);
    vc_reply_field(reply, "crashed", "%llu", (unsigned long long)d->crashed);
    vc_reply_field(reply, "killed", "%llu", (unsigned long long)d->killed);
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        Vc__Record *rec = vc_reply_record(reply);
        vc_record_field(rec, "pid", "%d", (int)w->pid);
        vc_board_slot_t s;
        memset(&s, 0, sizeof(s));
        if (w->state == W_LENT)
            lent_state(d, w, &s);
        int lent_busy = w->state == W_LENT && s.state != VC_BOARD_IDLE;
        vc_record_field(rec, "state", "%s",
                        w->state == W_LENT ? board_state_names[s.state <= VC_BOARD_FINISHING ? s.state : 0]
                                           : wstate_names[w->state]);
        vc_record_field(rec, "lent", "%s", w->state == W_LENT ? "yes" : "no");
        vc_record_field(rec, "front", "%d", w->state == W_LENT ? (int)fronts_pid(d->fronts, w->lent_to) : 0);
        vc_record_field(rec, "served", "%llu", (unsigned long long)(w->served + s.served));
        long uss;
        vc_record_field(rec, "pss_kib", "%ld", pss_kib(w->pid, &uss));
        vc_record_field(rec, "uss_kib", "%ld", uss);
        vc_record_field(rec, "uri", "%s", lent_busy ? s.what : w->job ? w->job->what : "");
        /* A lent worker's age is the front's: since its request began, or
         * since it went idle. */
        uint64_t since = w->state == W_LENT && s.since_ms ? s.since_ms : w->since_ms;
        vc_record_field(rec, "age_ms", "%llu", (unsigned long long)(now > since ? now - since : 0));
    }
}

int dispatch_alive(dispatch_t *d)
{
    return (int)d->nw;
}

void dispatch_drain(dispatch_t *d)
{
    /* A generation no zygote has: idle workers go now, busy ones when they
     * finish, and nothing new is forked. */
    dispatch_new_generation(d, UINT_MAX, d->cfg);
}

void dispatch_kill_workers(dispatch_t *d)
{
    for (size_t i = 0; i < d->nw; i++)
        kill(d->w[i].pid, SIGKILL);
}

/* max_execution_time from the configured directives (php.ini's own value
 * is not known here; 30 s is PHP's default). */
static uint64_t run_limit(const vc_config_t *cfg)
{
    long met = 30;
    for (size_t i = 0; i < cfg->php.nini; i++)
        if (!strncmp(cfg->php.ini[i], "max_execution_time=", 19))
            met = atol(cfg->php.ini[i] + 19);
    return met > 0 ? (uint64_t)met * 1000 + (uint64_t)cfg->php.kill_grace_ms : 0;
}

dispatch_t *dispatch_new(const vc_config_t *cfg, fronts_t *fronts, vc_bus_t *bus)
{
    dispatch_t *d = vc_calloc(1, sizeof(*d));
    d->cfg = cfg;
    d->fronts = fronts;
    d->bus = bus;
    d->run_limit_ms = run_limit(cfg);
    d->lending = strcmp(cfg->php.mode, "fork") != 0;
    pool_size_init(&d->size, cfg);
    fronts_on_change(fronts, on_front_change, d);
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (d->epfd < 0) {
        vc_log(VC_LOG_CRIT, "dispatch", "epoll_create1: %s", strerror(errno));
        free(d);
        return NULL;
    }
    return d;
}

void dispatch_destroy(dispatch_t **pd)
{
    dispatch_t *d = *pd;
    if (d == NULL)
        return;
    for (job_t *j; (j = dequeue(d)) != NULL;)
        job_free(j);
    for (size_t i = 0; i < d->nw; i++) {
        if (d->w[i].job)
            job_free(d->w[i].job);
        link_close(d, &d->w[i]);
        vc_link_buf_free(&d->w[i].in);
    }
    free(d->w);
    free(d->lost);
    close(d->epfd);
    free(d);
    *pd = NULL;
}
