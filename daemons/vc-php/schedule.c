/*
 * Schedules (background.h): each site.schedule line runs its command at
 * its minutes, in the site's time zone, one run at a time: a minute that
 * comes while the last run still runs is skipped (counted and logged), as
 * Laravel's withoutOverlapping() would have it without a lock; a run past
 * site.schedule_timeout is stopped as a background process is.
 *
 * In a cluster (cluster.node set) an entry runs on one node a minute: a
 * minute due here is said on the bus (php.schedule.due); this node's
 * vc-mesh takes the entry's lock in NATS for it, or finds another node
 * has, and the node that holds it is asked back (schedule-run). A pool
 * holds no credential of the cluster's, so the lock is vc-mesh's to take.
 *
 * Time here is the wall clock, but for tests VC_SCHEDULE_MINUTE_MS makes
 * a minute pass in that many milliseconds (from a fixed instant, so that
 * the nodes of a test cluster on one machine read the same minute).
 */
#include "background_internal.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_mesh.h"
#include "vc_util.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <stdlib.h>

/* How many times faster than real time the schedule's clock runs. */
static int64_t speed(const background_t *b)
{
    return 60000 / b->minute_ms;
}

/* A sped-up clock counts from here (2026-01-01T00:00:00Z). */
#define SPED_FROM_MS 1767225600000LL

/* The schedule's clock, in milliseconds of the wall clock's epoch: the
 * wall clock when vc-php started, then the monotonic clock's steps (a
 * step of the wall clock moves no run by itself). */
static int64_t clock_ms(const background_t *b)
{
    int64_t origin = b->clock_origin_ms;
    if (speed(b) > 1)
        origin = SPED_FROM_MS + (origin - SPED_FROM_MS) * speed(b);
    return origin + ((int64_t)vc_mono_ms() - b->mono_origin_ms) * speed(b);
}

time_t schedule_now(const background_t *b)
{
    return (time_t)(clock_ms(b) / 1000);
}

/* Real milliseconds until the schedule's clock reads t. */
static int64_t real_ms_until(const background_t *b, time_t t)
{
    return ((int64_t)t * 1000 - clock_ms(b)) / speed(b);
}

void schedule_plan(background_t *b, bentry_t *e)
{
    e->next_run = vc_cron_next_in(&e->cron, schedule_now(b), e->tz);
}

int64_t schedule_wait_ms(const background_t *b, const bentry_t *e)
{
    int64_t w = 60000;
    if (e->next_run > 0)
        w = real_ms_until(b, e->next_run);
    if (e->procs[0].pid > 0 && e->timeout_ms > 0) {
        int64_t t = e->procs[0].started_ms + e->timeout_ms - (int64_t)vc_mono_ms();
        if (t < w)
            w = t;
    }
    return w < 0 ? 0 : w;
}

static void run(background_t *b, bentry_t *e)
{
    bproc_t *p = &e->procs[0];
    if (bg_spawn(b, e, p, 0) < 0) {
        e->last_failure = schedule_now(b);
        return;
    }
    p->state = B_RUNNING;
    p->started_ms = (int64_t)vc_mono_ms();
    e->starts++;
    e->last_run = schedule_now(b);
    vc_log(VC_LOG_INFO, "schedule", "%s: \"%s\" started (process %d)", e->site, e->line, (int)p->pid);
    bg_event(b, e, VC_EVENT(PHP_SCHEDULE_STARTED), p, NULL);
}

void schedule_tick(background_t *b, bentry_t *e)
{
    bproc_t *p = &e->procs[0];
    if (p->pid > 0 && p->state != B_STOPPING && e->timeout_ms > 0 &&
        (int64_t)vc_mono_ms() - p->started_ms >= e->timeout_ms) {
        vc_log(VC_LOG_WARN, "schedule", "%s: \"%s\" ran past schedule_timeout (%lld ms): stopping process %d", e->site,
               e->line, (long long)e->timeout_ms, (int)p->pid);
        p->state = B_STOPPING;
        p->stop_why = "schedule_timeout";
        p->stop_sent_ms = (int64_t)vc_mono_ms();
        kill(p->pid, SIGTERM);
    }
    if (e->retired || e->argv == NULL || e->app_dir == NULL || e->next_run <= 0)
        return;
    time_t now = schedule_now(b);
    if (now < e->next_run)
        return;
    /* Due (once, however many minutes a stalled clock skipped). */
    time_t due = e->next_run;
    e->next_run = vc_cron_next_in(&e->cron, now, e->tz);
    bentry_t *old = e->after ? bg_entry(b, e->after) : NULL;
    if (p->pid > 0 || (old && old->procs[0].pid > 0)) {
        e->skipped++;
        vc_log(VC_LOG_WARN, "schedule", "%s: \"%s\" skipped its run of %lld: the last one still runs", e->site, e->line,
               (long long)due);
        bg_event(b, e, VC_EVENT(PHP_SCHEDULE_SKIPPED), p, "skipped");
        return;
    }
    if (e->held)
        return;
    if (!bg_may_run(b)) {
        e->skipped++; /* the vc-php before this one still runs its processes */
    } else if (b->cfg && vc_mesh_settings_of(b->cfg)->node[0]) {
        e->awaiting = due;
        char minute[24];
        snprintf(minute, sizeof(minute), "%lld", (long long)due);
        vc_bus_publish(b->bus, VC_EVENT(PHP_SCHEDULE_DUE), VC__SEVERITY__INFO, "site", e->site, "name", e->name,
                       "minute", minute, NULL);
    } else {
        run(b, e);
    }
}

void schedule_run_verb(background_t *b, const Vc__Command *cmd, Vc__Reply *reply)
{
    if (cmd->n_args != 3) {
        vc_reply_fail(reply, "usage: schedule-run SITE NAME MINUTE");
        return;
    }
    bentry_t *e = NULL;
    for (size_t i = 0; i < b->n && !e; i++)
        if (b->e[i].is_schedule && !b->e[i].retired && !strcmp(b->e[i].site, cmd->args[0]) &&
            !strcmp(b->e[i].name, cmd->args[1]))
            e = &b->e[i];
    char *end = NULL;
    long long minute = strtoll(cmd->args[2], &end, 10);
    if (e == NULL) {
        vc_reply_fail(reply, "site \"%s\" has no schedule entry \"%s\" in this pool", cmd->args[0], cmd->args[1]);
    } else if (*end || minute <= 0 || e->awaiting != (time_t)minute) {
        vc_reply_fail(reply, "%s/%s is not due at %s", e->site, e->name, cmd->args[2]);
    } else if (e->procs[0].pid > 0 || e->held || !bg_may_run(b)) {
        vc_reply_fail(reply, "%s/%s: %s", e->site, e->name, e->procs[0].pid > 0 ? "its last run still runs" : "held");
    } else {
        e->awaiting = 0;
        run(b, e);
        if (e->procs[0].pid > 0)
            vc_reply_ok(reply, "%s/%s: started (process %d)", e->site, e->name, (int)e->procs[0].pid);
        else
            vc_reply_fail(reply, "%s/%s did not start (the pool's log says why)", e->site, e->name);
    }
}

void schedule_ended(background_t *b, bentry_t *e, bproc_t *p, int status)
{
    e->last_status = status;
    e->last_ms = (int64_t)vc_mono_ms() - p->started_ms;
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    char how[48];
    if (WIFEXITED(status))
        snprintf(how, sizeof(how), "exit %d", WEXITSTATUS(status));
    else
        snprintf(how, sizeof(how), "killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (!ok)
        e->last_failure = schedule_now(b);
    p->state = B_STOPPED;
    vc_log(ok ? VC_LOG_INFO : VC_LOG_WARN, "schedule", "%s: \"%s\" ended (%s) after %lld ms", e->site, e->line, how,
           (long long)e->last_ms);
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", (long long)e->last_ms);
    char pid[16];
    snprintf(pid, sizeof(pid), "%d", (int)p->pid);
    vc_bus_publish(b->bus, ok ? VC_EVENT(PHP_SCHEDULE_FINISHED) : VC_EVENT(PHP_SCHEDULE_FAILED),
                   ok ? VC__SEVERITY__INFO : VC__SEVERITY__WARNING, "site", e->site, "name", e->name, "pid", pid,
                   "status", how, "ms", ms, NULL);
}
