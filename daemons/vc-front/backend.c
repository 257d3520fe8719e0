#include "backend.h"
#include "bans.h"
#include "vc_log.h"
#include "vc_msg.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define NBUCKETS 4096

/* One request waiting on PHP. A shared chunk linked to the request's pool:
 * when h2o frees the request, for any reason, on_dispose runs. */
typedef struct preq {
    h2o_generator_t super;
    backend_t *be;
    h2o_req_t *req; /* NULL once disposed */
    uint64_t id;
    struct preq *next;  /* hash chain */
    int started;        /* h2o_start_response called */
    int sending;        /* an h2o_send waits for proceed */
    int final_seen;     /* the last message arrived */
    int aborted;        /* the worker died mid-answer */
    conn_state_t *conn; /* the client connection's budgets; a reference */
    uint64_t sent_ms;   /* when it left for PHP */
    int given_up;       /* answered by us (504, 502): PHP's answer is dropped */
    int bodiless;       /* 204 or 304: PHP's output is dropped */
    vc_frames_t queue;  /* body frames not yet handed to h2o */
    vc_frames_t inflight;
} preq_t;

struct backend {
    front_t *f;
    void *sock;
    h2o_socket_t *watch;
    void *monitor; /* the DEALER's disconnect events */
    h2o_socket_t *monitor_watch;
    h2o_timeout_entry_t drain_entry;
    uint64_t next_id;
    preq_t *buckets[NBUCKETS];
    size_t inflight;
    vc_frames_t fr;
};

static preq_t **slot(backend_t *be, uint64_t id)
{
    preq_t **pp = &be->buckets[id % NBUCKETS];
    while (*pp && (*pp)->id != id)
        pp = &(*pp)->next;
    return pp;
}

static void unlink_preq(preq_t *p)
{
    preq_t **pp = slot(p->be, p->id);
    if (*pp == p) {
        *pp = p->next;
        p->be->inflight--;
    }
}

static void schedule_drain(backend_t *be);

/* The request is gone (finished, or the client left). */
/* A connection that has cancelled too many PHP requests before their
 * answers is cut: shutdown() makes h2o see the end of the stream and close
 * it the ordinary way. */
static void charge_reset(conn_state_t *c)
{
    if (c == NULL || ++c->resets < CONN_RESET_BUDGET || c->cut || c->sock == NULL)
        return;
    c->cut = 1;
    c->f->stats.connections_cut++;
    char addr[INET6_ADDRSTRLEN] = "?";
    vc_sockaddr_host((struct sockaddr *)&c->peer, addr, sizeof(addr));
    vc_log(VC_LOG_WARN, "limits", "closing a connection from %s that cancelled %u PHP requests before their answers",
           addr, c->resets);
    shutdown(c->fd, SHUT_RDWR);
    uint64_t ban =
        bans_note_cut(c->f->bans, (struct sockaddr *)&c->peer, vc_mono_ms(), (uint64_t)c->f->d.cfg->front.ban_ms);
    if (ban) {
        char secs[32];
        snprintf(secs, sizeof(secs), "%llu", (unsigned long long)(ban / 1000));
        vc_log(VC_LOG_WARN, "limits", "refusing %s for %s s: %d of its connections cut for resets within %d s", addr,
               secs, BAN_CUTS, BAN_WINDOW_MS / 1000);
        vc_bus_publish(c->f->d.bus, "front.client.banned", VC__SEVERITY__WARNING, "address", addr, "seconds", secs,
                       NULL);
        /* Its other connections go too: a fast attacker has many open. */
        for (conn_state_t *o = c->f->conns; o; o = o->next)
            if (!o->cut && o->sock && bans_is_banned(c->f->bans, (struct sockaddr *)&o->peer, vc_mono_ms())) {
                o->cut = 1;
                c->f->stats.connections_cut++;
                shutdown(o->fd, SHUT_RDWR);
            }
    }
}

static void on_dispose(void *arg)
{
    preq_t *p = arg;
    unlink_preq(p);
    if (!p->final_seen)
        charge_reset(p->conn);
    if (p->conn)
        conn_state_release(p->conn);
    if (!p->final_seen) {
        /* Tell the pool, so a queued request never runs. */
        Vc__Cancel c = VC__CANCEL__INIT;
        c.id = p->id;
        Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
        fm.kind_case = VC__FRONT_MESSAGE__KIND_CANCEL;
        fm.cancel = &c;
        vc_send_proto(p->be->sock, &fm.base, ZMQ_DONTWAIT);
        schedule_drain(p->be);
    }
    vc_frames_fini(&p->queue);
    vc_frames_fini(&p->inflight);
    p->req = NULL;
}

static void kick(preq_t *p);

static void on_proceed(h2o_generator_t *g, h2o_req_t *req)
{
    preq_t *p = (preq_t *)g;
    vc_frames_close(&p->inflight);
    p->sending = 0;
    kick(p);
}

static void on_stop(h2o_generator_t *g, h2o_req_t *req)
{
    /* The client went away mid-answer; on_dispose follows. */
}

/* Hands queued body frames to h2o, one h2o_send at a time. */
static void kick(preq_t *p)
{
    if (p->req == NULL || !p->started || p->sending)
        return;
    if (p->queue.n == 0 && !p->final_seen)
        return;
    /* Move the queue into inflight: its memory must live until proceed. */
    vc_frames_t tmp = p->inflight;
    p->inflight = p->queue;
    p->queue = tmp;
    h2o_iovec_t vecs[64];
    size_t n = 0;
    h2o_iovec_t *bufs =
        p->inflight.n <= 64 ? vecs : h2o_mem_alloc_pool(&p->req->pool, sizeof(h2o_iovec_t) * p->inflight.n);
    for (size_t i = 0; i < p->inflight.n; i++)
        bufs[n++] = h2o_iovec_init(zmq_msg_data(&p->inflight.f[i]), zmq_msg_size(&p->inflight.f[i]));
    h2o_send_state_t state = !p->final_seen ? H2O_SEND_STATE_IN_PROGRESS
                             : p->aborted   ? H2O_SEND_STATE_ERROR
                                            : H2O_SEND_STATE_FINAL;
    p->sending = 1;
    /* After a final send h2o may dispose the request (and p) at once. */
    h2o_send(p->req, bufs, n, state);
}

static void append_body(preq_t *p, vc_frames_t *fr, size_t from)
{
    for (size_t i = from; i < fr->n; i++) {
        if (p->queue.n == p->queue.cap) {
            p->queue.cap = p->queue.cap ? p->queue.cap * 2 : 8;
            p->queue.f = vc_realloc(p->queue.f, p->queue.cap * sizeof(zmq_msg_t));
        }
        zmq_msg_init(&p->queue.f[p->queue.n]);
        zmq_msg_move(&p->queue.f[p->queue.n], &fr->f[i]);
        p->queue.n++;
    }
}

/* Headers of PHP's answer the front does not pass on: framing, which h2o
 * writes itself, and Date, which h2o always adds (h2o 2.2 has no way to
 * leave it out, and two Date lines are invalid). nginx sends PHP's Date in
 * place of its own; both say "now" unless the script set another time. */
static int is_dropped(const char *n)
{
    return !strcasecmp(n, "content-length") || !strcasecmp(n, "transfer-encoding") || !strcasecmp(n, "connection") ||
           !strcasecmp(n, "keep-alive") || !strcasecmp(n, "date");
}

static void on_head(backend_t *be, preq_t *p, Vc__ResponseHead *h, vc_frames_t *fr)
{
    h2o_req_t *req = p->req;
    req->res.status = (int)h->status;
    /* PHP's reason phrase, as php-fpm's Status line gives nginx (empty for
     * codes PHP does not know). */
    req->res.reason = h->reason ? h2o_strdup(&req->pool, h->reason, SIZE_MAX).base : "";
    /* 204 and 304 have no body: none is sent, no length; and as nginx, no
     * Content-Type on a 304, nor on an HTTP/2 204. */
    int bodiless = h->status == 204 || h->status == 304;
    int no_type = h->status == 304 || (h->status == 204 && req->version >= 0x200);
    for (size_t i = 0; i < h->n_headers; i++) {
        const char *name = h->headers[i]->name;
        size_t nlen = strlen(name);
        if (is_dropped(name) || (no_type && strcasecmp(name, "content-type") == 0))
            continue;
        char *lc = h2o_mem_alloc_pool(&req->pool, nlen + 1);
        for (size_t k = 0; k < nlen; k++)
            lc[k] = (char)h2o_tolower(name[k]);
        lc[nlen] = '\0';
        char *orig = h2o_strdup(&req->pool, name, nlen).base;
        h2o_iovec_t v = h2o_strdup(&req->pool, (const char *)h->headers[i]->value.data, h->headers[i]->value.len);
        h2o_add_header_by_str(&req->pool, &req->res.headers, lc, nlen, 1, orig, v.base, v.len);
    }
    if (h->final) {
        /* The whole answer is here: say its length instead of chunking. */
        size_t total = 0;
        for (size_t i = 1; i < fr->n && !bodiless; i++)
            total += zmq_msg_size(&fr->f[i]);
        if (!bodiless)
            req->res.content_length = total;
        p->final_seen = 1;
    }
    if (h->status >= 500)
        be->f->stats.errors_5xx++;
    if (h->error && *h->error)
        vc_log(VC_LOG_WARN, "backend", "%u from the pool for %.*s: %s", h->status, (int)req->path.len, req->path.base,
               h->error);
    if (!bodiless)
        append_body(p, fr, 1);
    p->bodiless = bodiless;
    p->started = 1;
    /* h2o's gzip filter, set up here, compresses only 200s; nginx's also
     * 403s and 404s (a CMS's "not found" pages are full pages). */
    int status = req->res.status;
    if (status == 403 || status == 404)
        req->res.status = 200;
    h2o_start_response(req, &p->super);
    req->res.status = status;
    kick(p);
}

static void on_message(backend_t *be, vc_frames_t *fr)
{
    Vc__BackMessage *bm = vc__back_message__unpack(NULL, zmq_msg_size(&fr->f[0]), zmq_msg_data(&fr->f[0]));
    if (bm == NULL) {
        vc_log(VC_LOG_WARN, "backend", "dropped a malformed answer from the pool");
        return;
    }
    uint64_t id = bm->kind_case == VC__BACK_MESSAGE__KIND_HEAD    ? bm->head->id
                  : bm->kind_case == VC__BACK_MESSAGE__KIND_CHUNK ? bm->chunk->id
                                                                  : 0;
    preq_t *p = *slot(be, id);
    if (p == NULL || p->req == NULL || p->given_up) {
        /* The client left; the answer has nowhere to go. */
    } else if (bm->kind_case == VC__BACK_MESSAGE__KIND_HEAD && !p->started) {
        on_head(be, p, bm->head, fr);
    } else if (bm->kind_case == VC__BACK_MESSAGE__KIND_CHUNK && p->started) {
        if (!p->bodiless)
            append_body(p, fr, 1);
        if (bm->chunk->final) {
            p->final_seen = 1;
            p->aborted = bm->chunk->aborted;
        }
        kick(p);
    }
    vc__back_message__free_unpacked(bm, NULL);
}

/* Reads every waiting message. ZMQ_FD is edge-like: after any send or
 * receive the socket must be drained until ZMQ_EVENTS says empty. */
static void drain(backend_t *be)
{
    for (;;) {
        int events = 0;
        size_t len = sizeof(events);
        zmq_getsockopt(be->sock, ZMQ_EVENTS, &events, &len);
        if (!(events & ZMQ_POLLIN))
            return;
        if (vc_frames_recv(be->sock, &be->fr, ZMQ_DONTWAIT) <= 0)
            return;
        on_message(be, &be->fr);
        vc_frames_close(&be->fr);
    }
}

static void on_readable(h2o_socket_t *sock, const char *err)
{
    backend_t *be = sock->data;
    drain(be);
}

static void on_drain_timer(h2o_timeout_entry_t *entry)
{
    backend_t *be = H2O_STRUCT_FROM_MEMBER(backend_t, drain_entry, entry);
    drain(be);
}

static void schedule_drain(backend_t *be)
{
    if (!h2o_timeout_is_linked(&be->drain_entry))
        h2o_timeout_link(be->f->ctx.loop, &be->f->ctx.zero_timeout, &be->drain_entry);
}

/* The pool's end of the socket closed: vc-php died (or restarts). What it
 * had will never be answered, so each waiting client gets a 502 now rather
 * than a 504 at front.php_timeout; answers already streaming are cut.
 * Requests sent after this reach the next vc-php once it is up. */
static void pool_lost(backend_t *be)
{
    size_t n = 0, cap = be->inflight + 1;
    preq_t **lost = vc_malloc(cap * sizeof(*lost));
    for (size_t i = 0; i < NBUCKETS; i++)
        for (preq_t *p = be->buckets[i]; p && n < cap; p = p->next)
            if (p->req && !p->given_up && !p->final_seen)
                lost[n++] = p;
    if (n)
        vc_log(VC_LOG_ERR, "backend", "the PHP pool went away with %zu requests: 502 for those not yet answered", n);
    for (size_t i = 0; i < n; i++) {
        preq_t *p = lost[i];
        if (p->started) {
            p->final_seen = 1;
            p->aborted = 1;
            kick(p); /* may dispose p */
        } else {
            p->given_up = 1;
            be->f->stats.errors_5xx++;
            h2o_send_error_generic(p->req, 502, "Bad Gateway", "Bad Gateway: the PHP pool went away\n", 0);
        }
    }
    free(lost);
}

static void on_monitor(h2o_socket_t *sock, const char *err)
{
    backend_t *be = sock->data;
    for (;;) {
        int events = 0;
        size_t len = sizeof(events);
        zmq_getsockopt(be->monitor, ZMQ_EVENTS, &events, &len);
        if (!(events & ZMQ_POLLIN))
            return;
        /* [event u16 + value u32][endpoint] */
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        zmq_msg_init(&addr);
        if (zmq_msg_recv(&ev, be->monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            zmq_msg_close(&addr);
            return;
        }
        if (zmq_msg_more(&ev))
            zmq_msg_recv(&addr, be->monitor, ZMQ_DONTWAIT);
        uint16_t event = 0;
        if (zmq_msg_size(&ev) >= 2)
            memcpy(&event, zmq_msg_data(&ev), 2);
        zmq_msg_close(&ev);
        zmq_msg_close(&addr);
        if (event == ZMQ_EVENT_DISCONNECTED)
            pool_lost(be);
    }
}

int backend_submit(backend_t *be, h2o_req_t *req, Vc__RequestHead *head)
{
    preq_t *p = h2o_mem_alloc_shared(&req->pool, sizeof(*p), on_dispose);
    memset(p, 0, sizeof(*p));
    p->super.proceed = on_proceed;
    p->super.stop = on_stop;
    p->be = be;
    p->req = req;
    /* The connection's state, if the front accepted it (not the admin
     * listener). */
    if ((p->conn = conn_state_of_req(req)) != NULL) {
        if (p->conn->cut) {
            /* Over its budget: nothing more from it reaches PHP. */
            p->conn = NULL;
            p->final_seen = 1;
            h2o_send_error_generic(req, 429, "Too Many Requests", "Too Many Requests\n", 0);
            return -1;
        }
        p->conn->refs++;
    }
    p->id = ++be->next_id;
    p->sent_ms = vc_mono_ms();
    head->id = p->id;
    Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
    fm.kind_case = VC__FRONT_MESSAGE__KIND_REQUEST;
    fm.request = head;
    int more = req->entity.base != NULL && req->entity.len > 0;
    int r = vc_send_proto(be->sock, &fm.base, ZMQ_DONTWAIT | (more ? ZMQ_SNDMORE : 0));
    if (r == 0 && more) {
        /* h2o owns the body in the request's pool, which may be freed
         * before ZeroMQ's I/O thread has written it: copy it once. */
        zmq_msg_t body;
        zmq_msg_init_size(&body, req->entity.len);
        memcpy(zmq_msg_data(&body), req->entity.base, req->entity.len);
        if (zmq_msg_send(&body, be->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&body);
            r = -errno;
        }
    }
    if (r < 0) {
        vc_log(VC_LOG_ERR, "backend", "zmq_send() failed while passing %.*s to PHP: %s", (int)req->path.len,
               req->path.base, zmq_strerror(-r));
        p->final_seen = 1; /* nothing to cancel; the pool frees p */
        be->f->stats.errors_5xx++;
        h2o_send_error_502(req, "Bad Gateway", "The PHP pool is not reachable.\n", 0);
        return -1;
    }
    p->next = be->buckets[p->id % NBUCKETS];
    be->buckets[p->id % NBUCKETS] = p;
    be->inflight++;
    schedule_drain(be);
    return 0;
}

void backend_tick(backend_t *be)
{
    /* Requests whose answer has not begun in front.php_timeout: the pool
     * is gone or wedged (its own limits answer well before this). Collected
     * first: answering one may dispose it at once. */
    uint64_t now = vc_mono_ms(), limit = (uint64_t)be->f->d.cfg->front.php_timeout_ms;
    preq_t *late[64];
    size_t n = 0;
    for (size_t i = 0; i < NBUCKETS; i++)
        for (preq_t *p = be->buckets[i]; p; p = p->next) {
            if (p->req && !p->final_seen && p->conn)
                p->conn->php_waiting = 1; /* for the watchdog */
            if (p->req && !p->started && !p->given_up && now - p->sent_ms >= limit && n < VC_ARRAY_SIZE(late))
                late[n++] = p;
        }
    for (size_t i = 0; i < n; i++) {
        preq_t *p = late[i];
        vc_log(VC_LOG_ERR, "backend", "no answer from PHP for %.*s in %llu ms: 504", (int)p->req->path.len,
               p->req->path.base, (unsigned long long)(now - p->sent_ms));
        be->f->stats.errors_5xx++;
        p->given_up = 1; /* a late answer is dropped */
        h2o_send_error_generic(p->req, 504, "Gateway Time-out", "Gateway Time-out: PHP did not answer\n", 0);
    }
}

size_t backend_inflight(backend_t *be)
{
    return be->inflight;
}

backend_t *backend_new(front_t *f, const char *endpoint)
{
    void *s = vc_socket(f->d.zctx, ZMQ_DEALER, endpoint, 0);
    if (s == NULL) {
        vc_log(VC_LOG_ERR, "backend", "zmq_connect() failed while joining the pool \"%s\": %s", endpoint,
               zmq_strerror(errno));
        return NULL;
    }
    /* Requests queue here while vc-php restarts, instead of failing. */
    int hwm = 100000;
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof(hwm));
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof(hwm));
    backend_t *be = vc_calloc(1, sizeof(*be));
    be->f = f;
    be->sock = s;
    int fd;
    size_t len = sizeof(fd);
    zmq_getsockopt(s, ZMQ_FD, &fd, &len);
    be->watch = h2o_evloop_socket_create(f->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    be->watch->data = be;
    h2o_socket_read_start(be->watch, on_readable);
    be->drain_entry.cb = on_drain_timer;
    /* Told when the pool's end closes (a dead vc-php), on the same loop. */
    char mon[64];
    snprintf(mon, sizeof(mon), "inproc://vc-front-backend-%p", (void *)be);
    if (zmq_socket_monitor(s, mon, ZMQ_EVENT_DISCONNECTED) == 0 &&
        (be->monitor = zmq_socket(f->d.zctx, ZMQ_PAIR)) != NULL && zmq_connect(be->monitor, mon) == 0) {
        len = sizeof(fd);
        zmq_getsockopt(be->monitor, ZMQ_FD, &fd, &len);
        be->monitor_watch = h2o_evloop_socket_create(f->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
        be->monitor_watch->data = be;
        h2o_socket_read_start(be->monitor_watch, on_monitor);
        /* ZMQ_FD is edge-like: take what is already there. */
        on_monitor(be->monitor_watch, NULL);
    } else {
        vc_log(VC_LOG_WARN, "backend", "no monitor on the pool socket (%s): a dead vc-php is noticed at php_timeout",
               zmq_strerror(errno));
    }
    return be;
}

/* The fd belongs to ZeroMQ: detach it from h2o without closing it. */
static void unwatch(h2o_socket_t *watch)
{
    h2o_socket_read_stop(watch);
    h2o_socket_export_t ex;
    h2o_socket_export(watch, &ex);
}

void backend_destroy(backend_t **pbe)
{
    backend_t *be = *pbe;
    if (be == NULL)
        return;
    if (h2o_timeout_is_linked(&be->drain_entry))
        h2o_timeout_unlink(&be->drain_entry);
    unwatch(be->watch);
    if (be->monitor_watch)
        unwatch(be->monitor_watch);
    zmq_socket_monitor(be->sock, NULL, 0);
    if (be->monitor)
        zmq_close(be->monitor);
    zmq_close(be->sock);
    vc_frames_fini(&be->fr);
    free(be);
    *pbe = NULL;
}
