/*
 * The panel's terminal starter (panel.terminal = true, docs/panel.md).
 *
 * vc-panel runs as the suite's user, which cannot start a shell as
 * another. So when the supervisor starts vc-panel, it first forks this
 * starter, which keeps the supervisor's user, and links the two by a
 * socket pair (VC_TERMINAL_FD in vc-panel). For each request (a window
 * size, nothing else), the starter opens a pseudo-terminal, starts
 * panel.terminal_shell on it as panel.terminal_user in a session of its
 * own, and passes the master side back with SCM_RIGHTS.
 *
 * What the panel may ask is only "a shell, this size": the user and the
 * program come from the configuration the supervisor read, so a panel
 * taken over can get no more than the configured user's shell. The
 * starter refuses to start one as root. It ends when vc-panel does (the
 * socket's end, or the death signal).
 */
#include "sup.h"
#include "vc_log.h"
#include "vc_proc.h"
#include "vc_settings.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pty.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct who {
    char user[64], shell[256], home[256];
    uid_t uid;
    gid_t gid;
    int as_root; /* we may change user */
} who_t;

/* In the shell's process: a session of its own with the terminal as its
 * controlling one, the user's groups and ids, a clean environment. */
static void become_shell(const who_t *w, int slave)
{
    setsid();
    ioctl(slave, TIOCSCTTY, 0);
    dup2(slave, 0);
    dup2(slave, 1);
    dup2(slave, 2);
    if (slave > 2)
        close(slave);
    if (w->as_root && (initgroups(w->user, w->gid) != 0 || setgid(w->gid) != 0 || setuid(w->uid) != 0)) {
        fprintf(stderr, "vc: cannot become %s: %s\r\n", w->user, strerror(errno));
        _exit(126);
    }
    if (getuid() == 0 || geteuid() == 0) { /* never a root shell, whatever went wrong */
        fprintf(stderr, "vc: the terminal does not run as root\r\n");
        _exit(126);
    }
    signal(SIGCHLD, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    vc_proc_unblock_signals();
    if (chdir(w->home) != 0 && chdir("/") != 0)
        _exit(126);
    clearenv();
    setenv("HOME", w->home, 1);
    setenv("USER", w->user, 1);
    setenv("LOGNAME", w->user, 1);
    setenv("SHELL", w->shell, 1);
    setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 1);
    setenv("TERM", "xterm-256color", 1);
    const char *base = strrchr(w->shell, '/');
    char *login = vc_asprintf("-%s", base ? base + 1 : w->shell); /* a login shell, as sshd starts it */
    execl(w->shell, login, (char *)NULL);
    fprintf(stderr, "vc: cannot run %s: %s\r\n", w->shell, strerror(errno));
    _exit(127);
}

/* One request: a shell, and its master side and pid back. */
static void serve_one(const who_t *w, int sock, const uint16_t size[2])
{
    struct winsize ws = {.ws_col = size[0] ? size[0] : 80, .ws_row = size[1] ? size[1] : 24};
    int master, slave;
    int32_t pid = -1;
    if (openpty(&master, &slave, NULL, NULL, &ws) != 0) {
        vc_log(VC_LOG_ERR, "terminal", "openpty() failed while starting a shell: %s", strerror(errno));
        ssize_t unused = send(sock, &pid, sizeof(pid), MSG_NOSIGNAL); /* -1: none */
        (void)unused;
        return;
    }
    pid = fork();
    if (pid == 0) {
        close(master);
        close(sock);
        become_shell(w, slave);
    }
    close(slave);
    char cbuf[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {.iov_base = &pid, .iov_len = sizeof(pid)};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (pid > 0) {
        msg.msg_control = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &master, sizeof(int));
    }
    if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
        vc_log(VC_LOG_WARN, "terminal", "sendmsg() failed while handing a terminal to vc-panel: %s", strerror(errno));
    close(master); /* the panel's copy is the one that lives */
}

static void serve(const who_t *w, int sock)
{
    /* Nothing of the supervisor's but the link: its sockets, its store
     * and its listeners stay out of the shells. */
    if (dup2(sock, 3) < 0)
        _exit(1);
    sock = 3;
    close_range(4, ~0U, 0);
    vc_proc_unblock_signals();
    signal(SIGCHLD, SIG_IGN); /* the shells are reaped by the kernel */
    for (;;) {
        uint16_t size[2];
        ssize_t n = recv(sock, size, sizeof(size), 0);
        if (n == 0 || (n < 0 && errno != EINTR))
            _exit(0); /* vc-panel is gone */
        if (n == (ssize_t)sizeof(size))
            serve_one(w, sock, size);
    }
}

int sup_terminal_start(sup_t *s)
{
    if (!vc_setting_is_set(s->cfg, NULL, "panel.terminal"))
        return 0;
    who_t w = {.as_root = geteuid() == 0};
    const char *user = vc_setting_str(s->cfg, "panel.terminal_user");
    const char *shell = vc_setting_str(s->cfg, "panel.terminal_shell");
    /* Started unprivileged, everything runs as one user, the shell too. */
    struct passwd *pw = w.as_root ? getpwnam(user ? user : "") : getpwuid(getuid());
    if (pw == NULL || (w.as_root && pw->pw_uid == 0) || shell == NULL || shell[0] != '/') {
        fprintf(stderr, "vc: panel.terminal: no unprivileged user \"%s\" or shell \"%s\": no terminal\n",
                user ? user : "", shell ? shell : "");
        return -1;
    }
    snprintf(w.user, sizeof(w.user), "%s", pw->pw_name);
    snprintf(w.home, sizeof(w.home), "%s", pw->pw_dir);
    snprintf(w.shell, sizeof(w.shell), "%s", shell);
    w.uid = pw->pw_uid;
    w.gid = pw->pw_gid;
    int end;
    pid_t pid = vc_proc_fork_linked(SIGTERM, &end);
    if (pid < 0)
        return -1;
    if (pid == 0)
        serve(&w, end);
    /* vc-panel's end crosses its exec. */
    fcntl(end, F_SETFD, 0);
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", end);
    setenv("VC_TERMINAL_FD", fd, 1);
    return 0;
}
