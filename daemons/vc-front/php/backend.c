#include "backend_internal.h"
#include "core/conn.h"
#include "core/budgets.h"
#include "core/handoff.h"
#include "core/htaccess_respond.h"
#include "core/seam.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* Requests waiting to reach the pool, in bytes: past this (the pool is
 * away for long, or reads nothing), new requests get a 503 at once. */
#define OUT_LIMIT (64u * 1024u * 1024u)
#define RETRY_MS 100
#define LINK_KEEP (8u * 1024u * 1024u)

static preq_t *find(backend_t *be, uint64_t id)
{
    vc_keyed_t *k = vc_keys_find(&be->preqs, id, NULL, NULL);
    return k ? VC_CONTAINER(k, preq_t, link) : NULL;
}

static void unlink_preq(preq_t *p)
{
    if (vc_keys_remove(&p->be->preqs, &p->link))
        p->be->inflight--;
}

/* The request is gone (finished, or the client left). */
static void on_dispose(void *arg)
{
    preq_t *p = arg;
    VC_CHECK_OBJ(p, PREQ_MAGIC);
    unlink_preq(p);
    if (!p->final_seen)
        budgets_charge_reset(p->conn);
    if (p->conn)
        conn_state_release(p->conn);
    free(p->packed);
    p->packed = NULL;
    if (p->queued) {
        lent_unqueue(p->be, p); /* it never ran: nothing to tell */
    } else if (p->lw) {
        /* With a lent worker: its answer, still to come, is dropped. */
        lent_forget(p, !p->final_seen);
    } else if (!p->final_seen) {
        backend_cancel(p); /* so a queued request never runs */
    }
    stream_fini(p);
    p->req = NULL;
    p->magic = 0;
}

void backend_cancel(preq_t *p)
{
    Vc__Cancel c = VC__CANCEL__INIT;
    c.id = p->id;
    Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
    fm.kind_case = VC__FRONT_MESSAGE__KIND_CANCEL;
    fm.cancel = &c;
    backend_send_message(p->be, &fm, NULL, 0);
}

static void on_proceed(h2o_generator_t *g, h2o_req_t *req)
{
    stream_proceed((preq_t *)g);
}

static void on_stop(h2o_generator_t *g, h2o_req_t *req)
{
    /* The client went away mid-answer; on_dispose follows. */
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

/* PHP's header, as it spelled it, on req's answer. */
static void add_header(h2o_req_t *req, const Vc__Header *ph)
{
    size_t nlen = strlen(ph->name);
    char *lc = h2o_mem_alloc_pool(&req->pool, nlen + 1);
    for (size_t k = 0; k < nlen; k++)
        lc[k] = (char)h2o_tolower(ph->name[k]);
    lc[nlen] = '\0';
    char *orig = h2o_strdup(&req->pool, ph->name, nlen).base;
    h2o_iovec_t v = h2o_strdup(&req->pool, (const char *)ph->value.data, ph->value.len);
    h2o_add_header_by_str(&req->pool, &req->res.headers, lc, nlen, 1, orig, v.base, v.len);
}

/* X-Accel-Redirect or X-Sendfile (core/handoff.h): 1 if the front serves
 * the file it names instead of PHP's answer. The worker is let go at
 * once: told its client left if it still runs (as nginx closes the
 * FastCGI connection), and what it still sends is dropped. */
static int hand_off(preq_t *p, const Vc__ResponseHead *h)
{
    const Vc__Header *named = NULL;
    handoff_kind_t k = HANDOFF_NONE;
    for (size_t i = 0; i < h->n_headers && p->srt && k == HANDOFF_NONE; i++)
        if ((k = handoff_header(p->srt, h->headers[i]->name, (int)h->status)) != HANDOFF_NONE)
            named = h->headers[i];
    if (k == HANDOFF_NONE)
        return 0;
    h2o_req_t *req = p->req;
    for (size_t i = 0; i < h->n_headers; i++)
        if (handoff_keeps(k, h->headers[i]->name))
            add_header(req, h->headers[i]);
    p->given_up = 1;
    if (!h->final && p->lw) {
        lent_forget(p, 1);
    } else if (!h->final) {
        backend_cancel(p);
    }
    p->final_seen = 1; /* nothing more of it is awaited */
    free(p->packed);   /* begun: never sent again */
    p->packed = NULL;
    handoff_serve(p->be->pool->f, p->srt, req, k, (const char *)named->value.data, named->value.len);
    return 1;
}

static void on_head(backend_t *be, preq_t *p, Vc__ResponseHead *h, vc_frames_t *fr)
{
    h2o_req_t *req = p->req;
    if (h->status >= 500)
        php_stats.errors_5xx++;
    if (hand_off(p, h))
        return;
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
        if (!strcasecmp(name, "date")) {
            /* Not sent (h2o writes its own), but the cache measures the
             * answer's age and Expires from it (RFC 9111 4.2). */
            h2o_iovec_t *d = h2o_req_getenv(req, H2O_STRLIT("vc-origin-date"), 1);
            *d = h2o_strdup(&req->pool, (const char *)h->headers[i]->value.data, h->headers[i]->value.len);
            continue;
        }
        if (is_dropped(name) || (no_type && strcasecmp(name, "content-type") == 0))
            continue;
        add_header(req, h->headers[i]);
    }
    if (h->final) {
        /* The whole answer is here: say its length instead of chunking. */
        size_t total = 0;
        for (size_t i = 1; i < fr->n && !bodiless; i++)
            total += fr->f[i].len;
        if (!bodiless)
            req->res.content_length = total;
        p->final_seen = 1;
    }
    if (h->error && *h->error)
        vc_log(VC_LOG_WARN, "backend", "%u from the pool for %.*s: %s", h->status, (int)req->path.len, req->path.base,
               h->error);
    if (!bodiless)
        stream_append(p, fr, 1);
    p->bodiless = bodiless;
    p->started = 1;
    free(p->packed); /* begun: never sent again */
    p->packed = NULL;
    /* h2o's gzip filter, set up here, compresses only 200s; nginx's also
     * 403s and 404s (a CMS's "not found" pages are full pages). */
    int status = htaccess_respond_status(req, req->res.status);
    if (status == 403 || status == 404)
        req->res.status = 200;
    h2o_start_response(req, &p->super);
    req->res.status = status;
    stream_kick(p);
}

static void on_leaving(backend_t *be, const Vc__Leaving *lv);

php_stats_t php_stats;

/* from: the lent worker the message came from (NULL: the broker). A
 * worker runs the application's code: it may only answer the request it
 * was given, never name another client's. */
void backend_on_message(backend_t *be, vc_frames_t *fr, const lent_t *from)
{
    VC_CHECK_OBJ_OR_NULL(from, LENT_MAGIC);
    Vc__BackMessage *bm = vc__back_message__unpack(NULL, fr->f[0].len, (const uint8_t *)fr->f[0].data);
    if (bm == NULL) {
        vc_log(VC_LOG_WARN, "backend", "dropped a malformed answer from the pool");
        return;
    }
    if (bm->kind_case == VC__BACK_MESSAGE__KIND_LEND || bm->kind_case == VC__BACK_MESSAGE__KIND_RECALL ||
        bm->kind_case == VC__BACK_MESSAGE__KIND_LEAVING) {
        if (from) /* only the broker lends, recalls and leaves */
            vc_log(VC_LOG_WARN, "backend", "dropped a lend, recall or leaving from worker %d", from->pid);
        else if (bm->kind_case == VC__BACK_MESSAGE__KIND_LEND)
            lent_on_lend(be, bm->lend);
        else if (bm->kind_case == VC__BACK_MESSAGE__KIND_RECALL)
            lent_on_recall(be, bm->recall);
        else
            on_leaving(be, bm->leaving);
        vc__back_message__free_unpacked(bm, NULL);
        return;
    }
    uint64_t id = bm->kind_case == VC__BACK_MESSAGE__KIND_HEAD      ? bm->head->id
                  : bm->kind_case == VC__BACK_MESSAGE__KIND_CHUNK   ? bm->chunk->id
                  : bm->kind_case == VC__BACK_MESSAGE__KIND_PUBLISH ? bm->publish->id
                                                                    : 0;
    preq_t *p = find(be, id);
    if (from && (from->job == NULL || from->job != p))
        p = NULL;
    /* And the broker answers only what it was sent: not a request that
     * waits here for a lent worker, or runs on one (found by
     * fuzz_front_link: a queued request "answered" lost the message it
     * was to be sent as). */
    if (from == NULL && p && (p->queued || p->lw))
        p = NULL;
    if (bm->kind_case == VC__BACK_MESSAGE__KIND_PUBLISH) {
        /* vc_publish(): on the site of the request that ran it, even if
         * its client has left (the request is still ours until PHP ends). */
        seam_php_publish(p ? p->site : NULL, bm->publish);
    } else if (p == NULL || p->req == NULL || p->given_up) {
        /* The client left; the answer has nowhere to go. */
    } else if (bm->kind_case == VC__BACK_MESSAGE__KIND_HEAD && !p->started) {
        on_head(be, p, bm->head, fr);
    } else if (bm->kind_case == VC__BACK_MESSAGE__KIND_CHUNK && p->started) {
        if (!p->bodiless)
            stream_append(p, fr, 1);
        if (bm->chunk->final) {
            p->final_seen = 1;
            p->aborted = bm->chunk->aborted;
        }
        stream_kick(p);
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
    VC_KEYS_EACH(&be->preqs, k)
    {
        preq_t *p = VC_CONTAINER(k, preq_t, link);
        if (p->req && !p->given_up && !p->final_seen && n < cap)
            lost[n++] = p;
    }
    for (size_t i = 0; i < n; i++)
        lent_unqueue(be, lost[i]);
    if (n)
        vc_log(VC_LOG_ERR, "backend", "the PHP pool went away with %zu requests: 502 for those not yet answered", n);
    for (size_t i = 0; i < n; i++) {
        preq_t *p = lost[i];
        if (p->started) {
            p->final_seen = 1;
            p->aborted = 1;
            stream_kick(p); /* may dispose p */
        } else {
            p->given_up = 1;
            php_stats.errors_5xx++;
            h2o_send_error_generic(p->req, 502, "Bad Gateway", "Bad Gateway: the PHP pool went away\n", 0);
        }
    }
    free(lost);
}

void backend_track(backend_t *be, preq_t *p)
{
    vc_keys_add(&be->preqs, &p->link, p->id);
    be->inflight++;
}

int backend_submit(backend_t *be, site_rt_t *s, h2o_req_t *req, Vc__RequestHead *head)
{
    preq_t *p = h2o_mem_alloc_shared(&req->pool, sizeof(*p), on_dispose);
    memset(p, 0, sizeof(*p));
    p->super.proceed = on_proceed;
    p->super.stop = on_stop;
    p->magic = PREQ_MAGIC;
    stream_init(p);
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
    p->id = ++be->pool->next_id;
    p->sent_ms = vc_mono_ms();
    head->id = p->id;
    p->idempotent = !strcmp(head->method, "GET") || !strcmp(head->method, "HEAD");
    p->script = h2o_strdup(&req->pool, head->script_filename ? head->script_filename : "", SIZE_MAX).base;
    p->site = h2o_strdup(&req->pool, head->site ? head->site : "", SIZE_MAX).base;
    p->srt = s;
    /* Kept until the answer begins: a process that leaves before it ran
     * the request hands it back, and it goes to the successor as it was. */
    Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
    fm.kind_case = VC__FRONT_MESSAGE__KIND_REQUEST;
    fm.request = head;
    p->packed_len = vc__front_message__get_packed_size(&fm);
    p->packed = vc_malloc(p->packed_len);
    vc__front_message__pack(&fm, p->packed);
    return backend_forward(be, p);
}

int backend_forward(backend_t *be, preq_t *p)
{
    VC_ASSERT(!be->leaving && p->be == be && !p->started && p->packed != NULL);
    h2o_req_t *req = p->req;
    if (be->nlent > 0)
        return lent_submit(be, p);
    if (be->ob.out.len - be->ob.out.off > OUT_LIMIT) {
        if (!be->told_absent)
            vc_log(VC_LOG_ERR, "backend", "%u MiB of requests wait for the PHP pool at %s: 503 for new ones",
                   OUT_LIMIT >> 20, be->endpoint);
        be->told_absent = 1;
        p->final_seen = 1; /* nothing to cancel; the pool frees p */
        php_stats.errors_5xx++;
        h2o_send_error_503(req, "Service Unavailable", "The PHP pool is not reachable.\n", 0);
        return -1;
    }
    /* The body is copied into the link's buffer: h2o frees it with the
     * request, which may go before the write. */
    int more = req->entity.base != NULL && req->entity.len > 0;
    backend_send_packed(be, p->packed, p->packed_len, more ? req->entity.base : NULL, more ? req->entity.len : 0);
    backend_track(be, p);
    return 0;
}

void backend_move(preq_t *p, backend_t *be)
{
    VC_ASSERT(!p->started && p->lw == NULL && !p->queued);
    unlink_preq(p);
    p->be = be;
    p->sent_ms = vc_mono_ms();
    backend_forward(be, p);
}

/* Leaving (proto/request.proto), from be's broker. */
static void on_leaving(backend_t *be, const Vc__Leaving *lv)
{
    if (!be->leaving) {
        vc_log(VC_LOG_NOTICE, "backend", "the PHP pool's process at %s is leaving: new requests go to its successor",
               be->endpoint);
        php_pool_succeed(be->pool, be);
        if (!be->leaving)
            return; /* no successor link: the requests stay here */
        Vc__Left left = VC__LEFT__INIT;
        Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
        fm.kind_case = VC__FRONT_MESSAGE__KIND_LEFT;
        fm.left = &left;
        backend_send_message(be, &fm, NULL, 0); /* nothing new follows */
    }
    for (size_t i = 0; i < lv->n_unstarted; i++) {
        preq_t *p = find(be, lv->unstarted[i]);
        /* Handed back: it never ran there. A request whose client left,
         * or that got its 504, stays where it is until disposed. */
        if (p && p->req && !p->started && !p->given_up && !p->final_seen && p->lw == NULL && !p->queued && p->packed)
            backend_move(p, be->pool->cur);
    }
}

void backend_tick(backend_t *be)
{
    lent_tick(be);
    /* Requests whose answer has not begun in front.php_timeout: the pool
     * is gone or wedged (its own limits answer well before this). Collected
     * first: answering one may dispose it at once. */
    uint64_t now = vc_mono_ms(), limit = (uint64_t)be->f->settings->php_timeout_ms;
    preq_t *late[64];
    size_t n = 0;
    VC_KEYS_EACH(&be->preqs, k)
    {
        preq_t *p = VC_CONTAINER(k, preq_t, link);
        if (p->req && !p->final_seen && p->conn)
            p->conn->php_waiting = 1; /* for the watchdog */
        if (p->req && !p->started && !p->given_up && now - p->sent_ms >= limit && n < VC_ARRAY_SIZE(late))
            late[n++] = p;
    }
    for (size_t i = 0; i < n; i++) {
        preq_t *p = late[i];
        lent_unqueue(be, p);
        vc_log(VC_LOG_ERR, "backend", "no answer from PHP for %.*s in %llu ms: 504", (int)p->req->path.len,
               p->req->path.base, (unsigned long long)(now - p->sent_ms));
        php_stats.errors_5xx++;
        p->given_up = 1; /* a late answer is dropped */
        h2o_send_error_generic(p->req, 504, "Gateway Time-out", "Gateway Time-out: PHP did not answer\n", 0);
    }
}

int backend_done(const backend_t *be)
{
    return be->leaving && be->link == NULL && be->inflight == 0 && be->nlent == 0;
}

/* ---- the link ------------------------------------------------------------ */

void backend_outbox_flush(outbox_t *ob, h2o_socket_cb cb)
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

static void connect_link(backend_t *be);
static void on_written(h2o_socket_t *sock, const char *err);

static void on_flush_timer(h2o_timeout_entry_t *entry)
{
    backend_t *be = H2O_STRUCT_FROM_MEMBER(backend_t, flush_entry, entry);
    backend_outbox_flush(&be->ob, on_written);
}

/* Messages of one turn of the loop leave in one write. */
void backend_send_packed(backend_t *be, const void *packed, size_t len, const void *body, size_t blen)
{
    struct iovec f[2] = {{(void *)packed, len}, {(void *)body, blen}};
    vc_link_append(&be->ob.out, f, body ? 2 : 1);
    if (be->ob.sock && !be->ob.writing && !h2o_timeout_is_linked(&be->flush_entry))
        h2o_timeout_link(be->f->ctx.loop, &be->f->ctx.zero_timeout, &be->flush_entry);
}

void backend_send_message(backend_t *be, const Vc__FrontMessage *fm, const void *body, size_t blen)
{
    uint8_t stack[2048];
    size_t len = vc__front_message__get_packed_size(fm);
    uint8_t *packed = len <= sizeof(stack) ? stack : vc_malloc(len);
    vc__front_message__pack(fm, packed);
    backend_send_packed(be, packed, len, body, blen);
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
    be->ob.sock = NULL;
    be->ob.writing = 0;
    vc_link_reset(&be->in);
    vc_link_reset(&be->ob.wbuf);
    /* A process that left is not linked again: its successor is. */
    if (!be->leaving && !h2o_timeout_is_linked(&be->retry_entry))
        h2o_timeout_link(be->f->ctx.loop, &be->retry_timeout, &be->retry_entry);
}

/* The pool's end closed or failed: what was sent is lost (502s), what
 * was not is dropped with it (those requests are among the lost). */
static void link_lost(backend_t *be, const char *why)
{
    if (be->leaving && be->inflight == 0 && be->nlent == 0)
        vc_log(VC_LOG_INFO, "backend", "the PHP pool's leaving process at %s is done with us", be->endpoint);
    else
        vc_log(VC_LOG_ERR, "backend", "lost the link to the PHP pool at %s: %s", be->endpoint, why);
    close_link(be);
    vc_link_reset(&be->ob.out);
    be->told_absent = 1;
    pool_lost(be);
    /* The workers it lent are its again (or die with it). */
    lent_drop_all(be);
}

static void on_written(h2o_socket_t *sock, const char *err)
{
    backend_t *be = sock->data;
    if (be == NULL)
        return;
    be->ob.writing = 0;
    vc_link_reset(&be->ob.wbuf);
    if (err) {
        link_lost(be, err);
        return;
    }
    backend_outbox_flush(&be->ob, on_written);
}

static void key_refused(backend_t *be, const char *why)
{
    if (!be->told_key)
        vc_log(VC_LOG_ERR, "backend", "no link to the PHP pool at %s: %s", be->endpoint, why);
    be->told_key = 1;
    be->key_refused = 1;
}

/* The front's half of vc_link_auth.h: answers the challenge, checks the
 * pool's proof, then lets the requests that waited go. Returns -1 when the
 * link must be dropped (after logging why, once an outage). */
static int authenticate(backend_t *be, const struct iovec *f, int n)
{
    const char *key = be->f->d.cfg->link_key;
    const char *why = NULL;
    if (be->authing == 1) {
        struct iovec frames[3];
        uint8_t mac[VC_LINK_MAC];
        be->auth.key = key;
        if (vc_link_auth_answer(&be->auth, f, n, frames, mac) < 0)
            why = "it did not ask for the link key: is link_key set for the pool?";
        else if (vc_link_send(h2o_socket_get_fd(be->link), frames, 3) < 0)
            why = "the link key's proof could not be sent";
        else
            be->authing = 2;
    } else if (vc_link_auth_check_pool(&be->auth, f, n) < 0) {
        why = "it does not hold the link key (link_key): not our pool";
    } else {
        be->authing = 0;
        be->told_key = 0;
        be->ob.sock = be->link;
        vc_log(VC_LOG_INFO, "backend", "linked to the PHP pool at %s (the link key checked)", be->endpoint);
        backend_outbox_flush(&be->ob, on_written);
    }
    if (why == NULL)
        return 0;
    key_refused(be, why);
    return -1;
}

/* A whole message, as frames, to backend_on_message (they outlive the link's
 * buffer: h2o sends the body from them). */
static int on_link_message(void *arg, const struct iovec *f, int n)
{
    backend_t *be = arg;
    if (be->authing)
        return authenticate(be, f, n) < 0 ? -1 : 0;
    if (vc_link_auth_is_challenge(f, n)) {
        key_refused(be, "it asks for the link key, and none is set (link_key, VC_LINK_KEY)");
        return -1;
    }
    be->told_key = 0; /* it no longer asks */
    vc_frames_copy(&be->fr, f, (size_t)n);
    backend_on_message(be, &be->fr, NULL);
    vc_frames_close(&be->fr);
    return 0;
}

static void on_link_readable(h2o_socket_t *sock, const char *err)
{
    backend_t *be = sock->data;
    if (be == NULL)
        return;
    VC_CHECK_OBJ(be, BACKEND_MAGIC);
    if (err) {
        link_lost(be, err);
        return;
    }
    be->key_refused = 0;
    int rc = vc_link_read(h2o_socket_get_fd(sock), &be->in, 16, on_link_message, be);
    if (be->authing && rc <= 0 && !be->key_refused)
        key_refused(be, "it closed the link during the key's exchange: do both hold the same link_key?");
    if (be->key_refused) {
        close_link(be); /* said once; tried again, quietly */
        return;
    }
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
    /* Over TCP with a key, the requests wait for the key's exchange. */
    const char *key = be->f->d.cfg->link_key;
    be->authing = be->addr.ss_family != AF_UNIX && key && *key ? 1 : 0;
    if (!be->authing) {
        be->ob.sock = sock;
        /* Not again on each try while the pool refuses us for the key. */
        if ((be->was_linked || be->told_absent) && !be->told_key)
            vc_log(VC_LOG_INFO, "backend", "linked to the PHP pool at %s", be->endpoint);
    }
    be->was_linked = 1;
    be->told_absent = 0;
    h2o_socket_dont_read(sock, 1);
    h2o_socket_read_start(sock, on_link_readable);
    if (!be->authing)
        backend_outbox_flush(&be->ob, on_written);
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

backend_t *backend_new(php_pool_t *pool)
{
    front_t *f = pool->f;
    const char *endpoint = pool->endpoint;
    struct sockaddr_storage addr;
    socklen_t len;
    const char *why;
    if (vc_link_address(endpoint, &addr, &len, &why) < 0) {
        vc_log(VC_LOG_ERR, "backend", "the PHP pool endpoint \"%s\": %s", endpoint, why);
        return NULL;
    }
    backend_t *be = vc_calloc(1, sizeof(*be));
    be->magic = BACKEND_MAGIC;
    vc_keys_init(&be->preqs, NBUCKETS);
    /* Waiting for a lent worker beyond the pool's queue_limit: 503 (lent.c). */
    be->queue.max = (size_t)pool->conf->queue_limit;
    be->f = f;
    be->pool = pool;
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
    lent_init(be);
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
    lent_fini(be);
    vc_link_buf_free(&be->in);
    vc_link_buf_free(&be->ob.out);
    vc_link_buf_free(&be->ob.wbuf);
    vc_frames_fini(&be->fr);
    free(be->endpoint);
    be->magic = 0;
    vc_keys_fini(&be->preqs);
    free(be);
    *pbe = NULL;
}
