#include "worker_link.h"
#include "client_conn.h"
#include "worker_clock.h"
#include "release_pin.h"
#include "vc_log.h"
#include "vc_shared_page.h"
#include "vc_util.h"
#include "vc_wire.h"
#include "vc_link.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct lent_client {
    client_conn_t *c;
    uint32_t id; /* the front's (vc_wire.h), little-endian as sent */
} lent_client_t;

struct worker_conn {
    const vc_config_t *cfg;
    int fd;                 /* the link to the broker (libcommon/vc_link.h) */
    vc_link_buf_t in;       /* the current request's message, then what follows */
    vc_link_buf_t busy_in;  /* what arrives while busy: cancels, and a request held behind (pipelined) */
    vc_link_buf_t behind;   /* whole messages out of busy_in, kept in order for worker_next */
    uint64_t served, limit; /* limit 0: no limit */
    vc_frames_t fr;         /* the request's frames, pointing into in */
    Vc__FrontMessage *fm;
    struct iovec front_id; /* inside in */
    uint64_t req_id;
    int done_sent; /* a "D" went out: no separate READY */
    int last;      /* the worker exits after this request: never "D" */
    pid_t pid;     /* ours, for each answer's head (getpid() is a system call) */
    char rid[32];
    /* Connections the front lent us (client_conn.h), served in turn. */
    lent_client_t *clients;
    int nclients, max_clients; /* max: php.lend_connections */
    int next_client;           /* where the next turn starts: each gets one */
    int client_back;           /* the front wants them back */
    int on_client;             /* the current request came on clients[cur] */
    int cur;
    struct pollfd *polls;   /* the clients' and the link's, max_clients + 1 */
    vc_lent_quiet_t *quiet; /* the front's page for them (vc_lent_quiet.h) */
};

/* SIGTERM is how the pool tells an idle worker to go (retired, recycled,
 * the suite stopping). The handler shuts the link's reading side: a
 * worker waiting in poll() wakes at once (no race between a test of the
 * flag and the wait), and one busy with a request finishes it and finds
 * no next one, so its script ends as a script does (worker mode runs the
 * boot's shutdown functions, worker_mode.c). The signal is never blocked:
 * the commands scripts run inherit a blocked mask, even through
 * posix_spawn(). */
static volatile sig_atomic_t told_to_stop;
static int link_for_signal = -1;

static void on_sigterm(int sig)
{
    (void)sig;
    told_to_stop = 1;
    if (link_for_signal >= 0)
        shutdown(link_for_signal, SHUT_RD);
}

static void stop_on_sigterm(int fd)
{
    link_for_signal = fd;
    struct sigaction sa = {.sa_handler = on_sigterm};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

/* A process the script forked (pcntl_fork(), FFI) returns from the
 * script into this loop with a copy of the link: read, it would take
 * requests meant for its parent; written, it would answer them. It is
 * not the worker the pool started: at its first touch of the link it
 * says so and exits. Set in the child by fork() itself (pthread_atfork),
 * so the check costs no system call per message. */
static volatile int forked_from_worker;

static void on_fork_child(void)
{
    forked_from_worker = 1;
    /* Our SIGTERM handler would shut the link, which is the parent's too. */
    signal(SIGTERM, SIG_DFL);
}

static void leave_if_forked(const char *doing)
{
    if (!forked_from_worker)
        return;
    vc_log(VC_LOG_WARN, "worker", "pid %d, forked by a script, reached the worker's link (%s): it exits", (int)getpid(),
           doing);
    _exit(0);
}

/* The link is gone or broken: the broker is, or will be. Nothing to save. */
static void __attribute__((noreturn)) link_lost(int err)
{
    vc_log(VC_LOG_WARN, "worker", "lost the link to the broker: %s", strerror(-err));
    _exit(1);
}

/* ["C"]: the client of the request running left. ["C"][id]: the request
 * named, held behind the running one (a front pipelines a request while
 * its queue is not empty): it does not run if it has not begun. */
static int is_cancel(const struct iovec *f, int n)
{
    return f[0].iov_len == 1 && *(const char *)f[0].iov_base == WIRE_CANCEL && (n == 1 || n == 2);
}

static int cancel_names(const struct iovec *f, int n, uint64_t id)
{
    uint64_t named;
    if (n != 2 || f[1].iov_len != sizeof(named))
        return 0;
    memcpy(&named, f[1].iov_base, sizeof(named));
    return le64toh(named) == id;
}

/* While busy: a cancel of this request says its client left; anything
 * else (a request held behind, a cancel naming it) is kept for
 * worker_next, in order. */
static void read_cancels(worker_conn_t *w, vc_request_t *r)
{
    static struct iovec f[VC_LINK_MAX_FRAMES];
    while (vc_link_fill(w->fd, &w->busy_in, 1) > 0) {
        for (;;) {
            size_t at = w->busy_in.off;
            int n = vc_link_parse(&w->busy_in, f, VC_LINK_MAX_FRAMES);
            if (n <= 0)
                break; /* not whole yet; or malformed, which worker_next says */
            if (is_cancel(f, n) && (n == 1 || cancel_names(f, n, w->req_id)))
                r->aborted = 1;
            else
                vc_link_put(&w->behind, w->busy_in.p + at, w->busy_in.off - at);
        }
        vc_link_compact(&w->busy_in);
    }
}

/* A cancel naming id among the whole messages after the one just parsed
 * from w->in (a cancel follows its request). Nothing is consumed. */
static int cancelled_behind(worker_conn_t *w, uint64_t id)
{
    static struct iovec f[VC_LINK_MAX_FRAMES];
    size_t off = w->in.off;
    int n, found = 0;
    while (!found && (n = vc_link_parse(&w->in, f, VC_LINK_MAX_FRAMES)) > 0)
        found = is_cancel(f, n) && cancel_names(f, n, id);
    w->in.off = off;
    return found;
}

/* Sends [flag][front-id][BackMessage][body]. The body buffer is emptied
 * for the request's next writes. */
static void on_emit(vc_request_t *r, int final)
{
    worker_conn_t *w = r->transport;
    leave_if_forked("writing an answer");
    char flag = !final ? WIRE_PART : r->ending && !w->last ? WIRE_DONE : WIRE_FINAL;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    Vc__StreamChunk chunk = VC__STREAM_CHUNK__INIT;
    Vc__ResponseHead fallback = VC__RESPONSE_HEAD__INIT;
    if (!r->head_sent) {
        Vc__ResponseHead *resp = r->resp;
        if (resp == NULL) {
            /* PHP never produced headers (it could not start). */
            fallback.id = w->req_id;
            fallback.status = 500;
            fallback.error = "PHP could not start the request";
            fallback.reason = "Internal Server Error";
            resp = &fallback;
        }
        resp->final = final;
        resp->worker_pid = (uint32_t)w->pid;
        bm.kind_case = VC__BACK_MESSAGE__KIND_HEAD;
        bm.head = resp;
        r->head_sent = 1;
    } else {
        chunk.id = w->req_id;
        chunk.final = final;
        bm.kind_case = VC__BACK_MESSAGE__KIND_CHUNK;
        bm.chunk = &chunk;
    }
    size_t plen = protobuf_c_message_get_packed_size(&bm.base);
    uint8_t stack[512];
    uint8_t *packed = plen <= sizeof(stack) ? stack : vc_malloc(plen);
    protobuf_c_message_pack(&bm.base, packed);
    struct iovec f[4] = {{&flag, 1}, w->front_id, {packed, plen}, {r->out, r->out_len}};
    int rc = vc_link_send(w->fd, f, r->out_len > 0 ? 4 : 3);
    if (packed != stack)
        free(packed);
    if (rc < 0)
        link_lost(rc);
    r->out_len = 0;
    if (flag == WIRE_DONE)
        w->done_sent = 1;
    if (!final)
        read_cancels(w, r);
}

/* vc_publish(): [PART][front-id][BackMessage publish], at once. The
 * broker relays it, or the front reads it if it has the worker lent. */
static int on_publish(vc_request_t *r, Vc__Publish *pub)
{
    worker_conn_t *w = r->transport;
    leave_if_forked("publishing");
    char flag = WIRE_PART;
    pub->id = w->req_id;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_PUBLISH;
    bm.publish = pub;
    size_t plen = protobuf_c_message_get_packed_size(&bm.base);
    uint8_t *packed = vc_malloc(plen);
    protobuf_c_message_pack(&bm.base, packed);
    struct iovec f[3] = {{&flag, 1}, w->front_id, {packed, plen}};
    int rc = vc_link_send(w->fd, f, 3);
    free(packed);
    if (rc < 0)
        link_lost(rc);
    return 0;
}

/* A worker is not dumpable (its zygote made itself so before forking it):
 * what its scripts run, as the same user, can then neither ptrace it, nor
 * take its descriptors with pidfd_getfd() (a front's lent connections),
 * nor read /proc/PID/mem (docs/SECURITY.md). The broker, of the same user
 * too, is refused its /proc/PID/smaps_rollup as well, so the worker opens
 * its own (a process may always read itself) and sends it with its first
 * READY; the broker reads its memory figures from that (status.c). */
static int say_first_ready(int fd)
{
    int smaps = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
    if (smaps < 0)
        return vc_link_send_byte(fd, WIRE_READY);
    int rc = vc_link_send_byte_with_fd(fd, WIRE_READY, smaps);
    close(smaps);
    return rc;
}

worker_conn_t *worker_connect(const vc_config_t *cfg, int fd)
{
    worker_conn_t *w = vc_calloc(1, sizeof(*w));
    w->cfg = cfg;
    w->fd = fd;
    w->pid = getpid();
    /* A lent connection comes as a descriptor; recvmsg() only for a
     * pool that lends them. */
    w->in.take_fds = cfg->php.lend_connections > 0;
    w->max_clients = (int)cfg->php.lend_connections;
    if (w->max_clients > 0) {
        w->clients = vc_calloc((size_t)w->max_clients, sizeof(*w->clients));
        w->polls = vc_calloc((size_t)w->max_clients + 1, sizeof(*w->polls));
    }
    /* Fork mode: one request per process. */
    w->limit = !strcmp(cfg->php.mode, "fork") ? 1 : (uint64_t)cfg->php.max_requests;
    stop_on_sigterm(fd);
    pthread_atfork(NULL, NULL, on_fork_child);
    /* A process group of its own: what its scripts start (a command left
     * running with "&", a forked child) is in it, and the zygote ends
     * the group when the worker ends (zygote.c). */
    setpgid(0, 0);
    int rc = say_first_ready(fd);
    if (rc < 0)
        link_lost(rc);
    return w;
}

/* The next whole message in w->in, reading as needed. Returns its frame
 * count (frames in f), or -1 when the broker is gone. */
static int next_message(worker_conn_t *w, struct iovec *f, size_t max)
{
    leave_if_forked("waiting for a request");
    for (;;) {
        int n = vc_link_parse(&w->in, f, max);
        if (n > 0)
            return n;
        if (n < 0) {
            vc_log(VC_LOG_ERR, "worker", "a malformed message from the broker: leaving");
            return -1;
        }
        ssize_t got = vc_link_fill(w->fd, &w->in, 1);
        if (got == -EAGAIN || got == -EWOULDBLOCK || got == -EINTR) {
            /* Wait in poll(), not in a blocking recv(): the link's wait
             * queue is woken for room to write each time the other end
             * reads what this worker sent, and only poll() sleeps through
             * the wake-ups it did not ask for. A recv() woke for every
             * answer the broker or a front read: a second wake-up and
             * context switch per request, paid by both processes. */
            struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
            if (told_to_stop)
                return -1;
            if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                link_lost(-errno);
            continue;
        }
        if (got == 0)
            return -1; /* the broker closed the link: we are done */
        if (got < 0)
            link_lost((int)got);
    }
}

static int is_flag(const struct iovec *f, int n, char flag)
{
    return n >= 1 && f[0].iov_len == 1 && *(const char *)f[0].iov_base == flag;
}

/* ["A"][id][records]: client i's access-log batch, if one is due (all:
 * whatever waits). */
static void client_log(worker_conn_t *w, int i, int all)
{
    size_t len = 0;
    const char *records = client_conn_log(w->clients[i].c, all, &len);
    if (records == NULL)
        return;
    char flag = WIRE_CONN_LOG;
    struct iovec f[3] = {{&flag, 1}, {&w->clients[i].id, 4}, {(void *)records, len}};
    int rc = vc_link_send(w->fd, f, 3);
    if (rc < 0)
        link_lost(rc);
}

/* Client i is done with: ["B"][id][served][last][bytes] back to the
 * front, or ["X"][id][served][last] once closed. The worker is ready once
 * it holds none, unless last says it is about to exit. */
static void client_ends(worker_conn_t *w, int i, int back)
{
    client_log(w, i, 1);
    lent_client_t *lc = &w->clients[i];
    char flag = back ? WIRE_CONN_BACK : WIRE_CONN_CLOSED;
    uint64_t served = htole64(client_conn_served(lc->c));
    uint8_t last = w->last || told_to_stop;
    size_t len = 0;
    const char *bytes = client_conn_unread(lc->c, &len);
    struct iovec f[5] = {{&flag, 1}, {&lc->id, 4}, {&served, sizeof(served)}, {&last, 1}, {(void *)bytes, len}};
    int rc = vc_link_send(w->fd, f, back && len > 0 ? 5 : 4);
    client_conn_free(&lc->c);
    *lc = w->clients[--w->nclients]; /* the order of turns does not matter */
    if (w->nclients == 0)
        w->client_back = 0;
    if (rc < 0)
        link_lost(rc);
}

static void clients_free(worker_conn_t *w)
{
    while (w->nclients > 0)
        client_conn_free(&w->clients[--w->nclients].c);
    w->client_back = 0;
}

/* The page of quiet words, if "L" brought it: a front sends its own with
 * the first connection it lends each time it has the worker lent, and
 * that replaces any other. */
static void client_quiet_page(worker_conn_t *w, const struct iovec *f, int n)
{
    if (n < 3 || f[2].iov_len != 13 || !(*(const uint8_t *)f[2].iov_base & WIRE_LEND_QUIET_PAGE))
        return;
    vc_shared_page_unmap((void **)&w->quiet, sizeof(*w->quiet));
    w->quiet = vc_shared_page_map(vc_link_take_fd(&w->in), sizeof(vc_lent_quiet_t));
    for (int i = 0; i < w->nclients; i++)
        client_conn_tell_quiet(w->clients[i].c, w->quiet, le32toh(w->clients[i].id));
}

/* ["L"][FrontMessage][terms][bytes], its descriptor in w->in (and the
 * quiet words' after it, the first time). */
static void client_begins(worker_conn_t *w, const struct iovec *f, int n)
{
    int fd = vc_link_take_fd(&w->in);
    client_quiet_page(w, f, n);
    Vc__FrontMessage *lease = n >= 3 ? vc__front_message__unpack(NULL, f[1].iov_len, f[1].iov_base) : NULL;
    uint32_t id = 0;
    if (n >= 3 && f[2].iov_len == 13)
        memcpy(&id, (const uint8_t *)f[2].iov_base + 9, sizeof(id));
    if (fd < 0 || lease == NULL || lease->kind_case != VC__FRONT_MESSAGE__KIND_REQUEST || f[2].iov_len != 13 ||
        w->nclients >= w->max_clients) {
        vc_log(VC_LOG_ERR, "worker", "a malformed lent connection: closed");
        if (fd >= 0)
            close(fd);
        if (lease)
            vc__front_message__free_unpacked(lease, NULL);
        /* The front counts on an end: nothing was served. */
        char flag = WIRE_CONN_CLOSED;
        uint64_t none = 0;
        uint8_t last = 0;
        struct iovec e[4] = {{&flag, 1}, {&id, 4}, {&none, sizeof(none)}, {&last, 1}};
        int rc = vc_link_send(w->fd, e, 4);
        if (rc < 0)
            link_lost(rc);
        return;
    }
    /* Once, on the lease every request shares (it frees what it replaces). */
    release_pins_apply(lease->request);
    const uint8_t *terms = f[2].iov_base;
    uint64_t max_body;
    memcpy(&max_body, terms + 1, sizeof(max_body));
    client_conn_t *c = client_conn_open(fd, lease, terms[0], n >= 4 ? f[3].iov_base : "", n >= 4 ? f[3].iov_len : 0,
                                        (size_t)le64toh(max_body));
    client_conn_tell_quiet(c, w->quiet, le32toh(id));
    w->clients[w->nclients++] = (lent_client_t){c, id};
}

/* What came on the link while the worker served its lent connections:
 * "H", the front wants them back; "L", another; a request, the front that
 * lent them is gone (the broker, which has the link again, sends it): the
 * connections are closed without a word to anyone, and the message waits
 * in w->in. The link closed: told to stop (SIGTERM), or the broker is
 * gone. */
static int client_link_news(worker_conn_t *w)
{
    static struct iovec f[VC_LINK_MAX_FRAMES];
    ssize_t got = vc_link_fill(w->fd, &w->in, 1);
    if (got == 0 || (got < 0 && got != -EAGAIN && got != -EWOULDBLOCK && got != -EINTR)) {
        w->client_back = 1;
        return told_to_stop ? 0 : -1;
    }
    for (;;) {
        size_t at = w->in.off;
        int n = vc_link_parse(&w->in, f, VC_LINK_MAX_FRAMES);
        if (n <= 0)
            return 0;
        if (is_flag(f, n, WIRE_WANT_CONN)) {
            w->client_back = 1;
            continue;
        }
        if (is_flag(f, n, WIRE_LEND_CONN)) {
            client_begins(w, f, n);
            continue;
        }
        w->in.off = at;
        clients_free(w);
        return 0;
    }
}

/* Serves the lent connections in turn until one has a request (1, its
 * index in w->cur) or none is left (0). */
static int client_next(worker_conn_t *w, vc_request_t *r)
{
    while (w->nclients > 0) {
        int wait = -1;
        /* A turn each, from the one after the last served: a busy
         * connection does not starve the others. */
        for (int k = 0; k < w->nclients;) {
            int i = (w->next_client + k) % w->nclients, ms = -1;
            switch (client_conn_step(w->clients[i].c, w->client_back || told_to_stop, r, &ms)) {
            case CLIENT_REQUEST:
                w->cur = i;
                w->next_client = i + 1;
                return 1;
            case CLIENT_LOG: client_log(w, i, 1); continue;
            case CLIENT_HAND_BACK: client_ends(w, i, 1); continue;
            case CLIENT_CLOSED: client_ends(w, i, 0); continue;
            case CLIENT_WAIT: break;
            }
            if (wait < 0 || ms < wait)
                wait = ms;
            k++;
        }
        if (w->nclients == 0)
            break;
        for (int i = 0; i < w->nclients; i++)
            w->polls[i] = (struct pollfd){.fd = client_conn_fd(w->clients[i].c), .events = POLLIN};
        /* The link too, unless they are going back anyway: once it has
         * ended (SIGTERM), it would be readable for ever. */
        w->polls[w->nclients] = (struct pollfd){.fd = w->fd, .events = POLLIN};
        int watch_link = !w->client_back;
        int ready = poll(w->polls, (nfds_t)(w->nclients + watch_link), wait);
        if (ready > 0 && watch_link && w->polls[w->nclients].revents && client_link_news(w) < 0)
            clients_free(w); /* nobody to hand them to */
    }
    return 0;
}

/* r came on the lent connection: what worker_next sets for any request. */
static void client_request(worker_conn_t *w, vc_request_t *r)
{
    w->on_client = 1;
    worker_clock_begin(); /* the pool's wall-clock limit counts from here */
    w->last = w->limit > 0 && w->served + 1 >= w->limit;
    snprintf(w->rid, sizeof(w->rid), "c%llx", (unsigned long long)(w->served + 1));
    vc_log_set_context(w->rid);
}

int worker_next(worker_conn_t *w, vc_request_t *r)
{
    if (client_next(w, r)) {
        client_request(w, r);
        return 0;
    }

    /* What came while the last request ran comes first, in order. */
    vc_link_compact(&w->in);
    if (w->behind.len > w->behind.off)
        vc_link_put(&w->in, w->behind.p + w->behind.off, w->behind.len - w->behind.off);
    vc_link_reset(&w->behind);
    if (w->busy_in.len > w->busy_in.off) {
        vc_link_put(&w->in, w->busy_in.p + w->busy_in.off, w->busy_in.len - w->busy_in.off);
        w->busy_in.len = w->busy_in.off = 0;
    }
    /* A request already here was held behind the last one: what the front
     * sent since (a cancel naming it) is read before it begins, without
     * waiting. Before any frame points into the buffer, which this may
     * move. */
    if (w->in.len > w->in.off)
        vc_link_fill(w->fd, &w->in, 1);
    static struct iovec f[VC_LINK_MAX_FRAMES];
    int n;
    for (;;) {
        n = next_message(w, f, VC_LINK_MAX_FRAMES);
        if (n < 0)
            return -1;
        if (is_cancel(f, n) || is_flag(f, n, WIRE_WANT_CONN))
            continue; /* for a request already finished, or skipped; for a connection already back */
        if (is_flag(f, n, WIRE_LEND_CONN)) {
            client_begins(w, f, n);
            if (client_next(w, r)) {
                client_request(w, r);
                return 0;
            }
            continue;
        }
        w->fm = n >= 2 ? vc__front_message__unpack(NULL, f[1].iov_len, f[1].iov_base) : NULL;
        int skip =
            w->fm && w->fm->kind_case == VC__FRONT_MESSAGE__KIND_REQUEST && cancelled_behind(w, w->fm->request->id);
        if (skip || w->fm == NULL || w->fm->kind_case != VC__FRONT_MESSAGE__KIND_REQUEST) {
            if (!skip)
                vc_log(VC_LOG_WARN, "worker", "dropped a malformed request of %d frames", n);
            if (w->fm)
                vc__front_message__free_unpacked(w->fm, NULL);
            w->fm = NULL;
            if (vc_link_send_byte(w->fd, WIRE_READY) < 0)
                return -1;
            continue;
        }
        break;
    }
    /* The frames stay in w->in until worker_done(): the body is read from
     * there without a copy. */
    vc_frames_close(&w->fr);
    vc_frames_borrow(&w->fr, f, (size_t)n);
    w->front_id = f[0];
    w->req_id = w->fm->request->id;
    w->done_sent = 0;
    w->on_client = 0;
    w->last = w->limit > 0 && w->served + 1 >= w->limit;
    memset(r, 0, sizeof(*r));
    release_pins_apply(w->fm->request);
    r->head = w->fm->request;
    r->body = w->fr.f + 2;
    r->nbody = w->fr.n - 2;
    r->emit = on_emit;
    r->publish = on_publish;
    r->transport = w;
    snprintf(w->rid, sizeof(w->rid), "r%llx", (unsigned long long)w->req_id);
    vc_log_set_context(w->rid);
    return 0;
}

/* The request's answer ends (with the message that says so, if PHP's
 * did not), and what it held is freed. */
static void end_answer(vc_request_t *r)
{
    if (!r->final_sent) {
        r->ending = 1;
        r->emit(r, 1);
        r->final_sent = 1;
    }
    vc_log_set_context(NULL);
    free(r->out);
    r->out = NULL;
    if (r->resp)
        vc__response_head__free_unpacked(r->resp, NULL);
    r->resp = NULL;
}

/* worker_done for a request of the lent connection: the front knows
 * nothing of it until the connection ends. */
static int client_done(worker_conn_t *w, vc_request_t *r)
{
    end_answer(r);
    worker_clock_end();
    w->served++;
    w->on_client = 0;
    if (!client_conn_done(w->clients[w->cur].c, r))
        client_ends(w, w->cur, 0);
    else
        client_log(w, w->cur, 0);
    if (w->last) /* before the worker exits */
        while (w->nclients > 0)
            client_ends(w, 0, 1);
    return !w->last;
}

int worker_done(worker_conn_t *w, vc_request_t *r)
{
    if (w->on_client)
        return client_done(w, r);
    end_answer(r);
    vc__front_message__free_unpacked(w->fm, NULL);
    w->fm = NULL;
    vc_frames_close(&w->fr);
    w->served++;
    if (w->last) {
        vc_log(VC_LOG_DEBUG, "worker", "exiting after %llu requests", (unsigned long long)w->served);
        return 0;
    }
    if (!w->done_sent && vc_link_send_byte(w->fd, WIRE_READY) < 0)
        return 0;
    return 1;
}

void worker_set_last(worker_conn_t *w)
{
    w->last = 1;
}

void worker_close(worker_conn_t **pw)
{
    worker_conn_t *w = *pw;
    if (w == NULL)
        return;
    while (w->nclients > 0)
        client_ends(w, 0, 1);
    vc_frames_fini(&w->fr);
    vc_link_buf_free(&w->in);
    vc_link_buf_free(&w->busy_in);
    vc_link_buf_free(&w->behind);
    free(w->clients);
    free(w->polls);
    vc_shared_page_unmap((void **)&w->quiet, sizeof(*w->quiet));
    close(w->fd);
    free(w);
    *pw = NULL;
}

void worker_main(const vc_config_t *cfg, int fd)
{
    worker_conn_t *w = worker_connect(cfg, fd);
    vc_request_t r;
    while (worker_next(w, &r) == 0) {
        vc_sapi_run(&r);
        if (!worker_done(w, &r))
            break;
    }
    worker_close(&w);
    _exit(0);
}
