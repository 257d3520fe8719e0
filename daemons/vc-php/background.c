/*
 * A pool's background processes and schedule runs (background.h): the
 * table of entries, their processes' starts, exits, restarts with
 * backoff, stops (the stop signal, then SIGKILL at stop_wait), recycles
 * (max_memory, max_runtime), their output into the log, and a new
 * configuration's changes.
 */
#include "background_internal.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_words.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

const char *const bstate_names[] = {"stopped", "starting", "running", "backoff", "stopping", "failed"};

/* Backoff after a failed start: 1 s, 2 s, 4 s ... up to a minute, as
 * supervisor's (which waits one second more each time). */
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 60000
/* How often memory is read for max_memory. */
#define MEMORY_CHECK_MS 1000

background_t *background_new(vc_bus_t *bus)
{
    background_t *b = vc_calloc(1, sizeof(*b));
    b->magic = BACKGROUND_MAGIC;
    b->bus = bus;
    b->next_id = 1;
    b->minute_ms = 60000;
    const char *m = getenv("VC_SCHEDULE_MINUTE_MS");
    if (m && atoll(m) >= 100 && atoll(m) <= 60000)
        b->minute_ms = atoll(m);
    b->lock = -1;
    b->clock_origin_ms = vc_wall_ms();
    b->mono_origin_ms = (int64_t)vc_mono_ms();
    return b;
}

static void entry_free(bentry_t *e)
{
    free(e->site);
    free(e->name);
    free(e->spec.name);
    free(e->spec.command);
    free(e->spec.stop_signal);
    free(e->app_dir);
    free(e->line);
    free(e->tz);
    free(e->out);
    for (char **a = e->argv; a && *a; a++)
        free(*a);
    free(e->argv);
    for (size_t i = 0; i < e->nprocs; i++)
        if (e->procs[i].out >= 0)
            close(e->procs[i].out);
    free(e->procs);
}

void background_destroy(background_t **pb)
{
    background_t *b = *pb;
    if (b == NULL)
        return;
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    for (size_t i = 0; i < b->n; i++)
        entry_free(&b->e[i]);
    free(b->e);
    if (b->lock >= 0)
        close(b->lock);
    free(b->lock_path);
    b->magic = 0;
    free(b);
    *pb = NULL;
}

bentry_t *bg_entry(background_t *b, unsigned id)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->e[i].id == id)
            return &b->e[i];
    return NULL;
}

void bg_event(background_t *b, const bentry_t *e, const char *topic, const bproc_t *p, const char *status)
{
    char pid[16];
    snprintf(pid, sizeof(pid), "%d", p ? (int)p->pid : 0);
    vc_bus_publish(b->bus, topic, VC__SEVERITY__INFO, "site", e->site, "name", e->name, "pid", pid, "status",
                   status ? status : "", NULL);
}

static int signal_number(const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } sigs[] = {{"TERM", SIGTERM}, {"INT", SIGINT},   {"QUIT", SIGQUIT},
                {"HUP", SIGHUP},   {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
    for (size_t i = 0; i < VC_ARRAY_SIZE(sigs); i++)
        if (strcmp(sigs[i].name, name) == 0)
            return sigs[i].sig;
    return SIGTERM;
}

static int alive(const bentry_t *e)
{
    int n = 0;
    for (size_t i = 0; i < e->nprocs; i++)
        n += e->procs[i].pid > 0;
    return n;
}

/* Asks p to stop (its stop signal; SIGKILL comes at stop_wait). We are
 * its parent and reap it ourselves, so its pid is still its own. */
void bg_stop(bentry_t *e, bproc_t *p, const char *why, int again)
{
    p->again = again;
    if (p->pid <= 0) {
        p->state = again ? B_STOPPED : (p->state == B_FAILED ? B_FAILED : B_STOPPED);
        return;
    }
    if (p->state == B_STOPPING)
        return;
    p->state = B_STOPPING;
    p->stop_why = why;
    p->stop_sent_ms = (int64_t)vc_mono_ms();
    vc_log(VC_LOG_INFO, "background", "%s/%s: stopping process %d (%s): SIG%s", e->site, e->name, (int)p->pid, why,
           e->spec.stop_signal);
    kill(p->pid, signal_number(e->spec.stop_signal));
}

static void start_proc(background_t *b, bentry_t *e, bproc_t *p, size_t index)
{
    if (bg_spawn(b, e, p, index) < 0) {
        p->state = B_BACKOFF;
        p->next_start_ms = (int64_t)vc_mono_ms() + BACKOFF_FIRST_MS;
        return;
    }
    p->state = B_STARTING;
    p->started_ms = (int64_t)vc_mono_ms();
    p->again = 0;
    p->stop_why = NULL;
    e->starts++;
    vc_log(VC_LOG_INFO, "background", "%s/%s: started process %d", e->site, e->name, (int)p->pid);
    bg_event(b, e, VC_EVENT(PHP_BACKGROUND_STARTED), p, NULL);
}

/* Whether this vc-php holds the pool's background lock, taking it if it
 * is free (the vc-php before it, if any, has stopped its processes). */
static int own_lock(background_t *b)
{
    if (b->lock >= 0)
        return 1;
    if (b->lock_path == NULL)
        return 0;
    int fd = open(b->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        vc_log(VC_LOG_ERR, "background", "cannot open %s: %s; nothing starts", b->lock_path, strerror(errno));
        return 0;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        if (!b->lock_waits++)
            vc_log(VC_LOG_INFO, "background",
                   "waiting for %s: the pool's vc-php before this one still runs its "
                   "background processes",
                   b->lock_path);
        return 0;
    }
    if (b->lock_waits)
        vc_log(VC_LOG_INFO, "background", "took %s: starting the pool's background processes", b->lock_path);
    b->lock = fd;
    return 1;
}

int bg_may_run(background_t *b)
{
    return !b->stopping && own_lock(b);
}

/* Whether e may start processes now: configured, not held, what it
 * replaces is gone, and no other vc-php of the pool runs any. */
static int may_start(background_t *b, bentry_t *e)
{
    if (b->stopping || e->retired || e->held || e->app_dir == NULL || e->argv == NULL || !own_lock(b))
        return 0;
    bentry_t *old = e->after ? bg_entry(b, e->after) : NULL;
    if (old && alive(old))
        return 0;
    e->after = 0;
    return 1;
}

/* ---- a new configuration ------------------------------------------------ */

static int same_spec(const vc_background_t *a, const vc_background_t *b)
{
    return !strcmp(a->command, b->command) && a->processes == b->processes && a->start_ms == b->start_ms &&
           a->start_retries == b->start_retries && !strcmp(a->stop_signal, b->stop_signal) &&
           a->stop_wait_ms == b->stop_wait_ms && a->max_memory == b->max_memory &&
           a->max_runtime_ms == b->max_runtime_ms;
}

bentry_t *bg_add_entry(background_t *b, const char *site, const char *name, const char *app_dir)
{
    VC_GROW(b->e, b->cap, b->n + 1, 8);
    bentry_t *e = &b->e[b->n++];
    memset(e, 0, sizeof(*e));
    e->id = b->next_id++;
    e->site = vc_strdup(site);
    e->name = vc_strdup(name);
    e->app_dir = app_dir ? vc_strdup(app_dir) : NULL;
    e->last_status = -1;
    return e;
}

/* Whether two argv lists are the same words. */
static int same_argv(char *const *a, char *const *b)
{
    for (; a && b && *a && *b; a++, b++)
        if (strcmp(*a, *b) != 0)
            return 0;
    return (a == NULL || *a == NULL) && (b == NULL || *b == NULL);
}

static bentry_t *add_entry(background_t *b, const vc_site_t *s, const char *name)
{
    char *app_dir = vc_site_app_dir(s);
    bentry_t *e = bg_add_entry(b, s->name, name, app_dir);
    free(app_dir);
    return e;
}

int bg_start_once(background_t *b, bentry_t *e)
{
    if (!own_lock(b) || bg_spawn(b, e, &e->procs[0], 0) < 0)
        return -1;
    e->procs[0].state = B_RUNNING;
    e->procs[0].started_ms = (int64_t)vc_mono_ms();
    e->starts++;
    return 0;
}

static void copy_spec(vc_background_t *to, const vc_background_t *from)
{
    *to = *from;
    to->name = vc_strdup(from->name);
    to->command = vc_strdup(from->command);
    to->stop_signal = vc_strdup(from->stop_signal);
}

/* The live entry of that site and name, or NULL. */
static bentry_t *current_entry(background_t *b, const char *site, const char *name)
{
    for (size_t i = 0; i < b->n; i++)
        if (!b->e[i].retired && !strcmp(b->e[i].site, site) && !strcmp(b->e[i].name, name))
            return &b->e[i];
    return NULL;
}

static void retire(bentry_t *e, const char *why)
{
    e->retired = 1;
    for (size_t i = 0; i < e->nprocs; i++)
        if (!e->is_schedule) /* a schedule's run finishes; no new one starts */
            bg_stop(e, &e->procs[i], why, 0);
}

/* An entry wanted by cfg: kept if nothing about it changed, else a new
 * one that starts once the old one's processes are gone. */
static void want(background_t *b, const vc_site_t *s, const char *name, const vc_background_t *spec, const char *line,
                 unsigned *keep, size_t *nkeep)
{
    char *app_dir = vc_site_app_dir(s);
    /* The pool's PHP settings are in the words php runs with. */
    char **argv = spec ? bg_argv(b->cfg, spec->command) : NULL;
    bentry_t *old = current_entry(b, s->name, name);
    int same = old && ((old->app_dir == NULL) == (app_dir == NULL)) && (!app_dir || !strcmp(old->app_dir, app_dir));
    if (same && spec)
        same = same_spec(&old->spec, spec) && same_argv(old->argv, argv);
    if (same && line)
        same = !strcmp(old->line, line) && old->timeout_ms == s->schedule_timeout_ms &&
               !strcmp(old->tz ? old->tz : "", s->timezone ? s->timezone : "");
    free(app_dir);
    if (same) {
        for (char **a = argv; a && *a; a++)
            free(*a);
        free(argv);
        keep[(*nkeep)++] = old->id;
        return;
    }
    unsigned old_id = 0;
    int held = 0;
    if (old) {
        old_id = old->id;
        held = old->held; /* `vc bg stop` holds across reloads */
        retire(old, "reload");
    }
    bentry_t *e = add_entry(b, s, name); /* old may have moved */
    e->after = old_id;
    e->held = held;
    if (spec) {
        copy_spec(&e->spec, spec);
        e->nprocs = (size_t)spec->processes;
        e->argv = argv;
    } else {
        const char *command;
        char err[200];
        e->is_schedule = 1;
        e->line = vc_strdup(line);
        e->tz = s->timezone ? vc_strdup(s->timezone) : NULL;
        e->timeout_ms = s->schedule_timeout_ms;
        vc_background_t d = {.name = (char *)name,
                             .command = (char *)"",
                             .stop_signal = (char *)"TERM",
                             .stop_wait_ms = 10000,
                             .processes = 1};
        copy_spec(&e->spec, &d);
        e->nprocs = 1;
        if (vc_cron_parse(line, &e->cron, &command, err, sizeof(err)) == 0) {
            e->argv = bg_argv(b->cfg, command);
            schedule_plan(b, e);
        }
    }
    e->procs = vc_calloc(e->nprocs, sizeof(*e->procs));
    for (size_t i = 0; i < e->nprocs; i++)
        e->procs[i].out = -1;
    if (e->app_dir == NULL)
        vc_log(VC_LOG_ERR, "background", "%s/%s: the site's application directory is not there: not started", s->name,
               name);
    keep[(*nkeep)++] = e->id;
}

void background_configure(background_t *b, const vc_config_t *cfg)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    b->cfg = cfg;
    if (b->lock_path == NULL) {
        char *home = vc_config_pool_home(cfg->data_dir, cfg->php.name);
        b->lock_path = vc_asprintf("%s/background.lock", home);
        free(home);
    }
    size_t cap = 0;
    for (size_t i = 0; i < cfg->nsites; i++)
        cap += cfg->sites[i].nbackground + cfg->sites[i].nschedule;
    unsigned *keep = vc_calloc(cap + 1, sizeof(*keep));
    size_t nkeep = 0;
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (strcmp(s->pool ? s->pool : "default", cfg->php.name) != 0)
            continue;
        for (size_t k = 0; k < s->nbackground; k++)
            want(b, s, s->background[k].name, &s->background[k], NULL, keep, &nkeep);
        for (size_t k = 0; k < s->nschedule; k++) {
            char name[32];
            snprintf(name, sizeof(name), "schedule:%zu", k + 1);
            want(b, s, name, NULL, s->schedule[k], keep, &nkeep);
        }
    }
    for (size_t i = 0; i < b->n; i++) {
        int kept = 0;
        for (size_t k = 0; k < nkeep && !kept; k++)
            kept = b->e[i].id == keep[k];
        if (!kept && !b->e[i].retired && !b->e[i].is_hook)
            retire(&b->e[i], "removed");
    }
    free(keep);
    background_tick(b);
}

/* ---- exits -------------------------------------------------------------- */

static void describe(int status, char *out, size_t len)
{
    if (WIFEXITED(status))
        snprintf(out, len, "exit %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, len, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(out, len, "status %d", status);
}

/* Drops retired entries with nothing left running. */
static void sweep(background_t *b)
{
    for (size_t i = 0; i < b->n;) {
        if (b->e[i].retired && !alive(&b->e[i])) {
            entry_free(&b->e[i]);
            b->e[i] = b->e[--b->n];
        } else {
            i++;
        }
    }
}

static void exited(background_t *b, bentry_t *e, bproc_t *p, int status)
{
    char how[48];
    describe(status, how, sizeof(how));
    int64_t now = (int64_t)vc_mono_ms(), ran = now - p->started_ms;
    e->exits++;
    if (e->is_schedule) {
        schedule_ended(b, e, p, status);
        return;
    }
    if (e->is_hook) {
        p->state = B_STOPPED;
        hook_ended(b, e, status);
        return;
    }
    if (p->state == B_STOPPING) {
        vc_log(VC_LOG_INFO, "background", "%s/%s: process stopped (%s, %s)", e->site, e->name, p->stop_why, how);
        bg_event(b, e, VC_EVENT(PHP_BACKGROUND_EXITED), p, how);
        p->state = B_STOPPED;
        if (p->again)
            e->restarts++;
        return; /* started again by the tick, if it is to be */
    }
    /* Exited by itself: too early is a failed start (backoff, then
     * FAILED after start_retries); after start_secs, started again at
     * once, as supervisor's autorestart. */
    int early = ran < e->spec.start_ms;
    p->failed_starts = early ? p->failed_starts + 1 : 0;
    bg_event(b, e, VC_EVENT(PHP_BACKGROUND_EXITED), p, how);
    if (early && p->failed_starts > e->spec.start_retries) {
        p->state = B_FAILED;
        e->failures++;
        vc_log(VC_LOG_ERR, "background",
               "%s/%s: exited %d times in a row within %lld ms of its start (%s): left "
               "failed until `vc bg start`",
               e->site, e->name, p->failed_starts, (long long)e->spec.start_ms, how);
        bg_event(b, e, VC_EVENT(PHP_BACKGROUND_FAILED), p, how);
        return;
    }
    int64_t delay = 0;
    if (early) {
        delay = BACKOFF_FIRST_MS << (p->failed_starts - 1 < 6 ? p->failed_starts - 1 : 6);
        if (delay > BACKOFF_MAX_MS)
            delay = BACKOFF_MAX_MS;
    }
    vc_log(early ? VC_LOG_WARN : VC_LOG_INFO, "background",
           "%s/%s: process exited (%s) after %lld ms: again in %lld ms", e->site, e->name, how, (long long)ran,
           (long long)delay);
    p->state = B_BACKOFF;
    p->next_start_ms = now + delay;
    e->restarts++;
    bg_event(b, e, VC_EVENT(PHP_BACKGROUND_RESTARTED), p, how);
}

int background_reaped(background_t *b, pid_t pid, int status)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    for (size_t i = 0; i < b->n; i++)
        for (size_t k = 0; k < b->e[i].nprocs; k++) {
            bproc_t *p = &b->e[i].procs[k];
            if (p->pid != pid)
                continue;
            /* What it left in its group goes with it. */
            kill(-pid, SIGKILL);
            /* Its last words are in the pipe still: read them first. */
            zmq_pollitem_t it = {NULL, p->out, ZMQ_POLLIN, ZMQ_POLLIN};
            if (p->out >= 0)
                background_on_poll(b, &it, 1);
            exited(b, &b->e[i], p, status);
            p->pid = 0; /* after its events, which name it */
            return 1;
        }
    return 0;
}

/* ---- output ------------------------------------------------------------- */

static void flush_line(background_t *b, bentry_t *e, bproc_t *p)
{
    if (p->len == 0)
        return;
    if (e->is_hook)
        hook_output(b, e, p->line, p->len);
    vc_log(VC_LOG_INFO, "background", "%s/%s[%d]: %.*s", e->site, e->name, (int)p->pid, (int)p->len, p->line);
    p->len = 0;
}

/* Reads what p wrote; each whole line (or BG_LINE_MAX bytes of one) goes
 * to the log. At the pipe's end, the rest too. */
static void read_output(background_t *b, bentry_t *e, bproc_t *p)
{
    for (int rounds = 0; rounds < 16 && p->out >= 0; rounds++) {
        char buf[4096];
        ssize_t n = read(p->out, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            flush_line(b, e, p);
            close(p->out);
            p->out = -1;
            return;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n' || p->len == sizeof(p->line)) {
                flush_line(b, e, p);
                if (buf[i] == '\n')
                    continue;
            }
            p->line[p->len++] = buf[i] == '\r' ? ' ' : buf[i];
        }
    }
}

size_t background_pollitems(background_t *b, zmq_pollitem_t *items, size_t max)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        for (size_t k = 0; k < b->e[i].nprocs && n < max; k++)
            if (b->e[i].procs[k].out >= 0)
                items[n++] = (zmq_pollitem_t){NULL, b->e[i].procs[k].out, ZMQ_POLLIN, 0};
    return n;
}

void background_on_poll(background_t *b, const zmq_pollitem_t *items, size_t n)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    for (size_t j = 0; j < n; j++) {
        if (!(items[j].revents & (ZMQ_POLLIN | ZMQ_POLLERR)))
            continue;
        for (size_t i = 0; i < b->n; i++)
            for (size_t k = 0; k < b->e[i].nprocs; k++)
                if (b->e[i].procs[k].out == items[j].fd && items[j].fd >= 0)
                    read_output(b, &b->e[i], &b->e[i].procs[k]);
    }
}

/* ---- timers ------------------------------------------------------------- */

/* A process's resident memory, in bytes (its /proc/PID/statm); -1. */
static int64_t rss_bytes(pid_t pid)
{
    char path[48];
    snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "re");
    long long size, rss = -1;
    if (f && fscanf(f, "%lld %lld", &size, &rss) != 2)
        rss = -1;
    if (f)
        fclose(f);
    return rss < 0 ? -1 : rss * sysconf(_SC_PAGESIZE);
}

static void tick_proc(background_t *b, bentry_t *e, bproc_t *p, size_t index, int64_t now, int check_memory)
{
    if (p->state == B_STOPPING && p->pid > 0 && now - p->stop_sent_ms >= e->spec.stop_wait_ms) {
        vc_log(VC_LOG_WARN, "background", "%s/%s: process %d did not stop within %lld ms: killed", e->site, e->name,
               (int)p->pid, (long long)e->spec.stop_wait_ms);
        kill(-p->pid, SIGKILL);
        kill(p->pid, SIGKILL);
        p->stop_sent_ms = now; /* once per wait */
        return;
    }
    if (p->state == B_STARTING && now - p->started_ms >= e->spec.start_ms) {
        p->state = B_RUNNING;
        p->failed_starts = 0;
    }
    if ((p->state == B_RUNNING || p->state == B_STARTING) && p->pid > 0) {
        if (e->spec.max_runtime_ms > 0 && now - p->started_ms >= e->spec.max_runtime_ms)
            bg_stop(e, p, "max_runtime", 1);
        else if (check_memory && e->spec.max_memory > 0 && rss_bytes(p->pid) > e->spec.max_memory)
            bg_stop(e, p, "max_memory", 1);
        return;
    }
    int due = p->state == B_STOPPED || (p->state == B_BACKOFF && now >= p->next_start_ms);
    if (due && p->pid <= 0 && !e->is_schedule && !e->is_hook && may_start(b, e))
        start_proc(b, e, p, index);
}

void background_tick(background_t *b)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    int64_t now = (int64_t)vc_mono_ms();
    int check_memory = now - b->memory_checked_ms >= MEMORY_CHECK_MS;
    if (check_memory)
        b->memory_checked_ms = now;
    for (size_t i = 0; i < b->n; i++) {
        bentry_t *e = &b->e[i];
        for (size_t k = 0; k < e->nprocs; k++)
            tick_proc(b, e, &e->procs[k], k, now, check_memory);
        if (e->is_schedule && !b->stopping)
            schedule_tick(b, e);
    }
    hooks_sweep(b);
    sweep(b);
}

long background_next_timeout(background_t *b)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    int64_t now = (int64_t)vc_mono_ms(), wait = 60000;
    for (size_t i = 0; i < b->n; i++) {
        const bentry_t *e = &b->e[i];
        for (size_t k = 0; k < e->nprocs; k++) {
            const bproc_t *p = &e->procs[k];
            int64_t w = wait;
            if (p->state == B_BACKOFF)
                w = p->next_start_ms - now;
            else if (p->state == B_STOPPING)
                w = p->stop_sent_ms + e->spec.stop_wait_ms - now;
            else if (p->state == B_STARTING)
                w = p->started_ms + e->spec.start_ms - now;
            else if (p->state == B_RUNNING && (e->spec.max_memory > 0 || e->spec.max_runtime_ms > 0))
                w = MEMORY_CHECK_MS;
            else if (p->state == B_STOPPED && !e->is_schedule && !e->is_hook && !e->held && !e->retired)
                w = 100; /* waits for what it replaces, or for the lock */
            if (w < wait)
                wait = w;
        }
        if (e->is_schedule && !e->retired) {
            int64_t w = schedule_wait_ms(b, e);
            if (w < wait)
                wait = w;
        }
    }
    return wait < 0 ? 0 : (long)wait;
}

int background_stop_all(background_t *b)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    b->stopping = 1;
    int left = 0;
    for (size_t i = 0; i < b->n; i++)
        for (size_t k = 0; k < b->e[i].nprocs; k++) {
            bg_stop(&b->e[i], &b->e[i].procs[k], "vc-php stops", 0);
            left += b->e[i].procs[k].pid > 0;
        }
    background_tick(b); /* SIGKILL at stop_wait */
    if (left == 0 && b->lock >= 0) {
        close(b->lock); /* the successor's turn */
        b->lock = -1;
    }
    return left == 0;
}

void background_kill_all(background_t *b)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    for (size_t i = 0; i < b->n; i++)
        for (size_t k = 0; k < b->e[i].nprocs; k++)
            if (b->e[i].procs[k].pid > 0) {
                kill(-b->e[i].procs[k].pid, SIGKILL);
                kill(b->e[i].procs[k].pid, SIGKILL);
            }
}
