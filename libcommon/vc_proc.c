#include "vc_proc.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

static sigset_t handled_set(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGQUIT);
    return set;
}

int vc_proc_signalfd(void)
{
    signal(SIGPIPE, SIG_IGN);
    sigset_t set = handled_set();
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        return -errno;
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int vc_proc_read_signal(int fd)
{
    struct signalfd_siginfo si;
    ssize_t n = read(fd, &si, sizeof(si));
    return n == (ssize_t)sizeof(si) ? (int)si.ssi_signo : 0;
}

void vc_proc_unblock_signals(void)
{
    sigset_t set = handled_set();
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    signal(SIGPIPE, SIG_DFL);
}

int vc_proc_pidfile_write(const char *path)
{
    char *tmp = vc_asprintf("%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    int r = 0;
    if (f == NULL) {
        r = -errno;
    } else {
        fprintf(f, "%d\n", (int)getpid());
        if (fclose(f) != 0)
            r = -errno;
        else if (rename(tmp, path) != 0)
            r = -errno;
    }
    if (r < 0)
        unlink(tmp);
    free(tmp);
    return r;
}

/* /proc/PID/comm (pid 0: our own), without the newline. */
static int read_comm(pid_t pid, char *buf, size_t len)
{
    char path[64];
    if (pid > 0)
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    else
        snprintf(path, sizeof(path), "/proc/self/comm");
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

pid_t vc_proc_pidfile_alive(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    int pid = 0;
    if (fscanf(f, "%d", &pid) != 1)
        pid = 0;
    fclose(f);
    if (pid <= 1)
        return 0;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    return pid;
}

pid_t vc_proc_pidfile_ours(const char *path)
{
    pid_t pid = vc_proc_pidfile_alive(path);
    /* A pid is reused: a stale file's pid may now be another program's
     * (containers sharing a pid namespace and a volume start over at low
     * pids). Only a process of our own program counts. */
    char theirs[32], ours[32];
    if (pid > 0 && read_comm(pid, theirs, sizeof(theirs)) == 0 && read_comm(0, ours, sizeof(ours)) == 0 &&
        strcmp(theirs, ours) != 0)
        return 0;
    return pid;
}

static int ready_fd = -1;

void vc_proc_ready_take(void)
{
    const char *s = getenv("VC_READY_FD");
    if (s == NULL)
        return;
    int fd = atoi(s);
    unsetenv("VC_READY_FD");
    if (fd <= 2)
        return;
    /* What this process starts before it is ready (vc-php's zygote, and
     * so every worker) must not hold the supervisor's pipe. */
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    ready_fd = fd;
}

void vc_proc_ready(void)
{
    vc_proc_ready_take();
    if (ready_fd < 0)
        return;
    ssize_t unused = write(ready_fd, "R", 1);
    (void)unused;
    close(ready_fd);
    ready_fd = -1;
}

void vc_proc_die_with_parent(int sig, pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, sig);
    if (getppid() != parent)
        _exit(1); /* the parent died before the request took effect */
}

pid_t vc_proc_fork_linked(int sig, int *end)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        errno = e;
        return -1;
    }
    if (pid == 0)
        vc_proc_die_with_parent(sig, parent);
    close(sv[pid == 0 ? 0 : 1]);
    *end = sv[pid == 0 ? 1 : 0];
    return pid;
}

int vc_proc_lock(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -1;
    /* vc_proc_lock_held (`vc status --wait`, `vc stop`) holds a shared
     * lock for an instant to look: a few tries over 200 ms, at growing
     * intervals (a looker that polls steadily is not met in step), tell
     * that from a suite that holds it. */
    for (int tries = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; tries++) {
        int e = errno;
        if (e != EWOULDBLOCK || tries == 20) {
            close(fd);
            errno = e;
            return -1;
        }
        usleep(1000 * (useconds_t)(tries + 1));
    }
    return fd;
}

int vc_proc_lock_held(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    int held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd); /* a shared lock we took goes with it */
    return held;
}
