/*
 * Workers the pool lends this front (proto/request.proto: Lend): requests
 * go to them straight, without waking the broker, or wait here while all
 * of them are busy, under the pool's own limits (queue_limit: 503,
 * queue_timeout: 504). With no worker lent, requests go to the broker as
 * before (backend.c). What each worker does is written on the board the
 * broker reads (libcommon/vc_board.h).
 */
#include "backend_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vc_wire.h"

#define NEED_EVERY_MS 10

static void board_unref(board_ref_t *b)
{
    if (b && --b->refs == 0) {
        munmap(b->map, sizeof(vc_board_t));
        free(b);
    }
}

static vc_board_t *board(backend_t *be)
{
    return be->board ? be->board->map : NULL;
}

static preq_t *queue_head(const backend_t *be)
{
    return be->queue.head ? VC_QUEUE_ITEM(be->queue.head, preq_t, qlink) : NULL;
}

static void publish_queue(backend_t *be)
{
    if (board(be))
        board(be)->queued = (uint32_t)be->queue.len;
}

static void enqueue(backend_t *be, preq_t *p, int at_head)
{
    p->queued = 1;
    p->queued_ms = be->waited_ms = vc_mono_ms();
    if (at_head)
        vc_queue_push_head(&be->queue, &p->qlink);
    else
        vc_queue_push(&be->queue, &p->qlink);
    publish_queue(be);
}

void lent_unqueue(backend_t *be, preq_t *p)
{
    if (!p->queued)
        return;
    vc_queue_remove(&be->queue, &p->qlink);
    p->queued = 0;
    publish_queue(be);
}

static void lent_lost(lent_t *l, const char *why);
static void on_lent_readable(h2o_socket_t *sock, const char *err);
static void need(backend_t *be);

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
        backend_outbox_flush(&l->ob, on_lent_written);
}

void lent_flush(lent_t *l)
{
    VC_CHECK_OBJ(l, LENT_MAGIC);
    backend_outbox_flush(&l->ob, on_lent_written);
}

void lent_forget(preq_t *p, int tell)
{
    lent_t *l = p->lw;
    char c = WIRE_CANCEL;
    int i = 0;
    while (i < l->nahead && l->ahead[i] != p)
        i++;
    if (i < l->nahead) {
        /* ["C"][id]: not begun yet, it never runs (vc_wire.h). */
        uint64_t id = htole64(p->id);
        l->ahead[i] = NULL;
        vc_link_append(&l->ob.out, (struct iovec[]){{&c, 1}, {&id, sizeof(id)}}, 2);
        backend_outbox_flush(&l->ob, on_lent_written);
    } else {
        if (tell) {
            vc_link_append(&l->ob.out, &(struct iovec){&c, 1}, 1);
            backend_outbox_flush(&l->ob, on_lent_written);
        }
        l->job = NULL;
    }
    p->lw = NULL;
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

/* p (NULL: one whose client left, held behind the last) is what l runs
 * now: on its board entry, which the broker reads. */
static void become_job(lent_t *l, preq_t *p, pipeline_key_t key)
{
    vc_board_slot_t *bs = l->bs;
    vc_board_begin(bs);
    bs->state = VC_BOARD_BUSY;
    bs->started = 0;
    bs->timed_out = 0;
    bs->idempotent = p ? (uint32_t)p->idempotent : 1;
    bs->retries = p ? (uint32_t)p->retries : 0;
    bs->since_ms = vc_mono_ms();
    bs->what[0] = bs->script[0] = '\0';
    if (p) {
        /* Copied, not formatted: this runs for every request. */
        h2o_req_t *req = p->req;
        size_t at = put_text(bs->what, sizeof(bs->what), 0, req->method.base, req->method.len);
        at = put_text(bs->what, sizeof(bs->what), at, " ", 1);
        put_text(bs->what, sizeof(bs->what), at, req->path.base, req->path.len);
        put_text(bs->script, sizeof(bs->script), 0, p->script ? p->script : "", p->script ? strlen(p->script) : 0);
    }
    vc_board_end(bs);
    l->busy = 1;
    l->finishing = 0;
    l->job = p;
    l->job_key = key;
    l->job_began_us = pipeline_now_us();
}

/* [front-id][FrontMessage][body] into l's link, as the broker passes it
 * on; the worker echoes the front-id, which means nothing here. */
static void write_request(lent_t *l, preq_t *p)
{
    h2o_req_t *req = p->req;
    static const char fid[FRONT_ID_LEN];
    int more = req->entity.base != NULL && req->entity.len > 0;
    struct iovec f[3] = {{(void *)fid, sizeof(fid)}, {p->packed, p->packed_len}, {req->entity.base, req->entity.len}};
    vc_link_append(&l->ob.out, f, more ? 3 : 2);
    if (!p->idempotent || p->retries > 0) {
        free(p->packed);
        p->packed = NULL;
    }
    p->lw = l;
    backend_outbox_flush(&l->ob, on_lent_written);
}

/* The request goes to the worker: its board entry first, so the broker
 * never sees a busy worker as idle. */
static void run_on(lent_t *l, preq_t *p)
{
    VC_ASSERT(!l->busy && l->job == NULL && p->lw == NULL && !p->queued);
    become_job(l, p, p->cost_key);
    write_request(l, p);
}

/* The queue's head waits in l's link behind its job (pipeline.c). */
static void hold_ahead(lent_t *l, preq_t *p)
{
    VC_ASSERT(l->busy && l->nahead < PIPELINE_DEPTH && p->lw == NULL);
    lent_unqueue(l->be, p);
    l->ahead[l->nahead] = p;
    l->ahead_key[l->nahead++] = p->cost_key;
    php_stats.pipelined++;
    write_request(l, p);
}

static lent_t *idle_lent(backend_t *be)
{
    for (size_t i = 0; i < be->nlent; i++)
        if (!be->lent[i]->busy && !be->lent[i]->recalled)
            return be->lent[i];
    return NULL;
}

/* The queue's head, behind the busy worker it may wait in (pipeline.c):
 * one that holds the fewest, and of those the one whose job began first. */
static void pipeline_head(backend_t *be)
{
    preq_t *head = queue_head(be);
    lent_t *best = NULL;
    uint64_t now = pipeline_now_us();
    for (size_t i = 0; head && i < be->nlent; i++) {
        lent_t *l = be->lent[i];
        if (pipeline_may(be, l, head, now) &&
            (!best || l->nahead < best->nahead || (l->nahead == best->nahead && l->job_began_us < best->job_began_us)))
            best = l;
    }
    if (best)
        hold_ahead(best, head);
}

int lent_submit(backend_t *be, preq_t *p)
{
    h2o_req_t *req = p->req;
    board(be)->accepted++;
    p->cost_key = pipeline_key(p);
    lent_t *l = idle_lent(be);
    /* With no idle worker, one serving connections may take another. */
    if (lend_conn_try(be, l, p))
        return 0;
    if (l == NULL && vc_queue_full(&be->queue)) {
        board(be)->rejected_503++;
        php_stats.errors_5xx++;
        vc_log(VC_LOG_WARN, "backend", "queue full (%zu waiting): 503 for %.*s %.*s", be->queue.len,
               (int)req->method.len, req->method.base, (int)req->path.len, req->path.base);
        p->final_seen = 1; /* nothing to cancel */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
        h2o_send_error_503(req, "Service Unavailable", "Service Unavailable: every PHP worker is busy\n", 0);
        return -1;
    }
    backend_track(be, p);
    if (l) {
        run_on(l, p);
    } else {
        /* A worker serving a connection itself hands it back: it is
         * wanted for what waits here. */
        for (size_t i = 0; i < be->nlent; i++)
            lend_conn_want(be->lent[i]);
        enqueue(be, p, 0);
        need(be);
        if (queue_head(be) == p) /* behind requests that did not fit, it waits its turn */
            pipeline_head(be);
    }
    return 0;
}

void lent_remove(lent_t *l)
{
    VC_CHECK_OBJ(l, LENT_MAGIC);
    backend_t *be = l->be;
    if (l->job)
        l->job->lw = NULL;
    for (int i = 0; i < l->nahead; i++)
        if (l->ahead[i])
            l->ahead[i]->lw = NULL;
    if (l->owed)
        be->nowed--;
    lend_conn_drop(l);
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
    l->magic = 0;
    free(l);
}

/* With no worker lent any more, what waits here goes to the broker (its
 * packed message stays with it until the answer begins), or, if this
 * process is leaving, to its successor. */
static void requeue_to_pool(backend_t *be)
{
    if (be->nlent > 0)
        return;
    for (preq_t *p; (p = queue_head(be)) != NULL;) {
        lent_unqueue(be, p);
        if (be->leaving) {
            backend_move(p, be->pool->cur);
            continue;
        }
        h2o_req_t *req = p->req;
        int more = req->entity.base != NULL && req->entity.len > 0;
        backend_send_packed(be, p->packed, p->packed_len, more ? req->entity.base : NULL, more ? req->entity.len : 0);
    }
}

/* lost: the worker's link ended, and outcome is what was done for its
 * request (proto/request.proto: GiveBack); else the worker is given back.
 * instead: the slot of the worker this one goes back in place of, or -1. */
static void tell_given_back(backend_t *be, uint32_t slot, int lost, Vc__Outcome outcome, long instead)
{
    Vc__GiveBack g = VC__GIVE_BACK__INIT;
    g.slot = slot;
    g.lost = lost;
    g.outcome = outcome;
    g.instead = instead >= 0;
    g.instead_of = instead >= 0 ? (uint32_t)instead : 0;
    Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
    fm.kind_case = VC__FRONT_MESSAGE__KIND_GIVE_BACK;
    fm.give_back = &g;
    backend_send_message(be, &fm, NULL, 0);
}

static void give_back(lent_t *l, long instead)
{
    backend_t *be = l->be;
    uint32_t slot = l->slot;
    lent_remove(l); /* closes this end first: the broker reads it next */
    tell_given_back(be, slot, 0, VC__OUTCOME__OUTCOME_NONE, instead);
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
    if (queue_head(be) == NULL)
        return;
    if (vc_mono_ms() - be->need_ms >= NEED_EVERY_MS) {
        be->need_ms = vc_mono_ms();
        Vc__Need n = VC__NEED__INIT;
        Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
        fm.kind_case = VC__FRONT_MESSAGE__KIND_NEED;
        fm.need = &n;
        backend_send_message(be, &fm, NULL, 0);
    }
    /* And again while requests wait: the broker moves only a worker idle
     * when the Need comes, and one at another front may go idle a moment
     * later (two requests that began together end together), with nothing
     * here to ask again until a request here starts. */
    if (!h2o_timeout_is_linked(&be->need_entry))
        h2o_timeout_link(be->f->ctx.loop, &be->need_timeout, &be->need_entry);
}

static void on_need_timer(h2o_timeout_entry_t *entry)
{
    need(H2O_STRUCT_FROM_MEMBER(backend_t, need_entry, entry));
}

void lent_init(backend_t *be)
{
    be->need_entry.cb = on_need_timer;
    h2o_timeout_init(be->f->ctx.loop, &be->need_timeout, NEED_EVERY_MS);
}

/* After l's messages were read: idle, it is given back if the pool
 * asked, else takes the next request waiting here; busy, it may hold the
 * one after behind its job (pipeline.c), written now so that it is there
 * when the job ends. May free l. */
static int goes_back(const lent_t *l);

static void settle(lent_t *l)
{
    backend_t *be = l->be;
    lent_t *k;
    if (l->nconns > 0 && (goes_back(l) || queue_head(be))) {
        lend_conn_want(l);
    } else if (l->busy) {
        /* below */
    } else if (l->recalled || l->owed) {
        give_back(l, -1);
        return;
    } else if ((k = owed_lent(be)) != NULL) {
        k->owed = 0;
        be->nowed--;
        give_back(l, k->slot);
        return;
    } else if (queue_head(be)) {
        preq_t *p = queue_head(be);
        lent_unqueue(be, p);
        run_on(l, p);
        need(be);
    }
    while (l->busy && pipeline_may(be, l, queue_head(be), pipeline_now_us()))
        hold_ahead(l, queue_head(be));
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
    if (l->job)
        l->job->lw = NULL; /* a job still here had no whole answer */
    l->job = NULL;
}

/* l's job has ended ("D", or "R"): what it holds behind comes next, or
 * it is idle. */
static void advance(lent_t *l)
{
    if (l->job_key.path)
        pipeline_record(l->be, l->job_key, pipeline_now_us() - l->job_began_us);
    if (l->job)
        l->job->lw = NULL; /* a job still here had no whole answer */
    l->job = NULL;
    if (l->nahead == 0) {
        went_idle(l);
        return;
    }
    preq_t *p = l->ahead[0];
    pipeline_key_t key = l->ahead_key[0];
    l->nahead--;
    memmove(l->ahead, l->ahead + 1, (size_t)l->nahead * sizeof(l->ahead[0]));
    memmove(l->ahead_key, l->ahead_key + 1, (size_t)l->nahead * sizeof(l->ahead_key[0]));
    become_job(l, p, key);
}

/* p's worker is gone, or done with it, and p's answer is not whole: cut
 * if it had begun, else 502. May dispose p. */
static void fail_unanswered(backend_t *be, preq_t *p)
{
    if (p->started) {
        p->final_seen = 1;
        p->aborted = 1;
        stream_kick(p);
        return;
    }
    p->given_up = p->final_seen = 1;
    php_stats.errors_5xx++;
    board(be)->failed_502++;
    h2o_send_error_generic(p->req, 502, "Bad Gateway", "Bad Gateway: the PHP worker died\n", 0);
}

/* Once idle, l goes back to the pool (settle): its link is not read
 * further, so the broker finds every byte the worker sent after. */
static int goes_back(const lent_t *l)
{
    return l->recalled || l->owed || l->be->nowed > 0;
}

/* ["R"], or [flag][front-id][BackMessage][body...] (libcommon/vc_wire.h).
 * Asks for no more reads once the worker is idle and must go back. */
static int on_lent_message(void *arg, const struct iovec *f, int n)
{
    lent_t *l = arg;
    backend_t *be = l->be;
    if (f[0].iov_len != 1)
        return 0;
    char flag = *(const char *)f[0].iov_base;
    if (flag == WIRE_CONN_BACK || flag == WIRE_CONN_CLOSED) {
        if (l->nconns > 0) {
            lend_conn_ended(l, f, n);
            if (!l->leaving && l->nconns == 0)
                went_idle(l);
        }
        return !l->busy && goes_back(l);
    }
    if (flag == WIRE_CONN_LOG) {
        lend_conn_log(l, f, n);
        return 0;
    }
    if (l->nconns > 0)
        return 0; /* it serves connections: nothing else is its to say */
    if (flag == WIRE_READY) {
        /* After "F"; or for a job it never began (its client left while
         * it was held behind another, vc_wire.h). */
        preq_t *p = l->busy && !l->finishing ? l->job : NULL;
        if (l->busy)
            advance(l);
        /* Ready with its request unanswered: only native code in the
         * worker sends that. Its client is not left waiting (found by
         * fuzz_front_link: the request kept a pointer to the worker, freed
         * once given back). */
        if (p && p->req && !p->final_seen) {
            vc_log(VC_LOG_ERR, "backend", "lent worker %d said it was ready before it answered its request", l->pid);
            fail_unanswered(be, p);
        }
        return !l->busy && goes_back(l);
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
    /* Copied out of the link's buffer, which is read again at once
     * (docs/BENCHMARKS.md: frames pointing into it cost more than this
     * copy). */
    vc_frames_copy(&be->fr, f + 2, (size_t)n - 2);
    backend_on_message(be, &be->fr, l); /* may dispose the job's request */
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
        advance(l);
        return !l->busy && goes_back(l);
    }
    if (flag == WIRE_FINAL) {
        l->finishing = 1;
        vc_board_begin(l->bs);
        l->bs->state = VC_BOARD_FINISHING;
        vc_board_end(l->bs);
    }
    return l->paused;
}

void lent_pause(lent_t *l, int on)
{
    VC_CHECK_OBJ(l, LENT_MAGIC);
    if (l->paused == on || l->ob.sock == NULL)
        return;
    l->paused = on;
    if (on)
        h2o_socket_read_stop(l->ob.sock);
    else
        h2o_socket_read_start(l->ob.sock, on_lent_readable);
}

static void on_lent_readable(h2o_socket_t *sock, const char *err)
{
    lent_t *l = sock->data;
    if (l == NULL)
        return;
    VC_CHECK_OBJ(l, LENT_MAGIC);
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

/* p, never begun, runs elsewhere: on an idle lent worker, first in the
 * queue, or at the successor if this process is leaving. */
static void run_again(backend_t *be, preq_t *p)
{
    p->retries++;
    board(be)->retried++;
    if (be->leaving) {
        backend_move(p, be->pool->cur);
        return;
    }
    lent_t *o = idle_lent(be);
    if (o)
        run_on(o, p);
    else
        enqueue(be, p, 1);
}

/* The worker's link ended (it exited, or was killed): its client is
 * answered as the broker would (and as the broker reports it, from the
 * same board): the answer cut if it had begun; 504 if the broker killed
 * it for running too long; a GET or HEAD not begun runs once more; else
 * 502. An idle worker just goes. */
static void lent_lost(lent_t *l, const char *why)
{
    backend_t *be = l->be;
    preq_t *p = l->job, *behind[PIPELINE_DEPTH];
    int nbehind = l->nahead;
    memcpy(behind, l->ahead, sizeof(behind));
    uint32_t slot = l->slot;
    int timed_out = (int)__atomic_load_n(&l->bs->timed_out, __ATOMIC_ACQUIRE);
    int running = l->busy && !l->finishing && l->nconns == 0;
    Vc__Outcome outcome = running ? VC__OUTCOME__OUTCOME_CLIENT_GONE : VC__OUTCOME__OUTCOME_NONE;
    if (running && l->job == NULL)
        board(be)->completed++; /* its client had left */
    vc_log(running ? VC_LOG_WARN : VC_LOG_DEBUG, "backend", "lent worker %d is gone (%s)%s", l->pid, why,
           running ? " while running a request" : "");
    int held = l->nconns, rescued = lend_conn_rescue(l);
    if (held > 0)
        vc_log(VC_LOG_INFO, "backend", "worker %d held %d lent connections: %d go on here, %d are closed", l->pid, held,
               rescued, held - rescued);
    lent_remove(l);
    if (p && p->req && !p->final_seen) {
        p->lw = NULL;
        h2o_req_t *req = p->req;
        outcome = vc_outcome_of_death(p->started, timed_out, p->idempotent && p->retries == 0 && p->packed);
        switch (outcome) {
        case VC__OUTCOME__OUTCOME_ABORTED:
            fail_unanswered(be, p); /* cut; may dispose p */
            break;
        case VC__OUTCOME__OUTCOME_RETRIED: run_again(be, p); break;
        case VC__OUTCOME__OUTCOME_TIMED_OUT:
            p->given_up = p->final_seen = 1;
            php_stats.errors_5xx++;
            board(be)->timed_out_504++;
            h2o_send_error_generic(req, 504, "Gateway Time-out", "Gateway Timeout: the script ran too long\n", 0);
            break;
        default:
            fail_unanswered(be, p); /* 502 */
            break;
        }
    } else if (p && p->final_seen) {
        outcome = VC__OUTCOME__OUTCOME_NONE; /* its answer was whole */
    }
    /* Held behind the job, it never began: a GET or HEAD not tried yet
     * (pipeline.c), it runs again as the rules say. */
    for (int i = nbehind; i-- > 0;) { /* first in the queue in their order */
        preq_t *b = behind[i];
        if (b == NULL || b->req == NULL || b->final_seen)
            continue;
        if (vc_outcome_of_death(0, 0, b->idempotent && b->retries == 0 && b->packed) == VC__OUTCOME__OUTCOME_RETRIED)
            run_again(be, b);
        else
            fail_unanswered(be, b); /* 502 */
    }
    tell_given_back(be, slot, 1, outcome, -1);
    requeue_to_pool(be);
}

static lent_t *lent_by_slot(backend_t *be, uint32_t slot)
{
    for (size_t i = 0; i < be->nlent; i++)
        if (be->lent[i]->slot == slot)
            return be->lent[i];
    return NULL;
}

/* What came with a Lend is what it says, or refused: a descriptor of
 * another kind (a broker's fault, or descriptors out of step with their
 * messages) made epoll refuse the worker's link, and libh2o then stopped
 * updating every socket (found by fuzz_front_link); a board smaller than
 * a board faults when read. */
static int is_stream_socket(int fd)
{
    struct stat st;
    int type = 0;
    socklen_t len = sizeof(type);
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
           getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

static int is_board(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size >= sizeof(vc_board_t);
}

void lent_on_lend(backend_t *be, const Vc__Lend *m)
{
    int fd = vc_link_take_fd(&be->in);
    if (fd >= 0 && !is_stream_socket(fd)) {
        close(fd);
        fd = -1;
    }
    if (m->board) {
        int bfd = vc_link_take_fd(&be->in);
        void *map =
            is_board(bfd) ? mmap(NULL, sizeof(vc_board_t), PROT_READ | PROT_WRITE, MAP_SHARED, bfd, 0) : MAP_FAILED;
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
        tell_given_back(be, m->slot, 0, VC__OUTCOME__OUTCOME_NONE, -1);
        return;
    }
    lent_t *l = vc_calloc(1, sizeof(*l));
    l->magic = LENT_MAGIC;
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
    VC_GROW(be->lent, be->caplent, be->nlent + 1, 16);
    be->lent[be->nlent++] = l;
    went_idle(l);
    settle(l);
}

/* A recall with any set, for a worker busy since the broker read the
 * board, is answered by an idle one now, or by the first to be idle. */
void lent_on_recall(backend_t *be, const Vc__Recall *m)
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

void lent_tick(backend_t *be)
{
    /* Waiting here for a lent worker too long: 504, as the broker's own
     * queue does (the queue is in arrival order). */
    uint64_t qlimit = (uint64_t)be->pool->conf->queue_timeout_ms;
    while (queue_head(be) && vc_mono_ms() - queue_head(be)->queued_ms >= qlimit) {
        preq_t *p = queue_head(be);
        lent_unqueue(be, p);
        vc_log(VC_LOG_WARN, "backend", "%.*s waited %llu ms for a worker: 504", (int)p->req->path.len,
               p->req->path.base, (unsigned long long)(vc_mono_ms() - p->queued_ms));
        board(be)->timed_out_504++;
        php_stats.errors_5xx++;
        p->given_up = p->final_seen = 1;
        h2o_send_error_generic(p->req, 504, "Gateway Time-out", "Gateway Timeout: no PHP worker became free\n", 0);
    }
}

void lent_drop_all(backend_t *be)
{
    while (be->nlent > 0)
        lent_remove(be->lent[0]);
}

void lent_fini(backend_t *be)
{
    if (h2o_timeout_is_linked(&be->need_entry))
        h2o_timeout_unlink(&be->need_entry);
    h2o_timeout_dispose(be->f->ctx.loop, &be->need_timeout);
    lent_drop_all(be);
    free(be->lent);
    be->lent = NULL;
    board_unref(be->board);
    be->board = NULL;
}
