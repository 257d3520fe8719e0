/*
 * The deployer's side of release hooks (docs/deploys.md, "Hooks"):
 * site.deploy_hooks.build runs in a copy of the tree, as the deployer,
 * before the tree is walked and signed (so what it builds, vendor/ or
 * public/build/, is in the release, and the tree given is left as it
 * was); its output goes to the terminal and into the release's log. And
 * `vc releases SITE --log [RELEASE]`.
 */
#include "cli.h"
#include "deploy.h"
#include "vc_config.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#define BUILD_LOG_MAX (1024 * 1024)

/* Runs argv, in dir if not NULL, its output to our stdout and, up to
 * BUILD_LOG_MAX, to *log. Its waitpid() status, or -1. */
static int run_teed(char *const argv[], const char *dir, char **log, size_t *len)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        if (dir && chdir(dir) != 0)
            _exit(126);
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR);) {
        if (n <= 0)
            continue;
        fwrite(buf, 1, (size_t)n, stdout);
        fflush(stdout);
        if (*len + (size_t)n < BUILD_LOG_MAX) {
            *log = vc_realloc(*log, *len + (size_t)n + 1);
            memcpy(*log + *len, buf, (size_t)n);
            *len += (size_t)n;
            (*log)[*len] = '\0';
        }
    }
    close(fds[0]);
    int status = -1;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return status;
}

static void append(char **log, size_t *len, const char *text)
{
    size_t n = strlen(text);
    *log = vc_realloc(*log, *len + n + 1);
    memcpy(*log + *len, text, n + 1);
    *len += n;
}

int deploy_build_hooks(const vc_site_t *s, const char *dir, char **copy, char **log, char *why, size_t wlen)
{
    *copy = NULL;
    *log = NULL;
    size_t len = 0;
    if (s == NULL || s->nhooks_build == 0)
        return 0;
    char tmpl[] = "/tmp/vc-deploy-build-XXXXXX";
    if (mkdtemp(tmpl) == NULL) {
        snprintf(why, wlen, "cannot make a directory to build in: %s", strerror(errno));
        return -1;
    }
    *copy = vc_strdup(tmpl);
    /* coreutils' cp: modes, links and times as they are. */
    char *from = vc_asprintf("%s/.", dir);
    char *cp[] = {"cp", "-a", "--", from, *copy, NULL};
    int st = run_teed(cp, NULL, log, &len);
    free(from);
    if (st != 0) {
        snprintf(why, wlen, "cannot copy %s to build in", dir);
        return -1;
    }
    for (size_t i = 0; i < s->nhooks_build; i++) {
        printf("$ %s    (build, in a copy of %s)\n", s->hooks_build[i], dir);
        char *line = vc_asprintf("$ %s    (build, in a copy of %s)\n", s->hooks_build[i], dir);
        append(log, &len, line);
        free(line);
        char *sh[] = {"/bin/sh", "-c", s->hooks_build[i], NULL};
        st = run_teed(sh, *copy, log, &len);
        char how[48];
        snprintf(how, sizeof(how), st >= 0 && WIFEXITED(st) ? "[exit %d]\n" : "[signal %d]\n",
                 st >= 0 && WIFEXITED(st)     ? WEXITSTATUS(st)
                 : st >= 0 && WIFSIGNALED(st) ? WTERMSIG(st)
                                              : 0);
        append(log, &len, how);
        if (st != 0) {
            snprintf(why, wlen, "build \"%s\" failed (%.*s): nothing was deployed", s->hooks_build[i],
                     (int)strlen(how) - 3, how + 1);
            return -1;
        }
    }
    return 0;
}

void deploy_build_cleanup(char *copy)
{
    if (copy == NULL)
        return;
    char *rm[] = {"rm", "-rf", "--", copy, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        execvp(rm[0], rm);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
    free(copy);
}

int deploy_print_log(void *zctx, const vc_config_t *cfg, const char *site, const char *id, size_t skip)
{
    const char *args[3] = {site, id, ""};
    Vc__Reply *r = NULL;
    int rc = cli_call(zctx, cfg, "vc-fed", "release-log", args, 3, &r) < 0 || r == NULL || !r->ok;
    if (rc)
        fprintf(stderr, "vc releases: %s\n", r ? r->message : "vc-fed does not answer");
    else if (strlen(r->message) > skip)
        fputs(r->message + skip, stdout);
    if (r)
        vc__reply__free_unpacked(r, NULL);
    return rc;
}
