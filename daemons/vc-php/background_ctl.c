/*
 * What `vc bg` and `vc schedule` ask a pool (background.h): a record a
 * background process and a schedule entry, and a start, stop or restart
 * of one entry's processes.
 */
#include "background_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

static void time_text(time_t t, char *out, size_t len)
{
    struct tm tm;
    if (t <= 0 || localtime_r(&t, &tm) == NULL)
        snprintf(out, len, "-");
    else
        strftime(out, len, "%Y-%m-%dT%H:%M:%S%z", &tm);
}

static void status_text(int status, char *out, size_t len)
{
    if (status < 0)
        snprintf(out, len, "-");
    else if (WIFEXITED(status))
        snprintf(out, len, "exit %d", WEXITSTATUS(status));
    else
        snprintf(out, len, "signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void schedule_record(const bentry_t *e, Vc__Reply *reply)
{
    Vc__Record *r = vc_reply_record(reply);
    char next[40], last[40], failure[40], status[24];
    /* The schedule's own clock (sped up in tests) names its minutes. */
    time_text(e->next_run, next, sizeof(next));
    time_text(e->last_run, last, sizeof(last));
    time_text(e->last_failure, failure, sizeof(failure));
    status_text(e->last_status, status, sizeof(status));
    vc_record_field(r, "kind", "schedule");
    vc_record_field(r, "site", "%s", e->site);
    vc_record_field(r, "name", "%s", e->name);
    vc_record_field(r, "line", "%s", e->line);
    vc_record_field(r, "state", "%s", e->held ? "held" : e->procs[0].pid > 0 ? "running" : "waiting");
    vc_record_field(r, "pid", "%d", (int)e->procs[0].pid);
    vc_record_field(r, "next_run", "%s", e->held || e->retired ? "-" : next);
    vc_record_field(r, "last_run", "%s", last);
    vc_record_field(r, "last_status", "%s", status);
    vc_record_field(r, "last_ms", "%lld", (long long)(e->last_status < 0 ? 0 : e->last_ms));
    vc_record_field(r, "last_failure", "%s", failure);
    vc_record_field(r, "runs", "%llu", (unsigned long long)e->starts);
    vc_record_field(r, "skipped", "%llu", (unsigned long long)e->skipped);
}

static void process_record(const bentry_t *e, size_t k, Vc__Reply *reply)
{
    const bproc_t *p = &e->procs[k];
    Vc__Record *r = vc_reply_record(reply);
    int64_t up = p->pid > 0 ? (int64_t)vc_mono_ms() - p->started_ms : 0;
    vc_record_field(r, "kind", "background");
    vc_record_field(r, "site", "%s", e->site);
    vc_record_field(r, "name", "%s", e->name);
    vc_record_field(r, "process", "%zu", k);
    vc_record_field(r, "state", "%s", e->held && p->pid <= 0 ? "held" : bstate_names[p->state]);
    vc_record_field(r, "pid", "%d", (int)p->pid);
    vc_record_field(r, "uptime_ms", "%lld", (long long)up);
    vc_record_field(r, "command", "%s", e->spec.command);
    vc_record_field(r, "dir", "%s", e->app_dir ? e->app_dir : "-");
    vc_record_field(r, "starts", "%llu", (unsigned long long)e->starts);
    vc_record_field(r, "restarts", "%llu", (unsigned long long)e->restarts);
    vc_record_field(r, "failures", "%llu", (unsigned long long)e->failures);
    vc_record_field(r, "retired", "%d", e->retired);
}

static void status(background_t *b, const char *site, Vc__Reply *reply)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++) {
        const bentry_t *e = &b->e[i];
        if (site && strcmp(e->site, site) != 0)
            continue;
        n++;
        if (e->is_hook)
            continue;
        if (e->is_schedule && !e->retired)
            schedule_record(e, reply);
        else if (!e->is_schedule)
            for (size_t k = 0; k < e->nprocs; k++)
                process_record(e, k, reply);
    }
    vc_reply_ok(reply, "%zu entries", n);
}

/* start, stop or restart of one entry's processes (or a schedule's:
 * stop holds it, start lets it run again, restart stops its run). */
static void control(background_t *b, const char *action, const char *site, const char *name, Vc__Reply *reply)
{
    bentry_t *e = NULL;
    for (size_t i = 0; i < b->n && !e; i++)
        if (!b->e[i].retired && !strcmp(b->e[i].site, site) && !strcmp(b->e[i].name, name))
            e = &b->e[i];
    if (e == NULL) {
        vc_reply_fail(reply, "site \"%s\" has no background entry \"%s\" in this pool", site, name);
        return;
    }
    int stop = strcmp(action, "start") != 0, again = strcmp(action, "restart") == 0;
    e->held = strcmp(action, "stop") == 0;
    for (size_t k = 0; k < e->nprocs; k++) {
        bproc_t *p = &e->procs[k];
        if (stop) {
            bg_stop(e, p, again ? "vc bg restart" : "vc bg stop", again);
        } else if (p->pid <= 0) {
            p->state = B_STOPPED; /* FAILED and BACKOFF start at once */
            p->failed_starts = 0;
        }
    }
    vc_log(VC_LOG_NOTICE, "background", "%s/%s: %s (asked over the control socket)", site, name, action);
    background_tick(b);
    vc_reply_ok(reply, "%s/%s: %s", site, name, action);
}

void background_verb(background_t *b, const Vc__Command *cmd, Vc__Reply *reply)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    const char *verb = cmd->verb;
    if (strncmp(verb, "hook-", 5) == 0) {
        hooks_verb(b, cmd, reply);
        return;
    }
    if (strcmp(verb, "schedule-run") == 0) {
        schedule_run_verb(b, cmd, reply);
        return;
    }
    if (strcmp(verb, "background") == 0) {
        status(b, cmd->n_args > 0 ? cmd->args[0] : NULL, reply);
        return;
    }
    const char *action = strncmp(verb, "background-", 11) == 0 ? verb + 11 : "";
    if ((strcmp(action, "start") && strcmp(action, "stop") && strcmp(action, "restart")) || cmd->n_args != 2) {
        vc_reply_fail(reply, "usage: background [SITE], or background-start|stop|restart SITE NAME");
        return;
    }
    control(b, action, cmd->args[0], cmd->args[1], reply);
}
