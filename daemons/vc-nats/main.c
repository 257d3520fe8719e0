/*
 * vc-nats: this node's NATS server member, for a cluster whose nodes run
 * NATS themselves (cluster.nats_server = true, docs/cluster.md). It writes
 * nats-server's configuration from cluster.* (nats_conf.c), runs Debian's
 * nats-server as its child, says it is ready once the member takes
 * clients, and exits when the member does, so that `vc up` supervises and
 * restarts the member like any daemon of the suite. SIGTERM stops the
 * member (it ends its connections and flushes JetStream) and then itself.
 */
#include "nats_conf.h"
#include "vc_daemon.h"
#include "vc_log.h"
#include "vc_loop.h"
#include "vc_proc.h"
#include "vc_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the member may take to take clients; to stop on SIGTERM. */
#define START_MS 15000
#define STOP_MS 10000

typedef struct natsd {
    vc_daemon_t d;
    const mesh_settings_t *cfg;
    pid_t member;
    int exit_code;
    char *conf_path, *store_dir;
} natsd_t;

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)cmd;
    natsd_t *n = arg;
    vc_reply_ok(reply, "vc-nats is running: nats-server pid %d, clients on %s", (int)n->member, n->cfg->nats_listen);
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "member_pid", "%d", (int)n->member);
    vc_reply_field(reply, "listen", "%s", n->cfg->nats_listen);
    vc_reply_field(reply, "routes", "%zu", n->cfg->nnats_routes);
    vc_reply_field(reply, "store", "%s", n->store_dir);
}

static const vc_verb_t verbs[] = {
    {"status", "", "the member's pid, its client port, its routes", on_status},
    {"ping", "", "as status", on_status},
};

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
}

static pid_t start_member(natsd_t *n)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        vc_proc_die_with_parent(SIGTERM, parent);
        vc_proc_unblock_signals();
        execlp("nats-server", "nats-server", "-c", n->conf_path, (char *)NULL);
        fprintf(stderr, "vc-nats: cannot run nats-server (Debian's package nats-server): %s\n", strerror(errno));
        _exit(127);
    }
    return pid;
}

/* Whether the member's client port takes a connection. */
static int takes_clients(const char *hostport)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (colon == NULL || (size_t)(colon - hostport) >= sizeof(host))
        return 0;
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = '\0';
    if (!strcmp(host, "0.0.0.0") || host[0] == '\0')
        strcpy(host, "127.0.0.1");
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
        return 0;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int ok = fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return ok;
}

/* The member's exit is ours: the supervisor restarts us, and so it. */
static int member_gone(natsd_t *n)
{
    int st;
    pid_t p = waitpid(n->member, &st, WNOHANG);
    if (p != n->member)
        return 0;
    vc_log(VC_LOG_ERR, "member", "nats-server (pid %d) exited: %s %d", (int)p, WIFSIGNALED(st) ? "signal" : "status",
           WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    n->member = 0;
    n->exit_code = 1;
    return 1;
}

static int on_signal(void *arg, int sig)
{
    natsd_t *n = arg;
    if (sig == SIGCHLD)
        return member_gone(n);
    return vc_loop_stop_signal(sig);
}

static void stop_member(natsd_t *n)
{
    if (n->member <= 0)
        return;
    kill(n->member, SIGTERM);
    uint64_t end = vc_mono_ms() + STOP_MS;
    while (vc_mono_ms() < end)
        if (waitpid(n->member, NULL, WNOHANG) == n->member)
            return;
        else
            usleep(20000); /* waiting for a child to exit; bounded by STOP_MS */
    kill(n->member, SIGKILL);
    waitpid(n->member, NULL, 0);
}

int main(int argc, char **argv)
{
    natsd_t n = {0};
    vc_daemon_load(&n.d, "vc-nats", argc, argv);
    n.cfg = vc_mesh_settings_of(n.d.cfg);
    if (!n.cfg->nats_server) {
        vc_log(VC_LOG_CRIT, "main", "cluster.nats_server is not set: this node runs no NATS member");
        return 1;
    }
    n.store_dir = vc_asprintf("%s/nats", n.d.cfg->state_dir);
    char *dir = vc_asprintf("%s/nats", n.d.cfg->run_dir);
    n.conf_path = vc_asprintf("%s/nats.conf", dir);
    char why[512];
    if (vc_mkdirs(n.store_dir, 0700) < 0 || vc_mkdirs(dir, 0700) < 0) {
        vc_log(VC_LOG_CRIT, "main", "cannot make \"%s\" or \"%s\": %m", n.store_dir, dir);
        return 1;
    }
    if (nats_conf_write(n.cfg, n.conf_path, n.store_dir, why, sizeof(why)) < 0) {
        vc_log(VC_LOG_CRIT, "main", "cannot prepare the NATS member: %s", why);
        return 1;
    }
    free(dir);
    vc_daemon_start(&n.d, on_command, &n);
    n.member = start_member(&n);
    uint64_t end = vc_mono_ms() + START_MS;
    while (!takes_clients(n.cfg->nats_listen)) {
        if (member_gone(&n) || vc_mono_ms() > end) {
            vc_log(VC_LOG_CRIT, "main", "nats-server did not take clients on %s", n.cfg->nats_listen);
            stop_member(&n);
            return 1;
        }
        usleep(20000); /* a port opening; bounded by START_MS */
    }
    vc_log(VC_LOG_INFO, "main", "nats-server (pid %d) takes clients on %s", (int)n.member, n.cfg->nats_listen);
    vc_daemon_ready(&n.d);
    vc_loop_t loop = {.ctl = n.d.ctl, .sigfd = n.d.sigfd, .arg = &n, .on_signal = on_signal};
    vc_loop_run(&loop);
    vc_log(VC_LOG_INFO, "main", "stopping");
    stop_member(&n);
    vc_daemon_fini(&n.d);
    free(n.conf_path);
    free(n.store_dir);
    return n.exit_code;
}
