/*
 * `vc deploy SITE --git URL|PATH [--ref REF]` (docs/deploys.md, "From
 * Git"): Debian's git checks the ref out into a clean tree of its own, its
 * submodules with it, and that tree is what is built, signed and deployed;
 * the release's message names the commit.
 */
#include "deploy.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs git with args; its standard output (trimmed) into out if given.
 * 0 if it exited 0. */
static int git(char *const args[], char *out, size_t olen)
{
    int fds[2];
    if (out && pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        if (out) {
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
        } else {
            dup2(2, 1);
        }
        setenv("GIT_TERMINAL_PROMPT", "0", 1); /* a password prompt would hang a CI job */
        execvp("git", args);
        dprintf(2, "vc deploy: cannot run git: %s (apt install git)\n", strerror(errno));
        _exit(127);
    }
    size_t n = 0;
    if (out) {
        close(fds[1]);
        for (ssize_t r; n + 1 < olen && (r = read(fds[0], out + n, olen - 1 - n)) != 0;)
            if (r > 0)
                n += (size_t)r;
            else if (errno != EINTR)
                break;
        close(fds[0]);
        out[n] = '\0';
        while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
            out[--n] = '\0';
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int is_local(const char *url)
{
    struct stat st;
    return strncmp(url, "file://", 7) == 0 || (strstr(url, "://") == NULL && stat(url, &st) == 0);
}

int deploy_git_checkout(const char *url, const char *ref, char **dir, char *commit, size_t clen, char *why, size_t wlen)
{
    char tmpl[] = "/tmp/vc-deploy-git-XXXXXX";
    *dir = NULL;
    if (mkdtemp(tmpl) == NULL) {
        snprintf(why, wlen, "cannot make a directory to check out in: %s", strerror(errno));
        return -1;
    }
    *dir = vc_strdup(tmpl);
    char *tree = *dir;
    char *clone[] = {"git", "clone", "--quiet", "--no-checkout", "--", (char *)url, tree, NULL};
    if (git(clone, NULL, 0) < 0) {
        snprintf(why, wlen, "git clone %s failed (see above)", url);
        return -1;
    }
    /* The ref as a tag, a commit, a local branch, then a branch of the
     * remote (a clone has only the default branch of its own). */
    char want[256];
    int found = -1;
    for (int origin = 0; origin < 2 && found < 0; origin++) {
        snprintf(want, sizeof(want), "%s%s^{commit}", origin ? "origin/" : "", ref ? ref : "HEAD");
        char *parse[] = {"git", "-C", tree, "rev-parse", "--verify", "--quiet", want, NULL};
        found = git(parse, commit, clen);
    }
    if (found < 0) {
        snprintf(why, wlen, "%s has no tag, branch or commit \"%s\"", url, ref ? ref : "HEAD");
        return -1;
    }
    char *checkout[] = {"git", "-C", tree, "checkout", "--quiet", "--detach", commit, NULL};
    if (git(checkout, NULL, 0) < 0) {
        snprintf(why, wlen, "git checkout %s failed (see above)", commit);
        return -1;
    }
    /* Submodules are checked out too, at the commits the ref names. A
     * local repository's may be local too: git refuses file:// for
     * submodules unless told (CVE-2022-39253), which is the deployer's own
     * tree here, not a stranger's. */
    char *modules = vc_asprintf("%s/.gitmodules", tree);
    int has_modules = access(modules, F_OK) == 0;
    free(modules);
    if (has_modules) {
        char *allow = is_local(url) ? "protocol.file.allow=always" : "protocol.file.allow=never";
        char *update[] = {"git",     "-C",     tree,     "-c",          allow, "submodule",
                          "--quiet", "update", "--init", "--recursive", NULL};
        if (git(update, NULL, 0) < 0) {
            snprintf(why, wlen, "the submodules of %s at %s could not be checked out (see above)", url, commit);
            return -1;
        }
    }
    return 0;
}
