/*
 * How many workers the pool has: generations (reloads), the dynamic size
 * (pool.h), `vc scale`, and the limits checked once a tick.
 */
#include "vc_util.h"
#include "broker_internal.h"
#include "vc_events.h"

int broker_wanted(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (vc_mono_ms() < d->spawn_after_ms)
        return 0;
    /* Every worker of the generation counts, one finishing a script's
     * tail after fastcgi_finish_request() too: it still runs PHP, and the
     * pool's size bounds what runs (test_13_hostile). */
    long have = 0;
    for (size_t i = 0; i < d->nw; i++)
        have += d->w[i].gen == d->gen;
    long want = (long)d->size.target - have - d->spawning;
    return want > 0 ? (int)want : 0;
}

void broker_new_generation(broker_t *d, unsigned gen, const vc_config_t *cfg)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    if (d->cfg != cfg && gen != UINT_MAX)
        pool_size_reconfigure(&d->size, cfg);
    d->gen = gen;
    d->cfg = cfg;
    d->queue.max = (size_t)cfg->php.queue_limit;
    d->spawning = 0;
    d->run_limit_ms = broker_run_limit(cfg);
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        if (w->gen != gen && (w->state == W_IDLE || w->state == W_STARTING)) {
            broker_worker_state(w, W_RETIRED);
            broker_signal(w, SIGTERM);
        } else if (w->gen != gen) {
            broker_recall(d, w); /* it exits once given back */
        }
    }
    d->lending = strcmp(cfg->php.mode, "fork") != 0;
}

int broker_generation_alive(broker_t *d, unsigned gen)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    int n = 0;
    for (size_t i = 0; i < d->nw; i++)
        n += d->w[i].gen == gen;
    return n;
}

void broker_spawn_requested(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    d->spawning++;
}

/* A worker to let go when the pool shrinks: an idle one here, else one
 * lent (asked back; it exits once given back). */
static void retire_one(broker_t *d)
{
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].state == W_IDLE && d->w[i].gen == d->gen) {
            broker_worker_state(&d->w[i], W_RETIRED);
            broker_signal(&d->w[i], SIGTERM);
            return;
        }
    for (size_t i = 0; i < d->nw; i++)
        if (d->w[i].state == W_LENT && d->w[i].gen == d->gen && !d->w[i].retire) {
            d->w[i].retire = 1;
            broker_recall(d, &d->w[i]);
            return;
        }
}

static void publish_size(broker_t *d, const char *why)
{
    char n[24];
    snprintf(n, sizeof(n), "%lld", (long long)d->size.target);
    vc_log(VC_LOG_NOTICE, "pool", "pool size %s to %s", why, n);
    vc_bus_publish(d->bus, VC_EVENT(PHP_POOL_SCALED), VC__SEVERITY__INFO, "workers", n, "why", why, NULL);
}

/* The worker exits once its request is answered (at once if idle, called
 * back if lent) and a fresh one takes its place: as at php.max_requests. */
static void recycle(broker_t *d, worker_t *w)
{
    w->recycle = 1;
    if (w->state == W_IDLE)
        broker_make_idle(d, w);
    else if (w->state == W_LENT)
        broker_recall(d, w);
}

int broker_recycle(broker_t *d, pid_t pid)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        if (w->pid != pid || w->dying || w->recycle || w->retire || w->state == W_RETIRED || w->gen != d->gen)
            continue;
        vc_log(VC_LOG_NOTICE, "pool", "worker %d recycled on request", (int)pid);
        recycle(d, w);
        return 0;
    }
    return -1;
}

/* Sizing and the memory ceiling: one worker's memory is read per second
 * at most, so the cost stays flat however big the pool. */
static void pool_tick(broker_t *d, uint64_t now)
{
    int idle, busy;
    size_t queued;
    broker_tally(d, &idle, &busy, &queued);
    long sample = 0;
    if (d->nw > 0 && now - d->last_sample_ms >= 1000) {
        d->last_sample_ms = now;
        worker_t *w = &d->w[d->sample_at++ % d->nw];
        if (d->size.automatic)
            sample = broker_pss_kib(w, NULL);
        if (d->cfg->php.max_memory > 0 && !w->recycle && broker_rss_kib(w->pid) * 1024 > d->cfg->php.max_memory) {
            vc_log(VC_LOG_NOTICE, "pool", "worker %d is above php.max_memory: recycling it", (int)w->pid);
            recycle(d, w);
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

void broker_scale(broker_t *d, int64_t n)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    pool_size_set(&d->size, n);
    /* Too many: idle ones of the current generation go first. */
    long have = 0;
    for (size_t i = 0; i < d->nw; i++)
        have += d->w[i].gen == d->gen && d->w[i].state != W_RETIRED && !d->w[i].retire;
    for (; have > n; have--)
        retire_one(d);
    publish_size(d, "set");
}

/* w ran past the pool's wall-clock limit: killed, its exit reported as
 * any other (timed_out says why). script: NULL where the broker cannot
 * know it. */
static void kill_overdue(broker_t *d, worker_t *w, const char *script, const char *what, uint64_t ms)
{
    w->timed_out = 1;
    d->killed++;
    if (script)
        vc_log(VC_LOG_ERR, "pool", "worker %d ran \"%s\" (%s) for %llu ms: killing it", (int)w->pid, script, what,
               (unsigned long long)ms);
    else
        vc_log(VC_LOG_ERR, "pool", "worker %d ran %s for %llu ms: killing it", (int)w->pid, what,
               (unsigned long long)ms);
    broker_signal(w, SIGKILL);
}

void broker_on_tick(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    uint64_t now = vc_mono_ms();
    broker_report_overdue(d, NULL);
    /* The queue is in arrival order: only its head can be the oldest. */
    while (d->queue.head && now - queue_first(d)->enq_ms >= (uint64_t)d->cfg->php.queue_timeout_ms) {
        job_t *j = broker_dequeue(d);
        d->timed_out_504++;
        vc_log(VC_LOG_WARN, "broker", "%s waited %llu ms for a worker: 504", j->what,
               (unsigned long long)(now - j->enq_ms));
        broker_answer(d, &j->fr.f[0], j->req_id, 504, "Gateway Timeout: no PHP worker became free", NULL);
        broker_job_free(j);
    }
    pool_tick(d, now);
    if (d->run_limit_ms == 0)
        return;
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        if (w->state == W_LENT && !w->timed_out) {
            vc_board_slot_t *bs = broker_board_slot(d, w), s = {.state = VC_BOARD_IDLE};
            if (bs)
                vc_board_read(bs, &s);
            /* Finishing (after fastcgi_finish_request()) is still its
             * request: the same limit, counted from the request's start.
             * Idle on its front's board, it may run a request on a
             * connection lent to it: only its clock knows. */
            int on_board = s.state == VC_BOARD_BUSY || s.state == VC_BOARD_FINISHING;
            uint64_t since = on_board ? s.since_ms : worker_clock_since(w->clock);
            /* The front (or the worker) may have started it after `now`
             * was read: a since_ms past now is a request just begun, not
             * one that wrapped round to an age of 2^64 ms. */
            if (since == 0 || since >= now || now - since < d->run_limit_ms)
                continue;
            if (on_board) /* said on the board first: its front answers 504, not 502 */
                __atomic_store_n(&bs->timed_out, 1, __ATOMIC_RELEASE);
            kill_overdue(d, w, on_board ? s.script : NULL, on_board ? s.what : "a request on a lent connection",
                         now - since);
        }
        if ((w->state == W_BUSY || w->state == W_FINISHING) && !w->timed_out && now - w->since_ms >= d->run_limit_ms)
            kill_overdue(d, w, w->job ? w->job->script : "", w->job ? w->job->what : "", now - w->since_ms);
    }
}

long broker_next_timeout(broker_t *d)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    long t = 1000;
    uint64_t now = vc_mono_ms();
    if (d->queue.head) {
        uint64_t due = queue_first(d)->enq_ms + (uint64_t)d->cfg->php.queue_timeout_ms;
        long left = due > now ? (long)(due - now) : 0;
        if (left < t)
            t = left;
    }
    if (d->spawn_after_ms > now && (long)(d->spawn_after_ms - now) < t)
        t = (long)(d->spawn_after_ms - now);
    return t;
}

/* max_execution_time from the configured directives (php.ini's own value
 * is not known here; 30 s is PHP's default). */
uint64_t broker_run_limit(const vc_config_t *cfg)
{
    long met = 30;
    for (size_t i = 0; i < cfg->php.nini; i++)
        if (!strncmp(cfg->php.ini[i], "max_execution_time=", 19))
            met = atol(cfg->php.ini[i] + 19);
    return met > 0 ? (uint64_t)met * 1000 + (uint64_t)cfg->php.kill_grace_ms : 0;
}
