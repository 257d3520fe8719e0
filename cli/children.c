/*
 * The supervisor's daemons: each started as its user with its readiness
 * pipe, restarted with backoff when it dies, replaced without closing a
 * port (fronts) and stopped within a bound.
 */
#include "sup.h"
#include "vc_events.h"
#include "vc_config.h"
#include "vc_log.h"
#include "walls.h"
#include "vc_proc.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

/* Restart backoff: the first restart is quick, a crash loop slows down. */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 30000
/* A daemon that ran this long is healthy again: its backoff resets. */
#define STABLE_MS 10000
/* How long a daemon may take to say it is ready. */
#define READY_TIMEOUT_MS 15000
/* How long daemons get to stop on SIGTERM before SIGKILL. */
#define STOP_GRACE_MS 3000

size_t sup_copies_of(const sup_t *s, const vc_section_t *sec)
{
    return sup_copies_in(s, s->cfg, sec);
}

size_t sup_copies_in(const sup_t *s, const vc_config_t *cfg, const vc_section_t *sec)
{
    /* A pool the supervisor could not prepare (no such user) is not run. */
    if (sec->supervision->copies == VC_COPIES_PER_POOL)
        return s->privs.npools;
    return vc_supervision_copies(cfg, sec);
}

int sup_serves_clients(const child_t *k)
{
    return k->how->serves_clients;
}

int sup_overlaps(const sup_t *s, const child_t *k)
{
    if (!k->how->overlaps)
        return 0;
    if (k->pool < 0)
        return 1; /* a front: the listeners are shared */
    /* A pool's Unix socket is taken over in one step (vc_link_listen); a
     * TCP port cannot be bound twice, so that pool stops first, and the
     * fronts hold new requests until its successor is up. */
    const char *name = s->privs.pools[k->pool].name;
    char *link = strcmp(name, "default") ? vc_asprintf("php.%s", name) : vc_strdup("php");
    char *ep = vc_config_endpoint(s->cfg, link);
    int unix_socket = strncmp(ep, "ipc://", 6) == 0;
    free(ep);
    free(link);
    return unix_socket;
}

pid_t sup_spawn_process(sup_t *s, const child_t *k, int replacing, int *ready_fd)
{
    int p[2];
    *ready_fd = -1;
    if (pipe2(p, O_CLOEXEC) != 0) {
        vc_log(VC_LOG_ERR, "up", "pipe() failed while starting \"%s\": %m", k->name);
        return -1;
    }
    char *path = vc_asprintf("%s/%s", s->cli->bin_dir, k->binary);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        int pool = k->pool;
        if (pool >= 0) {
            const char *name = s->privs.pools[pool].name;
            char *pool_file = vc_config_pool_file(s->data_dir, name);
            setenv("VC_CONFIG_FILE", pool_file, 1);
            setenv("VC_POOL", name, 1);
            /* Its scripts read its environment (getenv(), /proc): a secret
             * given to `vc up` as a variable stays with the suite. The
             * pool's copy of the configuration has what it needs. */
            for (size_t e = 0; vc_config_env_name(e); e++)
                if (vc_config_is_secret(vc_config_env_path(vc_config_env_name(e))))
                    unsetenv(vc_config_env_name(e));
            /* Programs a script runs write their temporary files there too. */
            char *home = vc_config_pool_home(s->data_dir, name);
            char *tmp = vc_asprintf("%s/tmp", home);
            setenv("TMPDIR", tmp, 1);
            free(tmp);
            free(home);
            free(pool_file);
        }
        if (s->privs.drop) {
            char uid[16];
            snprintf(uid, sizeof(uid), "%d", (int)s->privs.uid);
            setenv("VC_SUITE_UID", uid, 1); /* the pool takes fronts of this user only */
        }
        if (pool >= 0) {
            /* Inside them before the pool is its user: the namespace and
             * the filter need root's (or a user namespace's) rights. */
            walls_ctx_t w = {.cfg = s->cfg,
                             .pool = pool,
                             .data_dir = s->data_dir,
                             .conf_dir = s->conf_dir,
                             .bin_dir = s->cli->bin_dir};
            char err[512];
            int mounted = 0;
            if (walls_raise(&w, &mounted, err, sizeof(err)) < 0) {
                fprintf(stderr, "vc: the walls of pool \"%s\": %s\n", s->privs.pools[pool].name, err);
                _exit(78);
            }
            /* What separates it, for open_basedir's "auto" (vc-php). */
            setenv("VC_POOL_WALL",
                   mounted                                   ? "namespace"
                   : privs_pool_user_is_own(&s->privs, pool) ? "user"
                                                             : "none",
                   1);
        }
        /* Helpers that keep our user, started beside a daemon before it
         * becomes the suite's (cli/terminal.c). */
        static const struct {
            const char *binary;
            int (*start)(sup_t *s);
        } helpers[] = {{"vc-panel", sup_terminal_start}};
        for (size_t i = 0; i < VC_ARRAY_SIZE(helpers); i++)
            if (strcmp(k->binary, helpers[i].binary) == 0 && helpers[i].start(s) < 0)
                _exit(78);
        privs_become(&s->privs, pool);
        /* After the change of user, which clears the death signal. */
        vc_proc_die_with_parent(SIGTERM, parent);
        vc_proc_unblock_signals();
        /* The write end must survive exec; everything else is CLOEXEC. */
        int fd = dup(p[1]);
        char fdstr[16];
        snprintf(fdstr, sizeof(fdstr), "%d", fd);
        setenv("VC_READY_FD", fdstr, 1);
        setenv("VC_DATA", s->data_dir, 1);
        unsetenv("NOTIFY_SOCKET"); /* systemd's readiness is the supervisor's to tell */
        if (sup_serves_clients(k)) {
            /* The listeners cross the exec; the port never closes. */
            for (size_t i = 0; i < s->nlisteners; i++)
                fcntl(s->listeners[i].fd, F_SETFD, 0);
            /* The admin listener (metrics) goes to the first front only. */
            vc_listener_t given[16];
            size_t ngiven = 0;
            for (size_t i = 0; i < s->nlisteners && ngiven < 16; i++)
                if (s->listeners[i].kind != VC_LISTEN_ADMIN || k->instance == 0)
                    given[ngiven++] = s->listeners[i];
            char *fds = vc_listen_export(given, ngiven);
            setenv("VC_LISTEN_FDS", fds, 1);
            char inst[16];
            snprintf(inst, sizeof(inst), "%d", k->instance);
            setenv("VC_INSTANCE", inst, 1);
        }
        if (replacing)
            setenv("VC_REPLACING", "1", 1);
        execl(path, k->binary, "--data", s->data_dir, (char *)NULL);
        fprintf(stderr, "vc: execl() failed while starting \"%s\": %s\n", path, strerror(errno));
        _exit(127);
    }
    free(path);
    close(p[1]);
    if (pid < 0) {
        vc_log(VC_LOG_ERR, "up", "fork() failed while starting \"%s\": %m", k->name);
        close(p[0]);
        return -1;
    }
    *ready_fd = p[0];
    vc_log(VC_LOG_INFO, "up", "started %s (pid %d)", k->name, (int)pid);
    return pid;
}

void sup_spawn(sup_t *s, child_t *k)
{
    int ready_fd;
    pid_t pid = sup_spawn_process(s, k, 0, &ready_fd);
    if (pid < 0) {
        k->restart_at_ms = vc_mono_ms() + 1000;
        return;
    }
    k->pid = pid;
    k->ready_fd = ready_fd;
    k->ready = 0;
    k->started_ms = vc_mono_ms();
    k->restart_at_ms = 0;
}

/* Waits until the child says it is ready (or dies, or times out). Used at
 * start-up so each daemon finds the ones before it running. */
int sup_wait_ready(child_t *k)
{
    int ms = k->how->ready_timeout_ms > 0 ? k->how->ready_timeout_ms : READY_TIMEOUT_MS;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(k->ready_fd, &rd);
    char c;
    if (select(k->ready_fd + 1, &rd, NULL, NULL, &tv) <= 0 || read(k->ready_fd, &c, 1) != 1)
        return -1;
    close(k->ready_fd);
    k->ready_fd = -1;
    k->ready = 1;
    return 0;
}

static child_t *child_by_pid(sup_t *s, pid_t pid)
{
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].pid == pid)
            return &s->kids[i];
    return NULL;
}

static void describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exit %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "status %d", status);
}

void sup_reap(sup_t *s)
{
    int status;
    for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
        child_t *k = child_by_pid(s, pid);
        if (k == NULL && sup_successor_exited(s, pid, status))
            continue;
        if (k == NULL) {
            for (size_t i = 0; i < s->nretiring; i++)
                if (s->retiring[i] == pid) {
                    s->retiring[i] = s->retiring[--s->nretiring];
                    vc_log(VC_LOG_INFO, "up", "replaced process %d has finished", (int)pid);
                    break;
                }
            continue;
        }
        char how[64], pidstr[16];
        describe_status(status, how, sizeof(how));
        snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
        k->pid = 0;
        k->last_status = status;
        if (k->ready_fd >= 0) {
            close(k->ready_fd);
            k->ready_fd = -1;
        }
        if (s->stopping) {
            vc_log(VC_LOG_INFO, "up", "%s (pid %d) stopped: %s", k->name, (int)pid, how);
            continue;
        }
        uint64_t now = vc_mono_ms();
        if (now - k->started_ms >= STABLE_MS)
            k->backoff_ms = BACKOFF_MIN_MS;
        else
            k->backoff_ms = k->backoff_ms ? k->backoff_ms * 2 : BACKOFF_MIN_MS;
        if (k->backoff_ms > BACKOFF_MAX_MS)
            k->backoff_ms = BACKOFF_MAX_MS;
        k->restart_at_ms = now + k->backoff_ms;
        vc_log(VC_LOG_ERR, "up", "%s (pid %d) died: %s; restarting in %u ms", k->name, (int)pid, how, k->backoff_ms);
        char backoff[16];
        snprintf(backoff, sizeof(backoff), "%u", k->backoff_ms);
        vc_bus_publish(s->bus, VC_EVENT(VC_DAEMON_EXITED), VC__SEVERITY__ERROR, "daemon", k->name, "pid", pidstr,
                       "status", how, "restart_in_ms", backoff, NULL);
    }
}

void sup_restart_due(sup_t *s)
{
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < s->nkids; i++) {
        child_t *k = &s->kids[i];
        if (k->pid != 0 || k->restart_at_ms == 0 || k->restart_at_ms > now)
            continue;
        sup_spawn(s, k);
        if (k->pid == 0)
            continue;
        k->restarts++;
        k->restart_pending = 1;
    }
}

/* A restarted daemon is ready: say so on the bus. */
void sup_announce_restart(sup_t *s, child_t *k)
{
    k->restart_pending = 0;
    char pidstr[16], n[16];
    snprintf(pidstr, sizeof(pidstr), "%d", (int)k->pid);
    snprintf(n, sizeof(n), "%u", k->restarts);
    vc_log(VC_LOG_NOTICE, "up", "%s is back (pid %d, restart %u)", k->name, (int)k->pid, k->restarts);
    vc_bus_publish(s->bus, VC_EVENT(VC_DAEMON_RESTARTED), VC__SEVERITY__WARNING, "daemon", k->name, "pid", pidstr,
                   "restarts", n, NULL);
}

long sup_next_timeout(sup_t *s)
{
    long t = 1000;
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].restart_at_ms) {
            long d = s->kids[i].restart_at_ms > now ? (long)(s->kids[i].restart_at_ms - now) : 0;
            if (d < t)
                t = d;
        }
    return t;
}

/* SIGTERM to every child, newest first, then SIGKILL after the grace. */
/* Whether any daemon of that binary (all of them if NULL), or a replaced
 * one still finishing, is alive. */
static int any_alive(sup_t *s, const char *binary)
{
    sup_reap(s);
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].pid > 0 && (binary == NULL || strcmp(s->kids[i].binary, binary) == 0))
            return 1;
    return binary == NULL && s->nretiring > 0;
}

/* Newest first, as docs/running.md says: the fronts (they finish what
 * they hold, so they still need the pools), then the pools, then the bus
 * (everyone's last events). Together, every clean stop logged "lost the
 * link to the PHP pool". Each stage waits STOP_GRACE_MS at most; what is
 * left after the last is killed. */
void sup_stop_children(sup_t *s)
{
    s->stopping = 1;
    for (size_t i = 0; i < s->nretiring; i++)
        kill(s->retiring[i], SIGTERM);
    for (size_t i = s->nkids; i-- > 0;) {
        const char *binary = s->kids[i].binary;
        if (i + 1 < s->nkids && strcmp(s->kids[i + 1].binary, binary) == 0)
            continue; /* this binary's stage is done */
        for (size_t j = 0; j < s->nkids; j++)
            if (s->kids[j].pid > 0 && strcmp(s->kids[j].binary, binary) == 0)
                kill(s->kids[j].pid, SIGTERM);
        uint64_t deadline = vc_mono_ms() + STOP_GRACE_MS;
        while (any_alive(s, binary) && vc_mono_ms() < deadline)
            usleep(20000);
    }
    uint64_t deadline = vc_mono_ms() + STOP_GRACE_MS;
    while (any_alive(s, NULL) && vc_mono_ms() < deadline)
        usleep(20000);
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].pid > 0) {
            vc_log(VC_LOG_WARN, "up", "%s (pid %d) did not stop in %d ms: killing it", s->kids[i].name,
                   (int)s->kids[i].pid, STOP_GRACE_MS);
            kill(s->kids[i].pid, SIGKILL);
        }
    for (size_t i = 0; i < s->nretiring; i++)
        kill(s->retiring[i], SIGKILL);
    while (waitpid(-1, NULL, 0) > 0)
        ;
}
