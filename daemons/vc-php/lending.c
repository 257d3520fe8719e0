/*
 * Workers lent to fronts. A worker idle in the broker goes to a front
 * linked over a Unix socket, which then sends it requests and reads its
 * answers itself: a request wakes two processes (front and worker)
 * instead of four. The broker keeps its own copy of the link, out of its
 * epoll set, and has it back when the front gives the worker back (a
 * Recall, or the front found no more use) or goes away.
 */
#include "vc_util.h"
#include "broker_internal.h"

vc_board_slot_t *broker_board_slot(broker_t *d, const worker_t *w)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    vc_board_t *b = fronts_board(d->fronts, w->lent_to);
    return b && w->slot >= 0 ? &b->slot[w->slot] : NULL;
}

/* What a lent worker does, per its front's board (idle if unknown). */
void broker_lent_state(broker_t *d, const worker_t *w, vc_board_slot_t *out)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    vc_board_slot_t *bs = broker_board_slot(d, w);
    if (bs)
        vc_board_read(bs, out);
    else
        memset(out, 0, sizeof(*out));
}

int broker_take_slot(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
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

void broker_lend(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (!d->lending)
        return;
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        if (w->state != W_IDLE || w->dying || w->fd < 0 || w->slot < 0 || w->in.len > w->in.off)
            continue;
        /* Only a worker with nothing of the broker's may go. */
        VC_ASSERT(w->job == NULL && w->slot < VC_BOARD_SLOTS && d->slot_used[w->slot]);
        char fid[FRONT_ID_LEN];
        int moved = w->moving && fronts_lend(d->fronts, w->move_to, (uint32_t)w->slot, w->pid, w->fd) == 0;
        w->moving = 0;
        if (moved)
            memcpy(fid, w->move_to, FRONT_ID_LEN);
        else if (!fronts_lender(d->fronts, fid) || fronts_lend(d->fronts, fid, (uint32_t)w->slot, w->pid, w->fd) < 0)
            return;
        epoll_ctl(d->epfd, EPOLL_CTL_DEL, w->fd, NULL);
        w->reading = 0;
        broker_worker_state(w, W_LENT);
        w->recalled = 0;
        w->timed_out = 0;
        memcpy(w->lent_to, fid, FRONT_ID_LEN);
        w->since_ms = vc_mono_ms();
    }
}

/* A worker that must itself come back (to exit), not just any worker. */
static int must_return(const broker_t *d, const worker_t *w)
{
    return w->gen != d->gen || w->recycle || w->retire;
}

/* A worker asked back only because the pool needs one (requests wait
 * here, or at another front) may be answered by any idle one: the front
 * may have made this one busy since the board said it was idle, and its
 * request may be long. */
void broker_recall(broker_t *d, worker_t *w)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (w->state != W_LENT || w->recalled)
        return;
    Vc__Recall r = VC__RECALL__INIT;
    r.slot = (uint32_t)w->slot;
    r.any = !must_return(d, w);
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_RECALL;
    bm.recall = &r;
    broker_to_front_id(d, w->lent_to, &bm, NULL, 0);
    w->recalled = 1;
}

/* The link is the broker's again; s is the worker's last board entry. */
static void take_back(broker_t *d, worker_t *w, const vc_board_slot_t *s)
{
    VC_ASSERT(w->state == W_LENT);
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
        vc_log(VC_LOG_ERR, "broker", "cannot watch worker %d's link again: killed", (int)w->pid);
        broker_signal(w, SIGKILL);
    }
    broker_make_idle(d, w);
}

/* The front gave w back; if in place of kept (recalled with any), kept
 * stays lent and w does what kept was asked back for. */
void broker_given_back(broker_t *d, worker_t *w, worker_t *kept)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    VC_ASSERT(kept == NULL || kept->state == W_LENT);
    if (kept && kept != w && kept->recalled) {
        kept->recalled = 0;
        if (w && kept->moving) {
            w->moving = 1;
            memcpy(w->move_to, kept->move_to, FRONT_ID_LEN);
        }
        kept->moving = 0;
        if (must_return(d, kept)) /* became so since: ask for it alone */
            broker_recall(d, kept);
    }
    if (w) {
        vc_board_slot_t s;
        broker_lent_state(d, w, &s);
        take_back(d, w, &s);
        broker_pump(d);
    }
}

worker_t *broker_lent_worker(broker_t *d, const void *fid, uint32_t slot)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].state == W_LENT && d->w[i].slot == (int)slot && !memcmp(d->w[i].lent_to, fid, FRONT_ID_LEN))
            return &d->w[i];
    return NULL;
}

/* A front has requests waiting and all its workers busy (with several
 * front processes): one worker idle here, or idle at another front, goes
 * to it. One a time, so fronts trade workers as their loads shift rather
 * than all at once. */
void broker_move_one(broker_t *d, const void *fid)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    worker_t *pick = NULL;
    for (size_t i = 0; i < d->nw && pick == NULL; i++) {
        worker_t *w = &d->w[i];
        if (w->state == W_IDLE && !w->dying && w->slot >= 0)
            pick = w;
        else if (w->state == W_LENT && !w->recalled && memcmp(w->lent_to, fid, FRONT_ID_LEN) != 0) {
            vc_board_slot_t *bs = broker_board_slot(d, w);
            if (bs && __atomic_load_n(&bs->state, __ATOMIC_RELAXED) == VC_BOARD_IDLE)
                pick = w;
        }
    }
    if (pick == NULL)
        return;
    pick->moving = 1;
    memcpy(pick->move_to, fid, FRONT_ID_LEN);
    if (pick->state == W_IDLE)
        broker_lend(d);
    else
        broker_recall(d, pick);
}

/* A front linked: it gets the idle workers (a front linked over TCP
 * gets none). A front left: its idle workers come back. A busy one is killed: its
 * client is gone with the front, and the front may have read part of its
 * answer or written part of a request, so its link holds no clean message
 * boundary for the broker to start from. */
void broker_on_front_change(void *arg, const void *fid, vc_board_t *board, int linked)
{
    broker_t *d = arg;
    if (linked) {
        broker_pump(d); /* the workers idle here go to it, at once */
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
            vc_log(VC_LOG_WARN, "broker", "worker %d was running %s for a front that left: killed", (int)w->pid,
                   s.what);
            broker_worker_state(w, W_RETIRED);
            broker_signal(w, SIGKILL);
        }
    }
    broker_report_overdue(d, fid);
    /* The workers it gave back may be the ones the queue asked back from
     * it (a Recall it never answered): they take the queue now. */
    broker_pump(d);
    if (board) {
        d->accepted += board->accepted;
        d->completed += board->completed;
        d->rejected_503 += board->rejected_503;
        d->timed_out_504 += board->timed_out_504;
        d->failed_502 += board->failed_502;
        d->retried += board->retried;
    }
}
