/*
 * Replacing a running daemon by a fresh process without a gap, and without
 * holding up the supervisor: the successor starts beside it (a front
 * shares the listeners, which never close; a pool takes its socket over),
 * the supervisor's loop goes on (status, other restarts, deaths), and once
 * the successor says it is ready the old process gets SIGTERM and finishes
 * what it holds. A successor that dies or is not ready in time is dropped
 * and the old process keeps running. The command that asked (`vc restart`,
 * `vc reload`) is answered once every replacement it started has ended.
 */
#include "sup.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long a successor may take to say it is ready. */
#define READY_TIMEOUT_MS 15000

sup_op_t *sup_op_new(vc_ctl_later_t *later, const char *done)
{
    sup_op_t *op = vc_calloc(1, sizeof(*op));
    op->later = later;
    op->pending = 1; /* the caller's own, until sup_op_release */
    snprintf(op->done, sizeof(op->done), "%s", done);
    return op;
}

/* One replacement (or the caller) is done with op: the last answers. */
void sup_op_release(sup_t *s, sup_op_t *op)
{
    if (op == NULL || --op->pending > 0)
        return;
    if (op->later) {
        Vc__Reply reply = VC__REPLY__INIT;
        if (op->failed)
            vc_reply_fail(&reply, "%s", op->why);
        else
            vc_reply_ok(&reply, "%s", op->done);
        vc_ctl_answer(s->ctl, op->later, &reply);
        free(reply.message);
    }
    free(op);
}

void sup_op_fail(sup_op_t *op, const char *why)
{
    if (op && !op->failed++)
        snprintf(op->why, sizeof(op->why), "%s", why);
}

static void hold(sup_op_t ***ops, size_t *n, sup_op_t *op)
{
    if (op == NULL)
        return;
    *ops = vc_realloc(*ops, (*n + 1) * sizeof(**ops));
    (*ops)[(*n)++] = op;
    op->pending++;
}

/* The replacement under way has ended (why: NULL if it serves): its
 * commands are answered, and those that came meanwhile start the next. */
static void replacement_ended(sup_t *s, child_t *k, const char *why)
{
    sup_op_t **ops = k->ops;
    size_t n = k->nops;
    k->ops = NULL;
    k->nops = 0;
    for (size_t i = 0; i < n; i++) {
        if (why)
            sup_op_fail(ops[i], why);
        sup_op_release(s, ops[i]);
    }
    free(ops);
    if (k->nagain == 0 || k->pid <= 0 || s->stopping)
        return;
    sup_op_t **again = k->again;
    n = k->nagain;
    k->again = NULL;
    k->nagain = 0;
    int rc = sup_replace(s, k, NULL);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            hold(&k->ops, &k->nops, again[i]);
        else
            sup_op_fail(again[i], "the next replacement did not start (fork failed); the old process keeps running");
        sup_op_release(s, again[i]); /* its place in k->again */
    }
    free(again);
}

int sup_replace(sup_t *s, child_t *k, sup_op_t *op)
{
    if (k->next_pid > 0) {
        /* Already under way, started perhaps before this command's
         * configuration was stored: another follows it. */
        if (op) {
            hold(&k->again, &k->nagain, op);
        } else if (k->nagain == 0) { /* nobody waits (SIGHUP), but one follows */
            sup_op_t *mark = sup_op_new(NULL, "");
            hold(&k->again, &k->nagain, mark);
            sup_op_release(s, mark);
        }
        return 0;
    }
    int ready_fd;
    pid_t pid = sup_spawn_process(s, k, 1, &ready_fd);
    if (pid < 0) {
        char why[160];
        snprintf(why, sizeof(why), "the new %s did not start (fork failed); the old one keeps running", k->name);
        sup_op_fail(op, why);
        return -1;
    }
    k->next_pid = pid;
    k->next_ready_fd = ready_fd;
    int ms = k->how->ready_timeout_ms > 0 ? k->how->ready_timeout_ms : READY_TIMEOUT_MS;
    k->next_deadline_ms = vc_mono_ms() + (uint64_t)ms;
    hold(&k->ops, &k->nops, op);
    return 0;
}

/* The successor takes k's place; the old process finishes and goes. */
static void take_over(sup_t *s, child_t *k)
{
    pid_t old = k->pid;
    k->pid = k->next_pid;
    k->started_ms = vc_mono_ms();
    k->ready = 1;
    k->next_pid = 0;
    close(k->next_ready_fd);
    k->next_ready_fd = -1;
    if (old > 0) {
        if (s->nretiring == s->cap_retiring) {
            s->cap_retiring = s->cap_retiring ? 2 * s->cap_retiring : 8;
            s->retiring = vc_realloc(s->retiring, s->cap_retiring * sizeof(*s->retiring));
        }
        s->retiring[s->nretiring++] = old;
        kill(old, SIGTERM);
    }
    char a[16], b[16];
    snprintf(a, sizeof(a), "%d", (int)old);
    snprintf(b, sizeof(b), "%d", (int)k->pid);
    vc_log(VC_LOG_NOTICE, "up", "%s replaced: pid %s -> %s", k->name, a, b);
    vc_bus_publish(s->bus, VC_EVENT(VC_DAEMON_REPLACED), VC__SEVERITY__NOTICE, "daemon", k->name, "old_pid", a, "pid",
                   b, NULL);
    replacement_ended(s, k, NULL);
}

/* The successor will not serve: dropped (killed if it still runs). */
static void drop_successor(sup_t *s, child_t *k, const char *how, int reaped)
{
    if (!reaped && k->next_pid > 0) {
        kill(k->next_pid, SIGKILL);
        waitpid(k->next_pid, NULL, 0);
    }
    if (k->next_ready_fd >= 0)
        close(k->next_ready_fd);
    k->next_pid = 0;
    k->next_ready_fd = -1;
    char why[200];
    snprintf(why, sizeof(why), "the new %s did not start (%s); the old one keeps running", k->name, how);
    vc_log(VC_LOG_ERR, "up", "%s", why);
    vc_bus_publish(s->bus, VC_EVENT(VC_DAEMON_REPLACE_FAILED), VC__SEVERITY__ERROR, "daemon", k->name, "reason", how,
                   NULL);
    replacement_ended(s, k, why);
}

void sup_successor_readable(sup_t *s, child_t *k)
{
    char c;
    ssize_t got = read(k->next_ready_fd, &c, 1);
    if (got == 1)
        take_over(s, k);
    else if (got == 0)
        drop_successor(s, k, "it exited before it was ready", 0);
}

int sup_successor_exited(sup_t *s, pid_t pid, int status)
{
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].next_pid == pid) {
            char how[64];
            if (WIFEXITED(status))
                snprintf(how, sizeof(how), "it exited with %d", WEXITSTATUS(status));
            else
                snprintf(how, sizeof(how), "it was killed by signal %d", WTERMSIG(status));
            drop_successor(s, &s->kids[i], how, 1);
            return 1;
        }
    return 0;
}

void sup_successors_tick(sup_t *s)
{
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].next_pid > 0 && now >= s->kids[i].next_deadline_ms)
            drop_successor(s, &s->kids[i], "not ready in time", 0);
}

void sup_successors_stop(sup_t *s)
{
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].next_pid > 0)
            drop_successor(s, &s->kids[i], "the suite is stopping", 0);
}
