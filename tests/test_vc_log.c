#include "vc_log.h"
#include "vc_test.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>

static char *capture(int json, int level, const char *ctx)
{
    int p[2];
    if (pipe(p) != 0)
        return NULL;
    vc_log_init("vc-test", VC_LOG_INFO, json, p[1]);
    vc_log_set_context(ctx);
    vc_log(level, "unit", "value \"%s\" %d", "q\n", 42);
    vc_log_set_context(NULL);
    close(p[1]);
    static char buf[4096];
    ssize_t n = read(p[0], buf, sizeof(buf) - 1);
    close(p[0]);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

/* Writes "a b" to a /proc file of this process (uid_map and friends). */
static int write_proc(const char *name, const char *text)
{
    int fd = open(name, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A file system of 1 MiB of its own, in a mount namespace (and a user
 * namespace, so this runs unprivileged too): 0 once dir is mounted. */
static int small_disk(const char *dir)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
        return -1;
    char map[64];
    snprintf(map, sizeof(map), "0 %d 1", (int)uid);
    write_proc("/proc/self/setgroups", "deny");
    if (write_proc("/proc/self/uid_map", map) != 0)
        return -1;
    snprintf(map, sizeof(map), "0 %d 1", (int)gid);
    write_proc("/proc/self/gid_map", map);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return -1;
    return mount("none", dir, "tmpfs", 0, "size=1m");
}

/* The disk fills while lines are logged: none is cut, what was dropped
 * is counted, and said once there is room again. Runs in a child, which
 * exits 0 (passed), 1 (failed) or 2 (no namespace here: skipped). */
static int full_disk_child(const char *dir)
{
    if (small_disk(dir) != 0)
        return 2;
    char *path = vc_asprintf("%s/vc.log", dir), *filler = vc_asprintf("%s/filler", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    vc_log_init("vc-test", VC_LOG_INFO, 0, fd);
    vc_log(VC_LOG_INFO, "unit", "first");
    int ff = open(filler, O_WRONLY | O_CREAT, 0600);
    static char block[4096];
    memset(block, 'f', sizeof(block));
    while (write(ff, block, sizeof(block)) > 0)
        ;
    for (int i = 0; i < 2000; i++)
        vc_log(VC_LOG_INFO, "unit", "line %04d of a disk that fills up, padded to be about a hundred bytes", i);
    close(ff);
    unlink(filler);
    vc_log(VC_LOG_INFO, "unit", "after");
    close(fd);
    size_t len = 0;
    char *text = vc_read_file(path, &len);
    if (text == NULL)
        return 1;
    int noted =
        strstr(text, "log lines were dropped since 20") != NULL && strstr(text, "No space left on device") != NULL;
    int bad = 0, lines = 0, dropped = -1;
    for (char *ln = text, *nl; (nl = strchr(ln, '\n')) != NULL; ln = nl + 1) {
        *nl = '\0';
        lines++;
        /* Every line whole: one time and level, and a known end. */
        const char *end = strrchr(ln, ' ');
        const char *level = strstr(ln, "Z [");
        if (strncmp(ln, "20", 2) != 0 || level == NULL || strstr(level + 1, "Z [") != NULL || end == NULL ||
            !(strcmp(end, " bytes") == 0 || strcmp(end, " first") == 0 || strcmp(end, " after") == 0 ||
              strcmp(end, " device") == 0))
            bad++;
        const char *d = strstr(ln, "log: ");
        if (d)
            dropped = atoi(d + 5);
    }
    int written = lines - 3; /* first, the note, after */
    int ok = bad == 0 && written > 0 && written < 2000 && dropped == 2000 - written && noted;
    if (!ok)
        fprintf(stderr, "full disk: %d lines, %d bad, %d dropped, noted %d\n", lines, bad, dropped, noted);
    return ok ? 0 : 1;
}

static void full_disk(void)
{
    char *dir = vc_test_tmpdir();
    pid_t pid = fork();
    if (pid == 0)
        _exit(full_disk_child(dir));
    int status = 0;
    waitpid(pid, &status, 0);
    rmdir(dir); /* the child's mount went with its namespace */
    free(dir);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        fprintf(stderr, "vc_log: no user namespace here: the full disk case is skipped\n");
        return;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
    CHECK(vc_log_level_parse("debug") == VC_LOG_DEBUG);
    CHECK(vc_log_level_parse("warn") == VC_LOG_WARN);
    CHECK(vc_log_level_parse("warning") == VC_LOG_WARN);
    CHECK(vc_log_level_parse("error") == VC_LOG_ERR);
    CHECK(vc_log_level_parse("loud") == -1);
    CHECK_STR(vc_log_level_name(VC_LOG_NOTICE), "notice");

    char *text = capture(0, VC_LOG_WARN, "r1");
    CHECK_CONTAINS(text, "[warn] vc-test[");
    CHECK_CONTAINS(text, "unit: [r1] value \"q\n\" 42\n");

    char *json = capture(1, VC_LOG_ERR, NULL);
    CHECK_CONTAINS(json, "\"level\":\"error\"");
    CHECK_CONTAINS(json, "\"daemon\":\"vc-test\"");
    CHECK_CONTAINS(json, "\"msg\":\"value \\\"q\\n\\\" 42\"}\n");
    CHECK(strstr(json, "\"id\"") == NULL);

    /* Below the level: nothing is written. */
    char *quiet = capture(0, VC_LOG_DEBUG, NULL);
    CHECK_STR(quiet, "");

    full_disk();
    return vc_test_result("vc_log");
}
