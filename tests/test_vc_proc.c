#include "vc_proc.h"
#include "vc_test.h"
#include "vc_util.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>

/* Dead, or a zombie nobody has reaped yet. */
static int is_gone(pid_t pid)
{
    if (kill(pid, 0) != 0)
        return 1;
    char path[64], state = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 1;
    int ok = fscanf(f, "%*d %*s %c", &state) == 1;
    fclose(f);
    return ok && (state == 'Z' || state == 'X');
}

/* The suite's lock: taken once, refused to a second taker while
 * held, and taken in spite of another process looking at it all the
 * time (vc_proc_lock_held's instant shared lock, as `vc status
 * --wait` polls). */
static void suite_lock(void)
{
    char *ldir = vc_test_tmpdir(), *lock = vc_asprintf("%s/vc.lock", ldir);
    close(vc_proc_lock(lock)); /* made */
    pid_t looker = fork();
    if (looker == 0) {
        /* A look every 10 ms that holds it 2 ms (far longer than
         * vc_proc_lock_held's instant): one try in five would fail. */
        int lfd = open(lock, O_RDONLY | O_CLOEXEC);
        for (uint64_t until = vc_mono_ms() + 5000; vc_mono_ms() < until;) {
            flock(lfd, LOCK_SH);
            usleep(2000);
            flock(lfd, LOCK_UN);
            usleep(8000);
        }
        _exit(0);
    }
    int ok = 0;
    for (int i = 0; i < 50; i++, usleep(3000)) { /* spread over its looks: every try must win */
        int held = vc_proc_lock(lock);
        ok += held >= 0;
        if (held >= 0 && i == 0) { /* refused to a second taker while held */
            CHECK(vc_proc_lock(lock) < 0 && errno == EWOULDBLOCK);
            CHECK(vc_proc_lock_held(lock) == 1);
        }
        if (held >= 0)
            close(held);
    }
    CHECK(ok == 50);
    kill(looker, SIGKILL);
    waitpid(looker, NULL, 0);
    free(lock);
    free(ldir);
}

int main(void)
{
    char *dir = vc_test_tmpdir();
    char *pidfile = vc_asprintf("%s/x.pid", dir);
    CHECK(vc_proc_pidfile_alive(pidfile) == 0);
    CHECK(vc_proc_pidfile_write(pidfile) == 0);
    CHECK(vc_proc_pidfile_alive(pidfile) == getpid());
    /* A pid file of a dead process reads as nobody. */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    FILE *f = fopen(pidfile, "w");
    fprintf(f, "%d\n", (int)child);
    fclose(f);
    CHECK(vc_proc_pidfile_alive(pidfile) == 0);
    vc_test_write(dir, "x.pid", "garbage");
    CHECK(vc_proc_pidfile_alive(pidfile) == 0);
    /* A stale file whose pid now runs another program reads as nobody. */
    pid_t other = fork();
    if (other == 0) {
        execlp("sleep", "sleep", "10", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) { /* until the exec has renamed it */
        char comm[32] = "", *path = vc_asprintf("/proc/%d/comm", (int)other);
        FILE *c = fopen(path, "r");
        free(path);
        if (c && fgets(comm, sizeof(comm), c) && strncmp(comm, "sleep", 5) == 0) {
            fclose(c);
            break;
        }
        if (c)
            fclose(c);
        usleep(10000);
    }
    f = fopen(pidfile, "w");
    fprintf(f, "%d\n", (int)other);
    fclose(f);
    CHECK(vc_proc_pidfile_alive(pidfile) == other);
    CHECK(vc_proc_pidfile_ours(pidfile) == 0);
    CHECK(vc_proc_pidfile_write(pidfile) == 0);
    CHECK(vc_proc_pidfile_ours(pidfile) == getpid());
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);

    /* Signals arrive on the descriptor, not as handlers. */
    int fd = vc_proc_signalfd();
    CHECK(fd >= 0);
    CHECK(vc_proc_read_signal(fd) == 0);
    kill(getpid(), SIGHUP);
    CHECK(vc_proc_read_signal(fd) == SIGHUP);
    child = fork();
    if (child == 0)
        _exit(3);
    usleep(100000);
    CHECK(vc_proc_read_signal(fd) == SIGCHLD);
    int status;
    CHECK(waitpid(child, &status, 0) == child && WEXITSTATUS(status) == 3);

    /* Readiness: one byte on the descriptor named by VC_READY_FD. */
    int p[2];
    CHECK(pipe(p) == 0);
    char num[16];
    snprintf(num, sizeof(num), "%d", p[1]);
    setenv("VC_READY_FD", num, 1);
    vc_proc_ready();
    char c = 0;
    CHECK(read(p[0], &c, 1) == 1 && c == 'R');
    CHECK(getenv("VC_READY_FD") == NULL);
    close(p[0]);

    /* A child asking to die with its parent dies when the parent does. */
    int q[2];
    CHECK(pipe(q) == 0);
    pid_t mid = fork();
    if (mid == 0) {
        pid_t me = getpid();
        pid_t grandchild = fork();
        if (grandchild == 0) {
            vc_proc_die_with_parent(SIGKILL, me);
            close(q[0]);
            for (;;)
                pause();
        }
        ssize_t unused = write(q[1], &grandchild, sizeof(grandchild));
        (void)unused;
        usleep(50000);
        _exit(0);
    }
    pid_t grandchild = 0;
    close(q[1]);
    CHECK(read(q[0], &grandchild, sizeof(grandchild)) == sizeof(grandchild));
    waitpid(mid, NULL, 0);
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        gone = is_gone(grandchild);
        usleep(10000);
    }
    CHECK(gone);
    close(fd);
    vc_test_rmtree(dir);
    free(pidfile);
    free(dir);
    suite_lock();
    return vc_test_result("vc_proc");
}
