/*
 * Workers that exit: recycled, retired, or crashed with a request (the
 * rule for its client is libcommon/vc_wire.h's), and the crash-loop guard.
 */
#include "vc_util.h"
#include "broker_internal.h"
#include "vc_events.h"

/* A worker that exited with an error after answering its request whole:
 * not a crash (its client has the answer, with the error PHP showed), but
 * logged with the request that ended it. */
static void log_ended_after(broker_t *d, const char *pidstr, const char *how, const char *what, const char *script,
                            int recycled)
{
    vc_log(VC_LOG_NOTICE, "pool", "worker %s ended (%s) after answering %s (\"%s\")", pidstr, how, what, script);
    vc_bus_publish(d->bus, recycled ? VC_EVENT(PHP_WORKER_RECYCLED) : VC_EVENT(PHP_WORKER_EXITED), VC__SEVERITY__INFO,
                   "pid", pidstr, "status", how, "request", what, "script", script, NULL);
}

static void note_crash(broker_t *d)
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

/* Whether, by now, the front's board says the worker's last answer was
 * final (php.max_requests): a worker that reached its limit on a lent
 * connection gives it back as "finishing" just before it exits, and the
 * zygote's word of the exit may come first. */
static int finished_at_limit(broker_t *d, const lost_t *x)
{
    vc_board_t *b = d->cfg->php.max_requests > 0 && x->slot >= 0 ? fronts_board(d->fronts, x->fid) : NULL;
    if (b == NULL)
        return 0;
    vc_board_slot_t s;
    vc_board_read(&b->slot[x->slot], &s);
    return s.state == VC_BOARD_FINISHING;
}

/* A lent worker died. Its front answers its client and says how (a
 * GiveBack with lost set): only the front knows whether the answer was in
 * the link when the worker died. The exit is reported once both the
 * zygote and the front have told, or after LOST_WAIT_MS with what the
 * board said. */
static void report_lent(broker_t *d, const lost_t *x, Vc__Outcome outcome)
{
    const char *action = vc_outcome_name(outcome);
    char pidstr[16];
    snprintf(pidstr, sizeof(pidstr), "%d", (int)x->pid);
    if (outcome != VC__OUTCOME__OUTCOME_NONE) {
        d->crashed++;
        vc_log(VC_LOG_ERR, "pool", "worker %s died (%s) running %s (\"%s\"): %s", pidstr, x->how, x->what, x->script,
               action);
        vc_bus_publish(d->bus, VC_EVENT(PHP_WORKER_CRASHED), VC__SEVERITY__ERROR, "pid", pidstr, "status", x->how,
                       "request", x->what, "script", x->script, "action", action, NULL);
        if (x->own_fault)
            note_crash(d);
    } else if (!x->clean && (x->finishing || x->busy)) {
        /* It ended after its answer was whole (a fatal error or exit() in
         * worker mode ends the worker with its request): that request is
         * named. OUTCOME_NONE from the front: the answer was whole, though the
         * board, read before the front had read it, still said busy. */
        log_ended_after(d, pidstr, x->how, x->what, x->script, x->recycled);
    } else if (!x->clean) {
        d->crashed++;
        vc_log(VC_LOG_ERR, "pool", "worker %s died (%s) while idle", pidstr, x->how);
        vc_bus_publish(d->bus, VC_EVENT(PHP_WORKER_CRASHED), VC__SEVERITY__ERROR, "pid", pidstr, "status", x->how,
                       "action", "none", NULL);
        if (x->own_fault)
            note_crash(d);
    } else {
        int recycled = x->recycled || finished_at_limit(d, x);
        vc_bus_publish(d->bus, recycled ? VC_EVENT(PHP_WORKER_RECYCLED) : VC_EVENT(PHP_WORKER_EXITED),
                       VC__SEVERITY__INFO, "pid", pidstr, "status", x->how, NULL);
    }
}

/* The board's word, when the front's does not come. */
static Vc__Outcome guess_outcome(const lost_t *x)
{
    if (!x->busy)
        return VC__OUTCOME__OUTCOME_NONE;
    return vc_outcome_of_death(x->started, x->timed_out, x->idempotent && x->retries == 0);
}

static void lent_exited(broker_t *d, worker_t *w, const char *how, int clean, int own_fault)
{
    vc_board_slot_t s;
    broker_lent_state(d, w, &s);
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
    /* At max_requests: its last answer was final (the board may already
     * have moved on from "finishing" when the exit is seen: its count
     * says it too, the broker's relayed requests and the front's on the
     * lent connection, as status counts them). */
    int64_t limit = d->cfg->php.max_requests;
    x.recycled = w->recycle || (limit > 0 && (x.finishing || w->served + s.served >= (uint64_t)limit));
    if (w->front_said) {
        report_lent(d, &x, w->front_outcome);
        return;
    }
    x.due_ms = vc_mono_ms() + LOST_WAIT_MS;
    d->lost = vc_realloc(d->lost, (d->nlost + 1) * sizeof(*d->lost));
    d->lost[d->nlost++] = x;
}

/* The front's word on a lent worker whose link ended. */
void broker_front_lost(broker_t *d, const void *fid, uint32_t slot, Vc__Outcome outcome)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    worker_t *w = broker_lent_worker(d, fid, slot);
    if (w) { /* before the zygote's report: kept for it */
        w->front_said = 1;
        w->front_outcome = outcome;
        return;
    }
    for (size_t i = 0; i < d->nlost; i++)
        if (d->lost[i].slot == (int)slot && !memcmp(d->lost[i].fid, fid, FRONT_ID_LEN)) {
            lost_t x = d->lost[i];
            d->lost[i] = d->lost[--d->nlost];
            report_lent(d, &x, outcome);
            return;
        }
}

/* Reports still waiting for a front that left, or past their time. */
void broker_report_overdue(broker_t *d, const void *gone_fid)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < d->nlost;) {
        lost_t *x = &d->lost[i];
        if (now >= x->due_ms || (gone_fid && !memcmp(x->fid, gone_fid, FRONT_ID_LEN))) {
            lost_t c = *x;
            d->lost[i] = d->lost[--d->nlost];
            report_lent(d, &c, guess_outcome(&c));
        } else {
            i++;
        }
    }
}

void broker_worker_exited(broker_t *d, pid_t pid, int status)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    worker_t *w = broker_by_pid(d, pid);
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
        broker_on_worker(d, w, 1);
    }
    job_t *j = w->job;
    if (w->state == W_LENT) {
        lent_exited(d, w, how, clean, own_fault);
    } else if (j && w->state == W_BUSY) {
        /* Mid-request. */
        d->crashed++;
        Vc__Outcome outcome =
            vc_outcome_of_death(w->started, w->timed_out, j->idempotent && j->retries == 0 && j->fr.n >= 2);
        const char *action = vc_outcome_name(outcome);
        vc_log(VC_LOG_ERR, "pool", "worker %d died (%s) running %s (\"%s\"): %s", (int)pid, how, j->what, j->script,
               action);
        vc_bus_publish(d->bus, VC_EVENT(PHP_WORKER_CRASHED), VC__SEVERITY__ERROR, "pid", pidstr, "status", how,
                       "request", j->what, "script", j->script, "action", action, NULL);
        if (outcome == VC__OUTCOME__OUTCOME_RETRIED) {
            j->retries++;
            d->retried++;
            broker_enqueue(d, j, 1);
        } else {
            if (outcome == VC__OUTCOME__OUTCOME_ABORTED) {
                broker_abort_stream(d, &j->fr.f[0], j->req_id);
            } else if (outcome == VC__OUTCOME__OUTCOME_TIMED_OUT) {
                d->timed_out_504++;
                broker_answer(d, &j->fr.f[0], j->req_id, 504, "Gateway Timeout: the script ran too long", NULL);
            } else {
                d->failed_502++;
                broker_answer(d, &j->fr.f[0], j->req_id, 502, "Bad Gateway: the PHP worker died", NULL);
            }
            broker_job_free(j);
        }
        w->job = NULL;
        if (own_fault)
            note_crash(d);
    } else if (!clean && j && w->state == W_FINISHING) {
        log_ended_after(d, pidstr, how, j->what, j->script, 0);
        broker_finish_job(d, w);
    } else {
        if (j)
            broker_finish_job(d, w);
        if (!clean && w->state != W_FINISHING && w->state != W_RETIRED) {
            d->crashed++;
            vc_log(VC_LOG_ERR, "pool", "worker %d died (%s) while %s", (int)pid, how, wstate_names[w->state]);
            vc_bus_publish(d->bus, VC_EVENT(PHP_WORKER_CRASHED), VC__SEVERITY__ERROR, "pid", pidstr, "status", how,
                           "action", "none", NULL);
            if (own_fault)
                note_crash(d);
        } else if (strcmp(d->cfg->php.mode, "fork") != 0) {
            /* A worker at max_requests (its last answer was final) or over
             * the memory ceiling was recycled; others just exited. */
            int recycled = w->recycle || (w->state == W_FINISHING && d->cfg->php.max_requests > 0);
            vc_bus_publish(d->bus, recycled ? VC_EVENT(PHP_WORKER_RECYCLED) : VC_EVENT(PHP_WORKER_EXITED),
                           VC__SEVERITY__INFO, "pid", pidstr, "status", how, NULL);
        }
    }
    /* Remove from the table (order does not matter). */
    if (w->slot >= 0)
        d->slot_used[w->slot] = 0;
    broker_link_close(d, w);
    vc_link_buf_free(&w->in);
    if (w->smaps >= 0)
        close(w->smaps);
    if (w->pidfd >= 0)
        close(w->pidfd);
    d->refused_writes_gone += worker_clock_refused(w->clock);
    worker_clock_unmap(&w->clock);
    *w = d->w[--d->nw];
    broker_pump(d);
}
