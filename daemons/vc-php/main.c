/*
 * vc-php: the PHP pool. The main process is the broker (ZeroMQ, dispatch,
 * pool size, control); it forks the zygote before it opens ZeroMQ, and the
 * zygote forks the workers.
 */
#include "dispatch.h"
#include "vc_daemon.h"
#include "vc_log.h"
#include "vc_msg.h"
#include "vc_proc.h"
#include "vc_util.h"
#include "zygote.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long SIGTERM waits for busy workers before killing them. */
#define STOP_GRACE_MS 5000

typedef struct php {
    vc_daemon_t d;
    pid_t zygote;
    int zsock;
    void *front, *back;
    dispatch_t *dispatch;
} php_t;

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    php_t *p = arg;
    if (!strcmp(cmd->verb, "status") || !strcmp(cmd->verb, "ping") || !strcmp(cmd->verb, "workers")) {
        vc_reply_ok(reply, "vc-php is running");
        vc_reply_field(reply, "zygote", "%d", (int)p->zygote);
        dispatch_status(p->dispatch, reply);
    } else if (!strcmp(cmd->verb, "reload")) {
        /* A new zygote per configuration comes with graceful reload; for
         * now the pool keeps its code and says so. */
        vc_reply_ok(reply, "vc-php keeps its running configuration until restarted");
    }
}

static void on_zygote(php_t *p)
{
    zygote_note_t n;
    for (;;) {
        ssize_t got = recv(p->zsock, &n, sizeof(n), MSG_DONTWAIT);
        if (got != (ssize_t)sizeof(n))
            return;
        if (n.op == ZYGOTE_FORKED)
            dispatch_worker_forked(p->dispatch, n.pid);
        else if (n.op == ZYGOTE_EXITED)
            dispatch_worker_exited(p->dispatch, n.pid, n.status);
    }
}

static void spawn_wanted(php_t *p)
{
    for (int n = dispatch_wanted(p->dispatch); n > 0; n--) {
        zygote_cmd_t cmd = {ZYGOTE_SPAWN};
        if (send(p->zsock, &cmd, sizeof(cmd), MSG_NOSIGNAL) != (ssize_t)sizeof(cmd))
            return;
        dispatch_spawn_requested(p->dispatch);
    }
}

/* Forks the zygote and waits for PHP to start in it. */
static int start_zygote(php_t *p)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(sv[0]);
        vc_proc_die_with_parent(SIGKILL, parent);
        zygote_main(p->d.cfg, sv[1]);
    }
    close(sv[1]);
    p->zygote = pid;
    p->zsock = sv[0];
    zygote_note_t n;
    if (recv(p->zsock, &n, sizeof(n), 0) != (ssize_t)sizeof(n) || n.op != ZYGOTE_READY) {
        vc_log(VC_LOG_CRIT, "main", "the zygote did not start PHP");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    php_t p = {0};
    p.zsock = -1;
    vc_daemon_load(&p.d, "vc-php", argc, argv);
    /* Before any ZeroMQ context or LMDB handle exists in this process. */
    if (start_zygote(&p) < 0)
        return 1;
    vc_daemon_start(&p.d, on_command, &p);
    char *front_ep = vc_config_endpoint(p.d.cfg, "php");
    char *back_ep = vc_config_endpoint(p.d.cfg, "php-workers");
    p.front = vc_socket(p.d.zctx, ZMQ_ROUTER, front_ep, 1);
    p.back = vc_socket(p.d.zctx, ZMQ_ROUTER, back_ep, 1);
    if (p.front == NULL || p.back == NULL) {
        vc_log(VC_LOG_CRIT, "main", "zmq_bind() failed while opening \"%s\" and \"%s\": %s", front_ep, back_ep,
               zmq_strerror(errno));
        return 1;
    }
    free(front_ep);
    free(back_ep);
    /* Answers to a front that went away are dropped, not queued for ever. */
    int one = 1;
    zmq_setsockopt(p.front, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
    p.dispatch = dispatch_new(p.d.cfg, p.front, p.back, p.d.bus);
    spawn_wanted(&p);
    vc_daemon_ready(&p.d);

    int stopping = 0;
    uint64_t stop_deadline = 0;
    for (;;) {
        zmq_pollitem_t items[] = {
            {p.front, 0, stopping ? 0 : ZMQ_POLLIN, 0},
            {p.back, 0, ZMQ_POLLIN, 0},
            {vc_ctl_socket(p.d.ctl), 0, ZMQ_POLLIN, 0},
            {NULL, p.d.sigfd, ZMQ_POLLIN, 0},
            {NULL, p.zsock, ZMQ_POLLIN, 0},
        };
        long timeout = stopping ? 50 : dispatch_next_timeout(p.dispatch);
        if (zmq_poll(items, 5, timeout) < 0 && errno != EINTR)
            break;
        if (items[4].revents & ZMQ_POLLIN)
            on_zygote(&p);
        if (items[4].revents & (ZMQ_POLLERR)) {
            vc_log(VC_LOG_CRIT, "main", "lost the zygote");
            break;
        }
        if (items[1].revents & ZMQ_POLLIN)
            dispatch_on_back(p.dispatch);
        if (items[0].revents & ZMQ_POLLIN)
            dispatch_on_front(p.dispatch);
        if (items[2].revents & ZMQ_POLLIN)
            vc_ctl_handle(p.d.ctl);
        if (items[3].revents & ZMQ_POLLIN) {
            for (int sig; (sig = vc_proc_read_signal(p.d.sigfd)) != 0;) {
                if (sig == SIGCHLD) {
                    int status;
                    for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;)
                        if (pid == p.zygote) {
                            vc_log(VC_LOG_CRIT, "main", "the zygote (pid %d) died", (int)pid);
                            p.zygote = 0;
                        }
                } else if (sig == SIGTERM || sig == SIGINT || sig == SIGQUIT) {
                    if (!stopping) {
                        /* Finish what runs; take nothing new. */
                        stopping = 1;
                        stop_deadline = vc_mono_ms() + STOP_GRACE_MS;
                        dispatch_stop_workers(p.dispatch, SIGTERM);
                    }
                }
            }
        }
        if (p.zygote == 0)
            break;
        if (stopping) {
            if (dispatch_alive(p.dispatch) == 0)
                break;
            if (vc_mono_ms() >= stop_deadline) {
                dispatch_stop_workers(p.dispatch, SIGKILL);
                break;
            }
            continue;
        }
        dispatch_on_tick(p.dispatch);
        spawn_wanted(&p);
    }
    vc_log(VC_LOG_INFO, "main", "stopping");
    if (p.zygote > 0) {
        kill(p.zygote, SIGTERM);
        waitpid(p.zygote, NULL, 0);
    }
    dispatch_destroy(&p.dispatch);
    zmq_close(p.front);
    zmq_close(p.back);
    vc_daemon_fini(&p.d);
    return p.zygote == 0 && !stopping ? 1 : 0;
}
