#include "zygote.h"
#include "release_pin.h"
#include "worker_mode.h"
#include "sapi.h"
#include "vc_log.h"
#include "vc_proc.h"
#include "vc_util.h"
#include "worker_clock.h"
#include "worker_link.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A note to the broker, with a descriptor if fd >= 0. */
static void note_with(int sock, int op, pid_t pid, int status, int fd)
{
    zygote_note_t n = {op, pid, status};
    char ctl[CMSG_SPACE(sizeof(int))];
    memset(ctl, 0, sizeof(ctl));
    struct iovec iov = {&n, sizeof(n)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        mh.msg_control = ctl;
        mh.msg_controllen = sizeof(ctl);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(n))
        _exit(1); /* the broker is gone: so are we */
}

static void note(int sock, int op, pid_t pid, int status)
{
    note_with(sock, op, pid, status, -1);
}

/* The broker signals workers, which are our children, not its own: by
 * pid, a worker we had reaped could be a stranger by then (pids are
 * reused), and a SIGTERM meant for a worker once stopped another
 * program. A descriptor of the process itself cannot go astray. Opened
 * here, before we can reap the child; /proc/PID rather than
 * pidfd_open(), which the pool's system call filter denies (walls.c);
 * pidfd_send_signal() takes either. -1 if /proc is not there. */
static int process_fd(pid_t pid)
{
    char path[32];
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

void zygote_boot_failed(int sock)
{
    note(sock, ZYGOTE_FAILED, getpid(), 0);
}

/* A command and the descriptors that came with it (-1 where none): the
 * worker's link, then its clock (worker_clock.h). */
static ssize_t recv_cmd(int sock, zygote_cmd_t *cmd, int fds[2])
{
    char ctl[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = {cmd, sizeof(*cmd)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
    fds[0] = fds[1] = -1;
    ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            memcpy(fds, CMSG_DATA(c), (k < 2 ? k : 2) * sizeof(int));
        }
    return n;
}

/* Every process left below the zygote (its workers' process groups, and
 * processes orphaned to it as their subreaper): killed, and reaped. */
static void end_descendants(void)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "re");
    for (long pid; f && fscanf(f, "%ld", &pid) == 1;) {
        kill(-(pid_t)pid, SIGKILL);
        kill((pid_t)pid, SIGKILL);
    }
    if (f)
        fclose(f);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

int zygote_serve(const vc_config_t *cfg, int sock, int sigfd)
{
    /* A process a script starts in the background and leaves (its parent
     * exits) comes back to us, not to init: it is ours to end. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    pid_t zygote = getpid();
    vc_log(VC_LOG_INFO, "zygote", "PHP is ready (%s mode): forking workers", cfg->php.mode);
    note(sock, ZYGOTE_READY, zygote, 0);
    for (;;) {
        struct pollfd p[2] = {{sock, POLLIN, 0}, {sigfd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents & POLLIN) {
            int stop = 0;
            for (int sig; (sig = vc_proc_read_signal(sigfd)) != 0;)
                if (sig != SIGCHLD && sig != SIGHUP)
                    stop = 1;
            int status;
            for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
                /* What the worker's scripts left running goes with it. */
                kill(-pid, SIGKILL);
                note(sock, ZYGOTE_EXITED, pid, status);
            }
            if (stop)
                break;
        }
        if (p[0].revents & (POLLHUP | POLLERR))
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        zygote_cmd_t cmd;
        int fds[2];
        ssize_t n = recv_cmd(sock, &cmd, fds);
        int link = fds[0], clock = fds[1];
        if (n == 0)
            break; /* the broker closed its end */
        if (n != (ssize_t)sizeof(cmd) || cmd.op != ZYGOTE_SPAWN || link < 0) {
            if (link >= 0)
                close(link);
            if (clock >= 0)
                close(clock);
            /* The broker counts one answer per spawn, in order. */
            if (n == (ssize_t)sizeof(cmd) && cmd.op == ZYGOTE_SPAWN)
                note(sock, ZYGOTE_FAILED, 0, EBADF);
            continue;
        }
        pid_t pid = fork();
        if (pid == 0) {
            /* The worker: nothing of the zygote's plumbing survives. */
            close(sock);
            close(sigfd);
            vc_proc_die_with_parent(SIGKILL, zygote);
            vc_proc_unblock_signals();
            worker_clock_adopt(clock);
            return link;
        }
        close(link);
        if (clock >= 0)
            close(clock);
        if (pid < 0) {
            vc_log(VC_LOG_ERR, "zygote", "fork() failed while spawning a worker: %s", strerror(errno));
            note(sock, ZYGOTE_FAILED, 0, errno);
        } else {
            int pfd = process_fd(pid);
            note_with(sock, ZYGOTE_FORKED, pid, 0, pfd);
            if (pfd >= 0)
                close(pfd);
        }
    }
    /* Workers die with us (PDEATHSIG); the broker drains them first when
     * it stops gracefully. What they started, and whatever was orphaned
     * to us, does not: it ends here. */
    end_descendants();
    _exit(0);
}

void zygote_main(const vc_config_t *cfg, int sock)
{
    /* exec made it dumpable again: not so, and every worker forked from
     * it is not either (worker_link.c says why). */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    int sigfd = vc_proc_signalfd();
    release_pins_load(cfg);
    if (vc_sapi_startup(cfg) < 0) {
        zygote_boot_failed(sock);
        _exit(1);
    }
    if (cfg->php.worker_script && *cfg->php.worker_script && strcmp(cfg->php.mode, "classic") != 0)
        worker_mode_main(cfg, sock, sigfd); /* boots the app, then zygote_serve */
    int link = zygote_serve(cfg, sock, sigfd);
    worker_main(cfg, link);
}
