#include "userns.h"
#include "vc_log.h"
#include "vc_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct subid_range {
    unsigned long start, count;
} subid_range_t;

static int active;
static subid_range_t mapped_uids, mapped_gids; /* inside: 1 .. count */

int userns_active(void)
{
    return active;
}

/* The first range /etc/subuid (or /etc/subgid) gives this user, named by
 * name or by number as shadow's tools accept. 0, or -1 when it has none. */
static int subid_range(const char *file, const char *name, uid_t uid, subid_range_t *r)
{
    FILE *f = fopen(file, "re");
    if (f == NULL)
        return -1;
    char line[512], num[24];
    snprintf(num, sizeof(num), "%lu", (unsigned long)uid);
    int found = -1;
    while (found < 0 && fgets(line, sizeof(line), f)) {
        char *first = strtok(line, ":\n");
        char *start = strtok(NULL, ":\n");
        char *count = strtok(NULL, ":\n");
        if (first == NULL || start == NULL || count == NULL)
            continue;
        if (strcmp(first, num) != 0 && (name == NULL || strcmp(first, name) != 0))
            continue;
        char *end1, *end2;
        r->start = strtoul(start, &end1, 10);
        r->count = strtoul(count, &end2, 10);
        if (*end1 == '\0' && *end2 == '\0' && r->count > 0)
            found = 0;
    }
    fclose(f);
    return found;
}

/* Runs newuidmap or newgidmap for pid: 0 is the user, 1.. the range. */
static int run_map(const char *tool, pid_t pid, unsigned long own, const subid_range_t *r)
{
    char spid[24], sown[24], sstart[24], scount[24];
    snprintf(spid, sizeof(spid), "%d", (int)pid);
    snprintf(sown, sizeof(sown), "%lu", own);
    snprintf(sstart, sizeof(sstart), "%lu", r->start);
    snprintf(scount, sizeof(scount), "%lu", r->count);
    pid_t kid = fork();
    if (kid == 0) {
        execlp(tool, tool, spid, "0", sown, "1", "1", sstart, scount, (char *)NULL);
        _exit(errno == ENOENT ? 127 : 126);
    }
    int status = 0;
    if (kid < 0 || waitpid(kid, &status, 0) != kid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

/* The helper that writes our maps from outside: a process may not write
 * its own beyond its one id. It waits until we have unshared. */
static pid_t start_mapper(int go, pid_t target, const subid_range_t *ru, const subid_range_t *rg)
{
    pid_t kid = fork();
    if (kid != 0)
        return kid;
    char c;
    if (read(go, &c, 1) != 1)
        _exit(1);
    int rc = run_map("newuidmap", target, (unsigned long)getuid(), ru);
    if (rc == 0)
        rc = run_map("newgidmap", target, (unsigned long)getgid(), rg);
    _exit(rc < 0 ? 1 : rc);
}

int userns_enter(char *err, size_t errlen)
{
    uid_t uid = getuid();
    if (uid == 0) {
        snprintf(err, errlen,
                 "--userns is for a suite started as a normal user: started as root, the suite already "
                 "runs the daemons and each pool as users of their own");
        return -1;
    }
    struct passwd *pw = getpwuid(uid);
    const char *name = pw ? pw->pw_name : NULL;
    subid_range_t ru, rg;
    if (subid_range("/etc/subuid", name, uid, &ru) < 0 || subid_range("/etc/subgid", name, uid, &rg) < 0) {
        snprintf(err, errlen,
                 "--userns: %s has no range of its own in /etc/subuid and /etc/subgid: root can give it one "
                 "(usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s)",
                 name ? name : "this user", name ? name : "NAME");
        return -1;
    }
    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "--userns: pipe2() failed: %s", strerror(errno));
        return -1;
    }
    pid_t kid = start_mapper(go[0], getpid(), &ru, &rg);
    close(go[0]);
    int unshared = kid > 0 && unshare(CLONE_NEWUSER) == 0;
    int why = errno;
    if (unshared && write(go[1], "x", 1) != 1)
        unshared = 0;
    close(go[1]);
    int status = 0;
    if (kid > 0)
        waitpid(kid, &status, 0);
    if (!unshared) {
        snprintf(err, errlen,
                 "--userns: unshare(CLONE_NEWUSER) failed: %s (are unprivileged user namespaces off? "
                 "sysctl user.max_user_namespaces)",
                 strerror(why));
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "--userns: %s",
                 WIFEXITED(status) && WEXITSTATUS(status) == 127
                     ? "newuidmap and newgidmap are missing (apt-get install uidmap)"
                     : "newuidmap or newgidmap refused the map (their message is above)");
        return -1;
    }
    if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) {
        snprintf(err, errlen, "--userns: becoming the namespace's root failed: %s", strerror(errno));
        return -1;
    }
    mapped_uids = ru;
    mapped_gids = rg;
    active = 1;
    return 0;
}

void userns_join(const char *pidfile)
{
    pid_t pid = vc_proc_pidfile_alive(pidfile);
    if (pid <= 0)
        return;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat theirs, mine;
    if (fd < 0)
        return;
    /* Only a namespace this user owns lets us in: setns() checks it. */
    if (fstat(fd, &theirs) == 0 && stat("/proc/self/ns/user", &mine) == 0 && theirs.st_ino != mine.st_ino &&
        setns(fd, CLONE_NEWUSER) == 0 && (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0))
        vc_log(VC_LOG_WARN, "userns", "joined the suite's user namespace, but could not become its root: %s",
               strerror(errno));
    close(fd);
}

int userns_covers(const char *what, const char *user, uid_t uid, gid_t gid, char *err, size_t errlen)
{
    if (!active || ((uid == 0 || uid <= mapped_uids.count) && (gid == 0 || gid <= mapped_gids.count)))
        return 0;
    snprintf(err, errlen,
             "%s is \"%s\" (uid %lu, gid %lu), beyond the ids this user's ranges in /etc/subuid and /etc/subgid "
             "give the namespace (%lu and %lu): widen them, or name another",
             what, user, (unsigned long)uid, (unsigned long)gid, mapped_uids.count, mapped_gids.count);
    return -1;
}
