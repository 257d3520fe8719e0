/*
 * Leaving (proto/request.proto): the pool process hands over to its
 * successor (vc restart php) or stops. It takes no new request; what
 * waited in its queue goes back to its front, which sends it to the
 * successor; what runs is finished here; and a front's link is closed as
 * soon as the front said Left (so nothing it sent is still on the way) and
 * nothing of that front's is left here: the front's old link never
 * outlives the work on it.
 */
#include "vc_util.h"
#include "broker_internal.h"

/* Leaving{unstarted: [req_id]} to the front fid names. */
void broker_bounce(broker_t *d, const void *fid, uint64_t req_id)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    Vc__Leaving lv = VC__LEAVING__INIT;
    lv.n_unstarted = 1;
    lv.unstarted = &req_id;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_LEAVING;
    bm.leaving = &lv;
    broker_to_front_id(d, fid, &bm, NULL, 0);
}

/* Every job still queued goes back to its front, which never saw it
 * start: a POST runs once, at the successor. */
void broker_bounce_queue(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    for (job_t *j; (j = broker_dequeue(d)) != NULL;) {
        if (j->fr.f[0].len == FRONT_ID_LEN)
            broker_bounce(d, j->fr.f[0].data, j->req_id);
        broker_job_free(j);
    }
}

void broker_leave(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (d->leaving)
        return;
    d->leaving = 1;
    fronts_unlisten(d->fronts);
    char ids[FRONTS_MAX][FRONT_ID_LEN];
    size_t n = fronts_ids(d->fronts, ids, FRONTS_MAX);
    Vc__Leaving lv = VC__LEAVING__INIT;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_LEAVING;
    bm.leaving = &lv;
    for (size_t i = 0; i < n; i++)
        broker_to_front_id(d, ids[i], &bm, NULL, 0);
    vc_log(VC_LOG_NOTICE, "leaving", "leaving: %zu front%s told, %zu queued request%s handed back", n,
           n == 1 ? "" : "s", d->queue.len, d->queue.len == 1 ? "" : "s");
    broker_bounce_queue(d);
    /* Idle workers go now, busy ones when they finish; lent ones are
     * recalled, and come back as their fronts finish with them. */
    broker_drain(d);
}

/* Whether anything of fid's is still here: a worker lent to it or running
 * its request, or a lent worker's exit waiting for its word. */
static int holds_for(const broker_t *d, const void *fid)
{
    for (size_t i = 0; i < d->nw; i++) {
        const worker_t *w = &d->w[i];
        if (w->state == W_LENT && memcmp(w->lent_to, fid, FRONT_ID_LEN) == 0)
            return 1;
        if (w->job && w->job->fr.f[0].len == FRONT_ID_LEN && memcmp(w->job->fr.f[0].data, fid, FRONT_ID_LEN) == 0)
            return 1;
    }
    for (size_t i = 0; i < d->nlost; i++)
        if (memcmp(d->lost[i].fid, fid, FRONT_ID_LEN) == 0)
            return 1;
    return 0;
}

void broker_release_fronts(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (!d->leaving)
        return;
    char ids[FRONTS_MAX][FRONT_ID_LEN];
    size_t n = fronts_ids(d->fronts, ids, FRONTS_MAX);
    for (size_t i = 0; i < n; i++)
        if (!holds_for(d, ids[i]))
            fronts_close_if_done(d->fronts, ids[i]);
}

int broker_has_left(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    /* Workers alone are not enough: a front that has not read our Leaving
     * yet may still send a request, to be handed back rather than lost
     * with the link (over TCP a small pool's workers finish in a
     * millisecond, before the front has answered). */
    return d->leaving && d->nw == 0 && fronts_linked(d->fronts) == 0;
}
