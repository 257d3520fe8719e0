#include "backend.h"
#include "bans.h"
#include "vc_link.h"
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
/* Requests waiting to reach the pool, in bytes: past this (the pool is
 * away for long, or reads nothing), new requests get a 503 at once. */
#define OUT_LIMIT (64u * 1024u * 1024u)
#define RETRY_MS 100
#define LINK_KEEP (8u * 1024u * 1024u)

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
    char *endpoint;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    h2o_socket_t *link; /* connecting or connected; NULL between tries */
    int connected;
    int writing;     /* wbuf is being written by h2o */
    int was_linked;  /* for the log: lost, or never reached */
    int told_absent; /* "not reachable" logged for this outage */
    vc_link_buf_t in;
    vc_link_buf_t out;  /* messages not yet handed to h2o */
    vc_link_buf_t wbuf; /* messages h2o is writing */
    h2o_timeout_entry_t flush_entry;
    h2o_timeout_t retry_timeout;
    h2o_timeout_entry_t retry_entry;
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

static void send_message(backend_t *be, const Vc__FrontMessage *fm, const void *body, size_t blen);

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
        send_message(p->be, &fm, NULL, 0);
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

/* The link to the pool closed: vc-php died (or restarts). What it
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
    if (be->out.len - be->out.off > OUT_LIMIT) {
        if (!be->told_absent)
            vc_log(VC_LOG_ERR, "backend", "%u MiB of requests wait for the PHP pool at %s: 503 for new ones",
                   OUT_LIMIT >> 20, be->endpoint);
        be->told_absent = 1;
        p->final_seen = 1; /* nothing to cancel; the pool frees p */
        be->f->stats.errors_5xx++;
        h2o_send_error_503(req, "Service Unavailable", "The PHP pool is not reachable.\n", 0);
        return -1;
    }
    /* The body is copied into the link's buffer: h2o frees it with the
     * request, which may go before the write. */
    int more = req->entity.base != NULL && req->entity.len > 0;
    send_message(be, &fm, more ? req->entity.base : NULL, more ? req->entity.len : 0);
    p->next = be->buckets[p->id % NBUCKETS];
    be->buckets[p->id % NBUCKETS] = p;
    be->inflight++;
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

/* ---- the link ------------------------------------------------------------ */

static void connect_link(backend_t *be);
static void flush(backend_t *be);

static void on_flush_timer(h2o_timeout_entry_t *entry)
{
    flush(H2O_STRUCT_FROM_MEMBER(backend_t, flush_entry, entry));
}

/* Messages of one turn of the loop leave in one write. */
static void send_message(backend_t *be, const Vc__FrontMessage *fm, const void *body, size_t blen)
{
    uint8_t stack[2048];
    size_t len = vc__front_message__get_packed_size(fm);
    uint8_t *packed = len <= sizeof(stack) ? stack : vc_malloc(len);
    vc__front_message__pack(fm, packed);
    struct iovec f[2] = {{packed, len}, {(void *)body, blen}};
    vc_link_append(&be->out, f, body ? 2 : 1);
    if (packed != stack)
        free(packed);
    if (be->connected && !be->writing && !h2o_timeout_is_linked(&be->flush_entry))
        h2o_timeout_link(be->f->ctx.loop, &be->f->ctx.zero_timeout, &be->flush_entry);
}

static void on_retry(h2o_timeout_entry_t *entry)
{
    connect_link(H2O_STRUCT_FROM_MEMBER(backend_t, retry_entry, entry));
}

static void close_link(backend_t *be)
{
    if (be->link) {
        be->link->data = NULL; /* its callbacks, if h2o still runs any, do nothing */
        h2o_socket_close(be->link);
        be->link = NULL;
    }
    be->connected = be->writing = 0;
    vc_link_reset(&be->in);
    vc_link_reset(&be->wbuf);
    if (!h2o_timeout_is_linked(&be->retry_entry))
        h2o_timeout_link(be->f->ctx.loop, &be->retry_timeout, &be->retry_entry);
}

/* The pool's end closed or failed: what was sent is lost (502s), what
 * was not is dropped with it (those requests are among the lost). */
static void link_lost(backend_t *be, const char *why)
{
    vc_log(VC_LOG_ERR, "backend", "lost the link to the PHP pool at %s: %s", be->endpoint, why);
    close_link(be);
    vc_link_reset(&be->out);
    be->told_absent = 1;
    pool_lost(be);
}

static void on_written(h2o_socket_t *sock, const char *err)
{
    backend_t *be = sock->data;
    if (be == NULL)
        return;
    be->writing = 0;
    vc_link_reset(&be->wbuf);
    if (err) {
        link_lost(be, err);
        return;
    }
    flush(be);
}

static void flush(backend_t *be)
{
    if (!be->connected || be->writing || be->out.len == 0)
        return;
    /* h2o writes from wbuf until on_written; new messages go to out. */
    vc_link_buf_t t = be->wbuf;
    be->wbuf = be->out;
    be->out = t; /* emptied by on_written */
    be->writing = 1;
    h2o_iovec_t v = h2o_iovec_init(be->wbuf.p, be->wbuf.len);
    h2o_socket_write(be->link, &v, 1, on_written);
}

/* A whole message, as frames, to on_message (they outlive the link's
 * buffer: h2o sends the body from them). */
static int on_link_message(void *arg, const struct iovec *f, int n)
{
    backend_t *be = arg;
    vc_frames_append(&be->fr, f, (size_t)n);
    on_message(be, &be->fr);
    vc_frames_close(&be->fr);
    return 0;
}

static void on_link_readable(h2o_socket_t *sock, const char *err)
{
    backend_t *be = sock->data;
    if (be == NULL)
        return;
    if (err) {
        link_lost(be, err);
        return;
    }
    int rc = vc_link_read(h2o_socket_get_fd(sock), &be->in, 16, on_link_message, be);
    if (rc <= 0)
        link_lost(be, rc == 0 ? "the pool closed it" : rc == -EPROTO ? "a malformed message" : vc_strerror(-rc));
}

static void on_connected(h2o_socket_t *sock, const char *err)
{
    backend_t *be = sock->data;
    if (be == NULL)
        return;
    if (err) {
        if (!be->told_absent)
            vc_log(VC_LOG_WARN, "backend", "the PHP pool at %s is not reachable yet: %s; retrying every %d ms",
                   be->endpoint, err, RETRY_MS);
        be->told_absent = 1;
        close_link(be);
        return;
    }
    be->connected = 1;
    if (be->was_linked || be->told_absent)
        vc_log(VC_LOG_INFO, "backend", "linked to the PHP pool at %s", be->endpoint);
    be->was_linked = 1;
    be->told_absent = 0;
    h2o_socket_dont_read(sock, 1);
    h2o_socket_read_start(sock, on_link_readable);
    flush(be);
}

static void connect_link(backend_t *be)
{
    be->link = h2o_socket_connect(be->f->ctx.loop, (struct sockaddr *)&be->addr, be->addrlen, on_connected);
    if (be->link == NULL) {
        if (!be->told_absent)
            vc_log(VC_LOG_WARN, "backend", "the PHP pool at %s is not reachable yet: %s; retrying every %d ms",
                   be->endpoint, vc_strerror(errno), RETRY_MS);
        be->told_absent = 1;
        close_link(be);
        return;
    }
    be->link->data = be;
}

backend_t *backend_new(front_t *f, const char *endpoint)
{
    struct sockaddr_storage addr;
    socklen_t len;
    const char *why;
    if (vc_link_address(endpoint, &addr, &len, &why) < 0) {
        vc_log(VC_LOG_ERR, "backend", "the PHP pool endpoint \"%s\": %s", endpoint, why);
        return NULL;
    }
    backend_t *be = vc_calloc(1, sizeof(*be));
    be->f = f;
    be->endpoint = vc_strdup(endpoint);
    be->addr = addr;
    be->addrlen = len;
    /* Answers of a few MiB come one after another on this one link:
     * growing the buffer again for each costs a page fault a page. */
    be->in.keep = LINK_KEEP;
    be->flush_entry.cb = on_flush_timer;
    be->retry_entry.cb = on_retry;
    h2o_timeout_init(f->ctx.loop, &be->retry_timeout, RETRY_MS);
    connect_link(be);
    return be;
}

void backend_destroy(backend_t **pbe)
{
    backend_t *be = *pbe;
    if (be == NULL)
        return;
    if (h2o_timeout_is_linked(&be->flush_entry))
        h2o_timeout_unlink(&be->flush_entry);
    if (be->link) {
        be->link->data = NULL;
        h2o_socket_close(be->link);
    }
    if (h2o_timeout_is_linked(&be->retry_entry))
        h2o_timeout_unlink(&be->retry_entry);
    h2o_timeout_dispose(be->f->ctx.loop, &be->retry_timeout);
    vc_link_buf_free(&be->in);
    vc_link_buf_free(&be->out);
    vc_link_buf_free(&be->wbuf);
    vc_frames_fini(&be->fr);
    free(be->endpoint);
    free(be);
    *pbe = NULL;
}
