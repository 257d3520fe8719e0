#include "backend.h"
#include "bans.h"
#include "vc_board.h"
#include "vc_link.h"
#include "vc_log.h"
#include "vc_msg.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../vc-php/wire.h"

#define NBUCKETS 4096
/* Requests waiting to reach the pool, in bytes: past this (the pool is
 * away for long, or reads nothing), new requests get a 503 at once. */
#define OUT_LIMIT (64u * 1024u * 1024u)
#define RETRY_MS 100
#define LINK_KEEP (8u * 1024u * 1024u)
#define NEED_EVERY_MS 10

typedef struct lent lent_t;

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
    /* For a worker lent to this front: */
    lent_t *lw;      /* the worker running it */
    uint8_t *packed; /* its FrontMessage, until a worker took it (or,
                      * for a GET or HEAD, until the answer began) */
    size_t packed_len;
    int queued; /* waiting for a lent worker */
    struct preq *qnext;
    uint64_t queued_ms;
    int idempotent;
    int retries;
    const char *script; /* in the request's pool */
} preq_t;

/* Messages for a socket written by h2o: those of one turn of the loop
 * leave in one write; new ones wait in out while wbuf is written. */
typedef struct outbox {
    h2o_socket_t *sock;
    int writing;
    vc_link_buf_t out, wbuf;
} outbox_t;

/* The board the pool shares with this front (libcommon/vc_board.h):
 * counted, since workers of a pool that went away may outlive the next
 * pool's first lend. */
typedef struct board_ref {
    vc_board_t *map;
    int refs;
} board_ref_t;

/* A worker the pool lent this front: its link, read and written here. */
struct lent {
    backend_t *be;
    uint32_t slot;
    int pid;
    board_ref_t *board;
    vc_board_slot_t *bs;
    outbox_t ob;
    vc_link_buf_t in;
    int busy;      /* from a request until "D", or "R" after "F" */
    int finishing; /* its answer is whole ("F"): busy until "R" */
    int recalled;  /* given back once idle */
    int owed;      /* recalled with any while busy: the first worker idle
                      here goes back in its place */
    preq_t *job;   /* what it runs, while its client waits */
};

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
    /* Workers lent by the pool, and requests waiting for one of them. */
    lent_t **lent;
    size_t nlent, caplent;
    size_t nowed; /* lent workers with owed set */
    board_ref_t *board;
    preq_t *qhead, *qtail;
    size_t qlen;
    uint64_t need_ms; /* the last Need sent */
};

static void board_unref(board_ref_t *b)
{
    if (b && --b->refs == 0) {
        munmap(b->map, sizeof(vc_board_t));
        free(b);
    }
}

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

static void unqueue(backend_t *be, preq_t *p);
static void need(backend_t *be);
static void lent_cancel(lent_t *l);

static void on_dispose(void *arg)
{
    preq_t *p = arg;
    unlink_preq(p);
    if (!p->final_seen)
        charge_reset(p->conn);
    if (p->conn)
        conn_state_release(p->conn);
    free(p->packed);
    p->packed = NULL;
    if (p->queued) {
        unqueue(p->be, p); /* it never ran: nothing to tell */
    } else if (p->lw) {
        /* Running on a lent worker: tell it, so connection_aborted()
         * says so; its answer, still to come, is dropped. */
        if (!p->final_seen)
            lent_cancel(p->lw);
        p->lw->job = NULL;
        p->lw = NULL;
    } else if (!p->final_seen) {
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

static void on_lend(backend_t *be, const Vc__Lend *m);
static void on_recall(backend_t *be, const Vc__Recall *m);

/* from: the lent worker the message came from (NULL: the broker). A
 * worker runs the application's code: it may only answer the request it
 * was given, never name another client's. */
static void on_message(backend_t *be, vc_frames_t *fr, const lent_t *from)
{
    Vc__BackMessage *bm = vc__back_message__unpack(NULL, zmq_msg_size(&fr->f[0]), zmq_msg_data(&fr->f[0]));
    if (bm == NULL) {
        vc_log(VC_LOG_WARN, "backend", "dropped a malformed answer from the pool");
        return;
    }
    if (bm->kind_case == VC__BACK_MESSAGE__KIND_LEND || bm->kind_case == VC__BACK_MESSAGE__KIND_RECALL) {
        if (from) /* only the broker lends and recalls */
            vc_log(VC_LOG_WARN, "backend", "dropped a lend or recall from worker %d", from->pid);
        else if (bm->kind_case == VC__BACK_MESSAGE__KIND_LEND)
            on_lend(be, bm->lend);
        else
            on_recall(be, bm->recall);
        vc__back_message__free_unpacked(bm, NULL);
        return;
    }
    uint64_t id = bm->kind_case == VC__BACK_MESSAGE__KIND_HEAD    ? bm->head->id
                  : bm->kind_case == VC__BACK_MESSAGE__KIND_CHUNK ? bm->chunk->id
                                                                  : 0;
    preq_t *p = *slot(be, id);
    if (from && (from->job == NULL || from->job != p))
        p = NULL;
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
    for (size_t i = 0; i < n; i++)
        unqueue(be, lost[i]);
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

static void track(backend_t *be, preq_t *p)
{
    p->next = be->buckets[p->id % NBUCKETS];
    be->buckets[p->id % NBUCKETS] = p;
    be->inflight++;
}

/* ---- workers lent by the pool --------------------------------------------
 * The pool lends idle workers to this front (proto/request.proto: Lend):
 * requests go to them straight, without waking the broker, or wait here
 * while all of them are busy, under the pool's own limits (queue_limit:
 * 503, queue_timeout: 504). With no worker lent, requests go to the broker
 * as before. What each worker does is written on the board the broker
 * reads (libcommon/vc_board.h). */

static vc_board_t *board(backend_t *be)
{
    return be->board ? be->board->map : NULL;
}

static void publish_queue(backend_t *be)
{
    if (board(be))
        board(be)->queued = (uint32_t)be->qlen;
}

static void enqueue(backend_t *be, preq_t *p, int at_head)
{
    p->queued = 1;
    p->queued_ms = vc_mono_ms();
    p->qnext = NULL;
    if (at_head) {
        p->qnext = be->qhead;
        be->qhead = p;
        if (be->qtail == NULL)
            be->qtail = p;
    } else {
        if (be->qtail)
            be->qtail->qnext = p;
        else
            be->qhead = p;
        be->qtail = p;
    }
    be->qlen++;
    publish_queue(be);
}

static void unqueue(backend_t *be, preq_t *p)
{
    if (!p->queued)
        return;
    for (preq_t **pp = &be->qhead, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->qnext)
        if (*pp == p) {
            *pp = p->qnext;
            if (be->qtail == p)
                be->qtail = prev;
            be->qlen--;
            break;
        }
    p->queued = 0;
    p->qnext = NULL;
    publish_queue(be);
}

static void ob_flush(outbox_t *ob, h2o_socket_cb cb)
{
    if (ob->sock == NULL || ob->writing || ob->out.len == 0)
        return;
    vc_link_buf_t t = ob->wbuf;
    ob->wbuf = ob->out;
    ob->out = t;
    ob->writing = 1;
    h2o_iovec_t v = h2o_iovec_init(ob->wbuf.p, ob->wbuf.len);
    h2o_socket_write(ob->sock, &v, 1, cb);
}

static void lent_lost(lent_t *l, const char *why);

static void on_lent_written(h2o_socket_t *sock, const char *err)
{
    lent_t *l = sock->data;
    if (l == NULL)
        return;
    l->ob.writing = 0;
    vc_link_reset(&l->ob.wbuf);
    if (err)
        lent_lost(l, err);
    else
        ob_flush(&l->ob, on_lent_written);
}

static void lent_cancel(lent_t *l)
{
    char c = WIRE_CANCEL;
    vc_link_append(&l->ob.out, &(struct iovec){&c, 1}, 1);
    ob_flush(&l->ob, on_lent_written);
}

/* Appends what fits of s to the string dst (cap bytes) at at; returns
 * the new end. dst stays terminated. */
static size_t put_text(char *dst, size_t cap, size_t at, const char *s, size_t len)
{
    if (at + len >= cap)
        len = cap - 1 - at;
    memcpy(dst + at, s, len);
    dst[at + len] = '\0';
    return at + len;
}

/* The request goes to the worker: its board entry first, so the broker
 * never sees a busy worker as idle. */
static void run_on(lent_t *l, preq_t *p)
{
    h2o_req_t *req = p->req;
    vc_board_slot_t *bs = l->bs;
    vc_board_begin(bs);
    bs->state = VC_BOARD_BUSY;
    bs->started = 0;
    bs->timed_out = 0;
    bs->idempotent = (uint32_t)p->idempotent;
    bs->retries = (uint32_t)p->retries;
    bs->since_ms = vc_mono_ms();
    /* Copied, not printed: snprintf() was 3% of the front's time. */
    size_t at = put_text(bs->what, sizeof(bs->what), 0, req->method.base, req->method.len);
    at = put_text(bs->what, sizeof(bs->what), at, " ", 1);
    put_text(bs->what, sizeof(bs->what), at, req->path.base, req->path.len);
    put_text(bs->script, sizeof(bs->script), 0, p->script ? p->script : "", p->script ? strlen(p->script) : 0);
    vc_board_end(bs);
    /* [front-id][FrontMessage][body], as the broker passes it on; the
     * worker echoes the front-id, which means nothing here. */
    static const char fid[8];
    int more = req->entity.base != NULL && req->entity.len > 0;
    struct iovec f[3] = {{(void *)fid, sizeof(fid)}, {p->packed, p->packed_len}, {req->entity.base, req->entity.len}};
    vc_link_append(&l->ob.out, f, more ? 3 : 2);
    if (!p->idempotent || p->retries > 0) {
        free(p->packed);
        p->packed = NULL;
    }
    l->busy = 1;
    l->job = p;
    p->lw = l;
    ob_flush(&l->ob, on_lent_written);
}

static lent_t *idle_lent(backend_t *be)
{
    for (size_t i = 0; i < be->nlent; i++)
        if (!be->lent[i]->busy && !be->lent[i]->recalled)
            return be->lent[i];
    return NULL;
}

static int submit_lent(backend_t *be, preq_t *p, const Vc__FrontMessage *fm, const Vc__RequestHead *head)
{
    h2o_req_t *req = p->req;
    p->idempotent = !strcmp(head->method, "GET") || !strcmp(head->method, "HEAD");
    p->script = h2o_strdup(&req->pool, head->script_filename ? head->script_filename : "", SIZE_MAX).base;
    p->packed_len = vc__front_message__get_packed_size(fm);
    p->packed = vc_malloc(p->packed_len);
    vc__front_message__pack(fm, p->packed);
    board(be)->accepted++;
    lent_t *l = idle_lent(be);
    if (l == NULL && be->qlen >= (size_t)be->f->d.cfg->php.queue_limit) {
        board(be)->rejected_503++;
        be->f->stats.errors_5xx++;
        vc_log(VC_LOG_WARN, "backend", "queue full (%zu waiting): 503 for %.*s %.*s", be->qlen, (int)req->method.len,
               req->method.base, (int)req->path.len, req->path.base);
        p->final_seen = 1; /* nothing to cancel */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
        h2o_send_error_503(req, "Service Unavailable", "Service Unavailable: every PHP worker is busy\n", 0);
        return -1;
    }
    track(be, p);
    if (l) {
        run_on(l, p);
    } else {
        enqueue(be, p, 0);
        need(be);
    }
    return 0;
}

static void send_packed(backend_t *be, const void *packed, size_t len, const void *body, size_t blen);

static void remove_lent(lent_t *l)
{
    backend_t *be = l->be;
    if (l->job)
        l->job->lw = NULL;
    if (l->owed)
        be->nowed--;
    for (size_t i = 0; i < be->nlent; i++)
        if (be->lent[i] == l) {
            be->lent[i] = be->lent[--be->nlent];
            break;
        }
    if (l->ob.sock) {
        l->ob.sock->data = NULL;
        h2o_socket_close(l->ob.sock);
    }
    vc_link_buf_free(&l->in);
    vc_link_buf_free(&l->ob.out);
    vc_link_buf_free(&l->ob.wbuf);
    board_unref(l->board);
    free(l);
}

/* With no worker lent any more, what waits here goes to the broker. */
static void requeue_to_pool(backend_t *be)
{
    if (be->nlent > 0)
        return;
    for (preq_t *p; (p = be->qhead) != NULL;) {
        unqueue(be, p);
        h2o_req_t *req = p->req;
        int more = req->entity.base != NULL && req->entity.len > 0;
        send_packed(be, p->packed, p->packed_len, more ? req->entity.base : NULL, more ? req->entity.len : 0);
        free(p->packed);
        p->packed = NULL;
    }
}

/* action: NULL to give the worker back; for a worker whose link ended,
 * what was done for its request (proto/request.proto: GiveBack). instead:
 * the slot of the worker this one goes back in place of, or -1. */
static void tell_given_back(backend_t *be, uint32_t slot, const char *action, long instead)
{
    Vc__GiveBack g = VC__GIVE_BACK__INIT;
    g.slot = slot;
    g.lost = action != NULL;
    g.action = (char *)(action ? action : "");
    g.instead = instead >= 0;
    g.instead_of = instead >= 0 ? (uint32_t)instead : 0;
    Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
    fm.kind_case = VC__FRONT_MESSAGE__KIND_GIVE_BACK;
    fm.give_back = &g;
    send_message(be, &fm, NULL, 0);
}

static void give_back(lent_t *l, long instead)
{
    backend_t *be = l->be;
    uint32_t slot = l->slot;
    remove_lent(l); /* closes this end first: the broker reads it next */
    tell_given_back(be, slot, NULL, instead);
    requeue_to_pool(be);
}

/* A busy worker the broker asked back with any set (it needs a worker,
 * not this one): NULL if none is owed. */
static lent_t *owed_lent(backend_t *be)
{
    for (size_t i = 0; i < be->nlent && be->nowed > 0; i++)
        if (be->lent[i]->owed)
            return be->lent[i];
    return NULL;
}

/* Requests wait here: a worker idle in the broker or at another front
 * (front.processes > 1) may come. Asked as requests queue and as queued
 * ones start, at most every NEED_EVERY_MS, so a front that is always
 * waiting does not wake the broker per request. */
static void need(backend_t *be)
{
    if (be->qhead == NULL || vc_mono_ms() - be->need_ms < NEED_EVERY_MS)
        return;
    be->need_ms = vc_mono_ms();
    Vc__Need n = VC__NEED__INIT;
    Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
    fm.kind_case = VC__FRONT_MESSAGE__KIND_NEED;
    fm.need = &n;
    send_message(be, &fm, NULL, 0);
}

/* The worker has nothing to do: given back if the pool asked, else the
 * next request waiting here. May free l. */
static void settle(lent_t *l)
{
    backend_t *be = l->be;
    if (l->busy)
        return;
    lent_t *k;
    if (l->recalled || l->owed) {
        give_back(l, -1);
    } else if ((k = owed_lent(be)) != NULL) {
        k->owed = 0;
        be->nowed--;
        give_back(l, k->slot);
    } else if (be->qhead) {
        preq_t *p = be->qhead;
        unqueue(be, p);
        run_on(l, p);
        need(be);
    }
}

static void went_idle(lent_t *l)
{
    vc_board_slot_t *bs = l->bs;
    vc_board_begin(bs);
    bs->state = VC_BOARD_IDLE;
    bs->since_ms = vc_mono_ms();
    bs->what[0] = bs->script[0] = '\0';
    vc_board_end(bs);
    l->busy = l->finishing = 0;
    l->job = NULL;
}

static void on_message(backend_t *be, vc_frames_t *fr, const lent_t *from);

/* Once idle, l goes back to the pool (settle): its link is not read
 * further, so the broker finds every byte the worker sent after. */
static int goes_back(const lent_t *l)
{
    return l->recalled || l->owed || l->be->nowed > 0;
}

/* ["R"], or [flag][front-id][BackMessage][body...] (daemons/vc-php/wire.h).
 * Asks for no more reads once the worker is idle and must go back. */
static int on_lent_message(void *arg, const struct iovec *f, int n)
{
    lent_t *l = arg;
    backend_t *be = l->be;
    if (f[0].iov_len != 1)
        return 0;
    char flag = *(const char *)f[0].iov_base;
    if (flag == WIRE_READY) {
        if (l->busy)
            went_idle(l);
        return goes_back(l);
    }
    if (n < 3 || !l->busy)
        return 0;
    if (!l->bs->started) {
        vc_board_begin(l->bs);
        l->bs->started = 1;
        vc_board_end(l->bs);
        if (l->job && l->job->packed) {
            free(l->job->packed); /* begun: never run again */
            l->job->packed = NULL;
        }
    }
    vc_frames_append(&be->fr, f + 2, (size_t)n - 2);
    on_message(be, &be->fr, l); /* may dispose the job's request */
    vc_frames_close(&be->fr);
    if (flag == WIRE_DONE || flag == WIRE_FINAL) {
        board(be)->completed++;
        vc_board_begin(l->bs);
        l->bs->served++;
        vc_board_end(l->bs);
        if (l->job)
            l->job->lw = NULL;
        l->job = NULL;
    }
    if (flag == WIRE_DONE) {
        went_idle(l);
        return goes_back(l);
    }
    if (flag == WIRE_FINAL) {
        l->finishing = 1;
        vc_board_begin(l->bs);
        l->bs->state = VC_BOARD_FINISHING;
        vc_board_end(l->bs);
    }
    return 0;
}

static void on_lent_readable(h2o_socket_t *sock, const char *err)
{
    lent_t *l = sock->data;
    if (l == NULL)
        return;
    if (err) {
        lent_lost(l, err);
        return;
    }
    int rc = vc_link_read(h2o_socket_get_fd(sock), &l->in, 16, on_lent_message, l);
    if (rc <= 0)
        lent_lost(l, rc == 0 ? "it exited" : rc == -EPROTO ? "a malformed message" : vc_strerror(-rc));
    else
        settle(l);
}

/* The worker's link ended (it exited, or was killed): its client is
 * answered as the broker would (and as the broker reports it, from the
 * same board): the answer cut if it had begun; 504 if the broker killed
 * it for running too long; a GET or HEAD not begun runs once more; else
 * 502. An idle worker just goes. */
static void lent_lost(lent_t *l, const char *why)
{
    backend_t *be = l->be;
    preq_t *p = l->job;
    uint32_t slot = l->slot;
    int timed_out = (int)__atomic_load_n(&l->bs->timed_out, __ATOMIC_ACQUIRE);
    const char *action = !l->busy || l->finishing ? "" : "client gone";
    if (l->busy && !l->finishing && l->job == NULL)
        board(be)->completed++; /* its client had left */
    int running = l->busy && !l->finishing;
    vc_log(running ? VC_LOG_WARN : VC_LOG_DEBUG, "backend", "lent worker %d is gone (%s)%s", l->pid, why,
           running ? " while running a request" : "");
    remove_lent(l);
    if (p && p->req && !p->final_seen) {
        p->lw = NULL;
        h2o_req_t *req = p->req;
        if (p->started) {
            action = "aborted";
            p->final_seen = 1;
            p->aborted = 1;
            kick(p); /* may dispose p */
        } else if (!timed_out && p->idempotent && p->retries == 0 && p->packed) {
            action = "retried";
            p->retries++;
            board(be)->retried++;
            lent_t *o = idle_lent(be);
            if (o)
                run_on(o, p);
            else
                enqueue(be, p, 1);
        } else {
            p->given_up = p->final_seen = 1;
            be->f->stats.errors_5xx++;
            action = timed_out ? "504" : "502";
            if (timed_out) {
                board(be)->timed_out_504++;
                h2o_send_error_generic(req, 504, "Gateway Time-out", "Gateway Timeout: the script ran too long\n", 0);
            } else {
                board(be)->failed_502++;
                h2o_send_error_generic(req, 502, "Bad Gateway", "Bad Gateway: the PHP worker died\n", 0);
            }
        }
    } else if (p && p->final_seen) {
        action = ""; /* its answer was whole */
    }
    tell_given_back(be, slot, action, -1);
    requeue_to_pool(be);
}

static lent_t *lent_by_slot(backend_t *be, uint32_t slot)
{
    for (size_t i = 0; i < be->nlent; i++)
        if (be->lent[i]->slot == slot)
            return be->lent[i];
    return NULL;
}

static void on_lend(backend_t *be, const Vc__Lend *m)
{
    int fd = vc_link_take_fd(&be->in);
    if (m->board) {
        int bfd = vc_link_take_fd(&be->in);
        void *map = bfd >= 0 ? mmap(NULL, sizeof(vc_board_t), PROT_READ | PROT_WRITE, MAP_SHARED, bfd, 0) : MAP_FAILED;
        if (bfd >= 0)
            close(bfd);
        if (map == MAP_FAILED) {
            vc_log(VC_LOG_ERR, "backend", "cannot map the pool's board: %s", vc_strerror(errno));
        } else {
            board_unref(be->board);
            be->board = vc_calloc(1, sizeof(*be->board));
            be->board->map = map;
            be->board->refs = 1;
        }
    }
    lent_t *old = lent_by_slot(be, m->slot);
    if (old)
        lent_lost(old, "its slot was lent again");
    if (fd < 0 || be->board == NULL || m->slot >= VC_BOARD_SLOTS) {
        /* Unusable here: the broker has it back at once. */
        vc_log(VC_LOG_ERR, "backend", "a lent worker came without %s: given back",
               fd < 0              ? "its link"
               : be->board == NULL ? "a board"
                                   : "a valid slot");
        if (fd >= 0)
            close(fd);
        tell_given_back(be, m->slot, NULL, -1);
        return;
    }
    lent_t *l = vc_calloc(1, sizeof(*l));
    l->be = be;
    l->slot = m->slot;
    l->pid = (int)m->pid;
    l->board = be->board;
    l->board->refs++;
    l->bs = &be->board->map->slot[m->slot];
    l->ob.sock = h2o_evloop_socket_create(be->f->ctx.loop, fd, 0);
    l->ob.sock->data = l;
    /* Read by on_lent_readable itself, never by h2o into its own buffer:
     * once given back, the broker must find every byte the worker sent. */
    h2o_socket_dont_read(l->ob.sock, 1);
    h2o_socket_read_start(l->ob.sock, on_lent_readable);
    if (be->nlent == be->caplent) {
        be->caplent = be->caplent ? be->caplent * 2 : 16;
        be->lent = vc_realloc(be->lent, be->caplent * sizeof(*be->lent));
    }
    be->lent[be->nlent++] = l;
    went_idle(l);
    settle(l);
}

/* A recall with any set, for a worker busy since the broker read the
 * board, is answered by an idle one now, or by the first to be idle. */
static void on_recall(backend_t *be, const Vc__Recall *m)
{
    lent_t *l = lent_by_slot(be, m->slot);
    if (l == NULL || l->recalled)
        return;
    if (m->any && l->busy) {
        lent_t *o = idle_lent(be);
        if (o) {
            give_back(o, l->slot);
        } else if (!l->owed) {
            l->owed = 1;
            be->nowed++;
        }
        return;
    }
    if (l->owed) {
        l->owed = 0;
        be->nowed--;
    }
    l->recalled = 1;
    settle(l);
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
    if (be->nlent > 0)
        return submit_lent(be, p, &fm, head);
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
    track(be, p);
    return 0;
}

void backend_tick(backend_t *be)
{
    /* Waiting here for a lent worker too long: 504, as the broker's own
     * queue does (the queue is in arrival order). */
    uint64_t qlimit = (uint64_t)be->f->d.cfg->php.queue_timeout_ms;
    while (be->qhead && vc_mono_ms() - be->qhead->queued_ms >= qlimit) {
        preq_t *p = be->qhead;
        unqueue(be, p);
        vc_log(VC_LOG_WARN, "backend", "%.*s waited %llu ms for a worker: 504", (int)p->req->path.len,
               p->req->path.base, (unsigned long long)(vc_mono_ms() - p->queued_ms));
        board(be)->timed_out_504++;
        be->f->stats.errors_5xx++;
        p->given_up = p->final_seen = 1;
        h2o_send_error_generic(p->req, 504, "Gateway Time-out", "Gateway Timeout: no PHP worker became free\n", 0);
    }
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
        unqueue(be, p);
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
static void send_packed(backend_t *be, const void *packed, size_t len, const void *body, size_t blen)
{
    struct iovec f[2] = {{(void *)packed, len}, {(void *)body, blen}};
    vc_link_append(&be->out, f, body ? 2 : 1);
    if (be->connected && !be->writing && !h2o_timeout_is_linked(&be->flush_entry))
        h2o_timeout_link(be->f->ctx.loop, &be->f->ctx.zero_timeout, &be->flush_entry);
}

static void send_message(backend_t *be, const Vc__FrontMessage *fm, const void *body, size_t blen)
{
    uint8_t stack[2048];
    size_t len = vc__front_message__get_packed_size(fm);
    uint8_t *packed = len <= sizeof(stack) ? stack : vc_malloc(len);
    vc__front_message__pack(fm, packed);
    send_packed(be, packed, len, body, blen);
    if (packed != stack)
        free(packed);
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
    /* The workers it lent are its again (or die with it). */
    while (be->nlent > 0)
        remove_lent(be->lent[0]);
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
    on_message(be, &be->fr, NULL);
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
    /* Over a Unix socket the pool lends workers: their links come as
     * descriptors. */
    be->in.take_fds = addr.ss_family == AF_UNIX;
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
    while (be->nlent > 0)
        remove_lent(be->lent[0]);
    free(be->lent);
    board_unref(be->board);
    vc_link_buf_free(&be->in);
    vc_link_buf_free(&be->out);
    vc_link_buf_free(&be->wbuf);
    vc_frames_fini(&be->fr);
    free(be->endpoint);
    free(be);
    *pbe = NULL;
}
