/*
 * vc-php: one PHP pool. The main process is the broker: the fronts' links
 * and the workers' (our own framing, libcommon/vc_link.h; ZeroMQ carries
 * only control and events), dispatch, lending, pool size, control. It runs
 * as the pool's user and starts each zygote by fork and exec of itself
 * with --zygote-fd, so a zygote never inherits ZeroMQ or LMDB state, and a
 * reload can start a new zygote (new code, new configuration) while the
 * old one's workers finish what they hold.
 */
#include "background.h"
#include "broker.h"
#include "pool_ini.h"
#include "vc_events.h"
#include "vc_confstore.h"
#include "vc_daemon.h"
#include "vc_log.h"
#include "vc_loop.h"
#include "vc_zmq.h"
#include "vc_proc.h"
#include "vc_util.h"
#include "worker_clock.h"
#include "zygote.h"

#include <errno.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long SIGTERM waits for busy workers before killing them. */
#define STOP_GRACE_MS 5000

typedef enum { Z_NONE, Z_BOOTING, Z_CURRENT, Z_RETIRING } zstate_t;

/* Links sent with spawn commands whose workers are not forked yet: the
 * zygote forks in order, so each FORKED note takes the oldest. */
#define MAX_PENDING 256

typedef struct pending {
    int link;              /* our end of the worker's link */
    worker_clock_t *clock; /* its clock (worker_clock.h), or NULL */
} pending_t;

typedef struct zyg {
    pid_t pid;
    int sock;
    unsigned gen;
    zstate_t state;
    vc_config_t *cfg; /* the configuration it booted with */
    pending_t pending[MAX_PENDING];
    size_t npending;
} zyg_t;

typedef struct php {
    vc_daemon_t d;
    zyg_t z[3]; /* current, booting, retiring */
    unsigned next_gen;
    fronts_t *fronts;
    broker_t *broker;
    background_t *background; /* the pool's sites' background processes and schedules */
    int reloads;
    /* The broker's loop (vc_loop.h): what one turn waits on, and the stop. */
    zyg_t *polled[3]; /* the zygotes of this turn's items, in order */
    size_t npolled, nfronts, nbackground;
    int stopping;
    uint64_t stop_deadline;
} php_t;

/* A zygote's life: booting, then current, then retiring (a newer one is
 * current) and gone; a booting one that fails, or any that stops, is gone
 * at once. The slot of one gone boots the next. */
static void zyg_move(zyg_t *z, zstate_t to)
{
    static const unsigned char may_move[4][4] = {
        /* to:         NONE BOOTING CURRENT RETIRING */
        [Z_NONE] = {1, 1, 0, 0},     /* a stop of a free slot changes nothing */
        [Z_BOOTING] = {1, 0, 1, 0},  /* failed or stopped, or ready */
        [Z_CURRENT] = {1, 0, 0, 1},  /* stopped, or a newer one is ready */
        [Z_RETIRING] = {1, 0, 0, 0}, /* its workers drained */
    };
    VC_ASSERT(may_move[z->state][to]);
    z->state = to;
}

static zyg_t *zyg_in(php_t *p, zstate_t st)
{
    for (size_t i = 0; i < VC_ARRAY_SIZE(p->z); i++)
        if (p->z[i].state == st)
            return &p->z[i];
    return NULL;
}

/* Forks and execs a zygote with cfg's data directory; it reports on sock. */
static int zygote_start(php_t *p, zyg_t *z, vc_config_t *cfg)
{
    int end;
    pid_t pid = vc_proc_fork_linked(SIGKILL, &end);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* Only the zygote's end crosses the exec. */
        vc_proc_unblock_signals();
        int fd = dup(end);
        char fdstr[16];
        snprintf(fdstr, sizeof(fdstr), "%d", fd);
        /* Run alone, it reads the files the broker read, not the store. */
        if (p->d.conf_dir)
            execl("/proc/self/exe", "vc-php", "--data", p->d.data_dir, "--conf", p->d.conf_dir, "--zygote-fd", fdstr,
                  (char *)NULL);
        else
            execl("/proc/self/exe", "vc-php", "--data", p->d.data_dir, "--zygote-fd", fdstr, (char *)NULL);
        _exit(127);
    }
    VC_ASSERT(z->state == Z_NONE); /* a free slot */
    memset(z, 0, sizeof(*z));
    z->pid = pid;
    z->sock = end;
    z->gen = ++p->next_gen;
    zyg_move(z, Z_BOOTING);
    z->cfg = cfg;
    return 0;
}

static pending_t pending_pop(zyg_t *z)
{
    if (z->npending == 0)
        return (pending_t){-1, NULL};
    pending_t pd = z->pending[0];
    memmove(z->pending, z->pending + 1, (z->npending - 1) * sizeof(pending_t));
    z->npending--;
    return pd;
}

/* A spawn that made no worker: its link and clock go. */
static void pending_drop(pending_t pd)
{
    if (pd.link >= 0)
        close(pd.link);
    worker_clock_unmap(&pd.clock);
}

static void zygote_stop(zyg_t *z)
{
    while (z->npending > 0)
        pending_drop(pending_pop(z));
    if (z->pid > 0)
        kill(z->pid, SIGTERM);
    if (z->sock >= 0)
        close(z->sock);
    z->sock = -1;
    zyg_move(z, Z_NONE);
    /* Its cfg may still be the broker's: freed by the caller. */
}

static void spawn_wanted(php_t *p)
{
    zyg_t *cur = zyg_in(p, Z_CURRENT);
    if (cur == NULL)
        return;
    for (int n = broker_wanted(p->broker); n > 0 && cur->npending < MAX_PENDING; n--) {
        /* The worker's link: our end stays, its end goes with the command. */
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
            vc_log(VC_LOG_ERR, "main", "socketpair() failed while spawning a worker: %s", strerror(errno));
            return;
        }
        /* Its clock goes with it: without one (no memfd) the worker
         * runs, but a request on a lent connection is not timed. */
        worker_clock_t *clock;
        int fds[2] = {sv[1], worker_clock_create(&clock)};
        size_t fds_len = (fds[1] >= 0 ? 2 : 1) * sizeof(int);
        zygote_cmd_t cmd = {ZYGOTE_SPAWN};
        char ctl[CMSG_SPACE(sizeof(fds))];
        memset(ctl, 0, sizeof(ctl));
        struct iovec iov = {&cmd, sizeof(cmd)};
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = CMSG_SPACE(fds_len)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(fds_len);
        memcpy(CMSG_DATA(c), fds, fds_len);
        ssize_t sent = sendmsg(cur->sock, &mh, MSG_NOSIGNAL);
        close(sv[1]);
        if (fds[1] >= 0)
            close(fds[1]);
        if (sent != (ssize_t)sizeof(cmd)) {
            pending_drop((pending_t){sv[0], clock});
            return;
        }
        /* A worker that stops reading (SIGSTOP) must not hold the broker
         * in a write for ever: past this, the write fails and the worker
         * is killed. */
        struct timeval tv = {5, 0};
        setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        cur->pending[cur->npending++] = (pending_t){sv[0], clock};
        broker_spawn_requested(p->broker);
    }
}

/* A booting zygote is ready: it becomes current, the current one retires. */
static void promote(php_t *p, zyg_t *z)
{
    zyg_t *old = zyg_in(p, Z_CURRENT);
    if (old) {
        zyg_t *prev = zyg_in(p, Z_RETIRING);
        if (prev) {
            /* A reload while another was still draining: that one goes
             * now. */
            zygote_stop(prev);
            vc_config_destroy(&prev->cfg);
        }
        zyg_move(old, Z_RETIRING);
    }
    zyg_move(z, Z_CURRENT);
    broker_new_generation(p->broker, z->gen, z->cfg);
    /* The new generation's releases: background processes of a release
     * that changed are replaced, after their job (background.h). */
    background_configure(p->background, z->cfg);
    char gen[16];
    snprintf(gen, sizeof(gen), "%u", z->gen);
    if (old) {
        vc_log(VC_LOG_NOTICE, "main", "reloaded: generation %u serves, %u drains", z->gen, old->gen);
        vc_bus_publish(p->d.bus, VC_EVENT(PHP_RELOADED), VC__SEVERITY__NOTICE, "generation", gen, NULL);
    }
}

/* A note from the zygote, and the descriptor that came with it (-1). */
static ssize_t recv_note(int sock, zygote_note_t *n, int *fd)
{
    char ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {n, sizeof(*n)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
    *fd = -1;
    ssize_t got = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *c = got > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int)))
            memcpy(fd, CMSG_DATA(c), sizeof(int));
    return got;
}

static void on_zygote(php_t *p, zyg_t *z)
{
    zygote_note_t n;
    for (;;) {
        int pidfd;
        ssize_t got = recv_note(z->sock, &n, &pidfd);
        if (pidfd >= 0 && (got != (ssize_t)sizeof(n) || n.op != ZYGOTE_FORKED)) {
            close(pidfd); /* only a fork's note carries one */
            pidfd = -1;
        }
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
            vc_log(VC_LOG_ERR, "main", "zygote %d (generation %u) is gone", (int)z->pid, z->gen);
            if (z->state == Z_BOOTING) {
                vc_bus_publish(p->d.bus, VC_EVENT(PHP_RELOAD_FAILED), VC__SEVERITY__ERROR, "reason",
                               "the new zygote exited while booting", NULL);
                vc_config_destroy(&z->cfg);
            }
            zygote_stop(z);
            return;
        }
        if (got != (ssize_t)sizeof(n))
            return;
        if (n.op == ZYGOTE_READY && z->state == Z_BOOTING)
            promote(p, z);
        else if (n.op == ZYGOTE_FORKED) {
            pending_t pd = pending_pop(z);
            broker_worker_forked(p->broker, n.pid, pidfd, z->gen, pd.link, pd.clock);
        } else if (n.op == ZYGOTE_EXITED)
            broker_worker_exited(p->broker, n.pid, n.status);
        else if (n.op == ZYGOTE_FAILED && n.pid == 0) {
            pending_drop(pending_pop(z)); /* fork() failed: that link has no worker */
        } else if (n.op == ZYGOTE_FAILED && z->state == Z_BOOTING) {
            vc_log(VC_LOG_ERR, "main", "the new PHP code did not boot; generation %u keeps serving",
                   zyg_in(p, Z_CURRENT) ? zyg_in(p, Z_CURRENT)->gen : 0);
            vc_bus_publish(p->d.bus, VC_EVENT(PHP_RELOAD_FAILED), VC__SEVERITY__ERROR, "reason",
                           "the zygote failed to boot", NULL);
            zygote_stop(z);
            vc_config_destroy(&z->cfg);
        }
    }
}

/* Reload: a new zygote with the configuration in force now. */
static int reload(php_t *p, char *msg, size_t len)
{
    if (zyg_in(p, Z_BOOTING)) {
        snprintf(msg, len, "a reload is already booting");
        return 0;
    }
    zyg_t *slot = zyg_in(p, Z_NONE);
    char err[1024] = "";
    vc_config_t *cfg = vc_confstore_load(p->d.data_dir, err, sizeof(err));
    if (cfg && vc_config_select_pool(cfg, getenv("VC_POOL")) < 0) {
        snprintf(err, sizeof(err), "the pool \"%s\" is no longer in the configuration", getenv("VC_POOL"));
        vc_config_destroy(&cfg);
    }
    if (cfg == NULL) {
        snprintf(msg, len, "cannot load the configuration: %s", err);
        return -1;
    }
    if (slot == NULL || zygote_start(p, slot, cfg) < 0) {
        vc_config_destroy(&cfg);
        snprintf(msg, len, "cannot start a new zygote");
        return -1;
    }
    p->reloads++;
    snprintf(msg, len, "booting generation %u", slot->gen);
    return 0;
}

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    php_t *p = arg;
    vc_reply_ok(reply, "vc-php is running");
    zyg_t *cur = zyg_in(p, Z_CURRENT);
    const char *pool = getenv("VC_POOL");
    struct passwd *pw = getpwuid(geteuid());
    vc_reply_field(reply, "pool", "%s", pool && *pool ? pool : "default");
    vc_reply_field(reply, "user", "%s", pw ? pw->pw_name : "?");
    vc_reply_field(reply, "wall", "%s", pool_ini_wall());
    vc_reply_field(reply, "zygote", "%d", cur ? (int)cur->pid : 0);
    vc_reply_field(reply, "generation", "%u", cur ? cur->gen : 0);
    vc_reply_field(reply, "reloads", "%d", p->reloads);
    broker_status(p->broker, reply);
}

static void on_scale(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    php_t *p = arg;
    long n = cmd->n_args == 1 ? atol(cmd->args[0]) : 0;
    /* php.workers' own range: scale cannot set what the configuration
     * would refuse. */
    if (n < 1 || n > 1024) {
        vc_reply_fail(reply, "usage: scale N (1 to 1024 workers, as php.workers)");
        return;
    }
    broker_scale(p->broker, n);
    vc_reply_ok(reply, "pool size set to %ld workers", n);
}

static void on_recycle(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    php_t *p = arg;
    char *end = NULL;
    long pid = cmd->n_args == 1 ? strtol(cmd->args[0], &end, 10) : 0;
    if (pid <= 0 || *end != '\0')
        vc_reply_fail(reply, "usage: recycle PID (a worker of this pool, as status lists them)");
    else if (broker_recycle(p->broker, (pid_t)pid) < 0)
        vc_reply_fail(reply, "no worker %ld of this pool's current generation, or it is already leaving", pid);
    else
        vc_reply_ok(reply, "worker %ld recycled: it exits once its request is answered, and a fresh one comes", pid);
}

static void on_background(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    php_t *p = arg;
    background_verb(p->background, cmd, reply);
}

static void on_reload(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    char msg[1200];
    if (reload(arg, msg, sizeof(msg)) == 0)
        vc_reply_ok(reply, "%s", msg);
    else
        vc_reply_fail(reply, "%s", msg);
}

static const vc_verb_t verbs[] = {
    {"status", "", "the pool and a record a worker", on_status},
    {"ping", "", "as status", on_status},
    {"workers", "", "as status", on_status},
    {"scale", "N", "set the pool to N workers (1 to 1024)", on_scale},
    {"reload", "", "boot a new zygote generation with the stored configuration", on_reload},
    {"recycle", "PID", "replace one worker once its request is answered", on_recycle},
    {"background", "[SITE]", "the pool's background processes and schedule entries (vc bg, vc schedule)",
     on_background},
    {"background-start", "SITE NAME", "start a background entry's processes (a failed or stopped one too)",
     on_background},
    {"background-stop", "SITE NAME", "stop a background entry's processes, and hold them until started", on_background},
    {"background-restart", "SITE NAME", "stop a background entry's processes (after their job) and start them anew",
     on_background},
    {"hook-run", "SITE DIR COMMAND", "run a release hook in a release of the site, in the pool (vc-fed)",
     on_background},
    {"hook-status", "ID OFFSET", "a hook run's state, exit status and output from OFFSET", on_background},
    {"hook-stop", "ID", "stop a hook run", on_background},
    {"schedule-run", "SITE NAME MINUTE", "(vc-mesh) run a schedule entry's minute, which this node took in the cluster",
     on_background},
};

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
}

/* Drops retiring zygotes whose workers are all gone. */
static void reap_retired(php_t *p)
{
    zyg_t *old = zyg_in(p, Z_RETIRING);
    if (old && broker_generation_alive(p->broker, old->gen) == 0) {
        zygote_stop(old);
        vc_config_destroy(&old->cfg);
    }
}

/* --zygote-fd N: this process is a zygote exec'd by the broker. */
static int zygote_fd(int *argc, char **argv)
{
    for (int i = 1; i + 1 < *argc; i++)
        if (!strcmp(argv[i], "--zygote-fd")) {
            int fd = atoi(argv[i + 1]);
            for (int j = i; j + 2 <= *argc; j++)
                argv[j] = argv[j + 2];
            *argc -= 2;
            return fd;
        }
    return -1;
}

/* One turn's items: the zygotes, the fronts, then the workers' epoll set
 * (vc_loop.h). Linked fronts are read while stopping too: the workers
 * lent to them come back that way, and a request that comes now is
 * handed back (leaving.c). */
static size_t gather(void *arg, zmq_pollitem_t *items, size_t max)
{
    php_t *p = arg;
    size_t n = 0;
    p->npolled = 0;
    for (size_t i = 0; i < VC_ARRAY_SIZE(p->z); i++)
        if (p->z[i].state != Z_NONE) {
            p->polled[p->npolled++] = &p->z[i];
            items[n++] = (zmq_pollitem_t){NULL, p->z[i].sock, ZMQ_POLLIN, 0};
        }
    p->nfronts = fronts_pollitems(p->fronts, items + n, max - n - 1, !p->stopping);
    n += p->nfronts;
    p->nbackground = background_pollitems(p->background, items + n, max - n - 1);
    n += p->nbackground;
    items[n++] = (zmq_pollitem_t){NULL, broker_poll_fd(p->broker), ZMQ_POLLIN, 0};
    broker_watch(p->broker);
    return n;
}

static void ready(void *arg, const zmq_pollitem_t *items, size_t n)
{
    php_t *p = arg;
    /* Workers first: the zygote's notes change the worker table. */
    if (items[n - 1].revents & ZMQ_POLLIN)
        broker_on_workers(p->broker);
    for (size_t i = 0; i < p->npolled; i++)
        if (items[i].revents & (ZMQ_POLLIN | ZMQ_POLLERR))
            on_zygote(p, p->polled[i]);
    fronts_on_poll(p->fronts, items + p->npolled, p->nfronts, broker_on_front, p->broker);
    background_on_poll(p->background, items + p->npolled + p->nfronts, p->nbackground);
    /* What this turn answered goes out in one write per front. */
    fronts_flush(p->fronts);
}

static long next_timeout(void *arg)
{
    php_t *p = arg;
    long bg = background_next_timeout(p->background), broker = broker_next_timeout(p->broker);
    return p->stopping ? 50 : broker < bg ? broker : bg;
}

static int on_signal(void *arg, int sig)
{
    php_t *p = arg;
    if (sig == SIGCHLD) {
        /* Zygotes are our children; their workers are not. */
        int status;
        for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
            if (background_reaped(p->background, pid, status))
                continue;
            for (size_t i = 0; i < VC_ARRAY_SIZE(p->z); i++)
                if (p->z[i].pid == pid)
                    p->z[i].pid = 0;
        }
    } else if (sig == SIGHUP) {
        char msg[1200];
        reload(p, msg, sizeof(msg));
    } else if (!p->stopping) {
        /* Finish what runs; take nothing new (a successor, if the
         * supervisor started one, takes it). */
        p->stopping = 1;
        p->stop_deadline = vc_mono_ms() + STOP_GRACE_MS;
        broker_leave(p->broker);
    }
    return 0; /* the stop ends in after_turn, once what runs is done */
}

static int after_turn(void *arg)
{
    php_t *p = arg;
    zyg_t *cur = zyg_in(p, Z_CURRENT);
    if (cur == NULL || cur->pid == 0) {
        vc_log(VC_LOG_CRIT, "main", "the zygote died: exiting so the supervisor restarts the pool");
        return 1;
    }
    if (p->stopping) {
        broker_release_fronts(p->broker);
        int background_gone = background_stop_all(p->background);
        if ((broker_has_left(p->broker) && background_gone) || vc_mono_ms() >= p->stop_deadline) {
            broker_kill_workers(p->broker);
            background_kill_all(p->background);
            return 1;
        }
        return 0;
    }
    broker_on_tick(p->broker);
    background_tick(p->background);
    reap_retired(p);
    spawn_wanted(p);
    return 0;
}

int main(int argc, char **argv)
{
    static php_t p;
    int zfd = zygote_fd(&argc, argv);
    vc_daemon_load(&p.d, "vc-php", argc, argv);
    if (zfd >= 0) {
        fcntl(zfd, F_SETFD, FD_CLOEXEC);
        zygote_main(p.d.cfg, zfd);
    }
    for (size_t i = 0; i < VC_ARRAY_SIZE(p.z); i++)
        p.z[i].sock = -1;
    /* The broker runs as the pool's user, as its workers do (it must
     * signal them and read their /proc). Not dumpable: a worker of the
     * same user can then neither ptrace it nor open its /proc/PID/mem or
     * fds, which hold the fronts' links. A zygote, exec'd, is dumpable
     * again, so the broker still reads its workers' memory figures. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* Sockets made here take the directory's group (the suite's, for the
     * fronts) and its rights; nobody else's. */
    umask(007);

    vc_daemon_start(&p.d, on_command, &p);
    /* The default pool listens at "php", a named one at "php.NAME". */
    char *link_name =
        strcmp(p.d.cfg->php.name, "default") ? vc_asprintf("php.%s", p.d.cfg->php.name) : vc_strdup("php");
    char *front_ep = vc_config_endpoint(p.d.cfg, link_name);
    free(link_name);
    p.fronts = fronts_new(front_ep);
    free(front_ep);
    if (p.fronts == NULL)
        return 1;
    fronts_set_key(p.fronts, p.d.cfg->link_key);
    p.broker = broker_new(p.d.cfg, p.fronts, p.d.bus);
    if (p.broker == NULL)
        return 1;
    p.background = background_new(p.d.bus);

    /* The first zygote boots before we say we are ready. */
    /* Each zygote slot owns the configuration it booted with; the daemon's
     * own copy moves into the first. */
    vc_config_t *cfg0 = p.d.cfg;
    p.d.cfg = NULL;
    if (zygote_start(&p, &p.z[0], cfg0) < 0)
        return 1;
    while (p.z[0].state == Z_BOOTING) {
        zmq_pollitem_t it = {NULL, p.z[0].sock, ZMQ_POLLIN, 0};
        zmq_poll(&it, 1, 1000);
        on_zygote(&p, &p.z[0]);
    }
    if (p.z[0].state != Z_CURRENT) {
        vc_log(VC_LOG_CRIT, "main", "PHP did not start");
        return 1;
    }
    spawn_wanted(&p);
    if (fronts_publish(p.fronts) < 0)
        return 1;
    vc_daemon_ready(&p.d);

    vc_loop_t loop = {.ctl = p.d.ctl,
                      .sigfd = p.d.sigfd,
                      .arg = &p,
                      .gather = gather,
                      .ready = ready,
                      .timeout = next_timeout,
                      .on_signal = on_signal,
                      .after = after_turn};
    vc_loop_run(&loop);
    vc_log(VC_LOG_INFO, "main", "stopping");
    for (size_t i = 0; i < VC_ARRAY_SIZE(p.z); i++) {
        pid_t pid = p.z[i].pid;
        if (p.z[i].state != Z_NONE)
            zygote_stop(&p.z[i]);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        vc_config_destroy(&p.z[i].cfg);
    }
    broker_destroy(&p.broker);
    background_destroy(&p.background);
    fronts_flush(p.fronts);
    fronts_destroy(&p.fronts);
    vc_daemon_fini(&p.d);
    return p.stopping ? 0 : 1;
}
