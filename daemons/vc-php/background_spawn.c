/*
 * A background process's start (background.h): the words it runs, `php`
 * made the pool's PHP CLI with the pool's settings, and the fork and exec
 * in the site's application directory, as a process group of its own
 * whose output comes back on a pipe.
 */
#include "background_internal.h"
#include "pool_ini.h"
#include "vc_log.h"
#include "vc_proc.h"
#include "vc_util.h"
#include "vc_words.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct args {
    char **v;
    size_t n, cap;
} args_t;

static void push(args_t *a, char *owned)
{
    VC_GROW(a->v, a->cap, a->n + 2, 16);
    a->v[a->n++] = owned;
    a->v[a->n] = NULL;
}

/* Each "name=value" line of text as `-d name=value`. */
static void push_ini_lines(args_t *a, const char *text)
{
    char *copy = vc_strdup(text ? text : ""), *save = NULL;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        if (strchr(l, '=')) {
            push(a, vc_strdup("-d"));
            push(a, vc_strdup(l));
        }
    free(copy);
}

char **bg_argv(const vc_config_t *cfg, const char *command)
{
    char **words;
    size_t nwords;
    char err[128];
    if (vc_words_split(command, &words, &nwords, err, sizeof(err)) < 0) {
        vc_log(VC_LOG_ERR, "background", "\"%s\": %s", command, err);
        return NULL;
    }
    args_t a = {0};
    if (strcmp(words[0], "php") == 0) {
        /* The pool's settings, as its workers have them: its session
         * and temporary directories and php.ini lines, then the admin
         * lines (for a process of the app's own, settings it could
         * change, not a wall: the pool's wall is around it), and
         * open_basedir where the pool has one. */
        push(&a, vc_strdup(PHP_CLI_BINARY));
        char *ini = pool_ini_entries(cfg);
        push_ini_lines(&a, ini);
        free(ini);
        for (size_t i = 0; i < cfg->php.nadmin_ini; i++) {
            push(&a, vc_strdup("-d"));
            push(&a, vc_strdup(cfg->php.admin_ini[i]));
        }
        int basedir = cfg->php.open_basedir == VC_AUTO ? strcmp(pool_ini_wall(), "none") == 0 : cfg->php.open_basedir;
        if (basedir) {
            char *dirs = pool_ini_open_basedir(cfg, "/usr/share/php");
            push(&a, vc_strdup("-d"));
            push(&a, vc_asprintf("open_basedir=%s", dirs));
            free(dirs);
        }
        for (size_t i = 1; i < nwords; i++)
            push(&a, vc_strdup(words[i]));
    } else {
        for (size_t i = 0; i < nwords; i++)
            push(&a, vc_strdup(words[i]));
    }
    vc_words_free(words);
    return a.v;
}

/* In the child: nothing of vc-php's but the output pipe. */
static void child(bentry_t *e, size_t index, int out, pid_t parent)
{
    setpgid(0, 0); /* its group: the stop ends what it started too */
    vc_proc_die_with_parent(SIGKILL, parent);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(126);
    close_range(3, ~0u, 0);
    if (chdir(e->app_dir) != 0) {
        dprintf(2, "cannot enter %s: %s\n", e->app_dir, strerror(errno));
        _exit(126);
    }
    char n[16];
    snprintf(n, sizeof(n), "%zu", index);
    setenv("VC_SITE", e->site, 1);
    setenv("VC_BACKGROUND", e->name, 1);
    setenv("VC_PROCESS", n, 1);
    unsetenv("VC_POOL_WALL");
    execvp(e->argv[0], e->argv);
    dprintf(2, "cannot run %s: %s\n", e->argv[0], strerror(errno));
    _exit(127);
}

int bg_spawn(background_t *b, bentry_t *e, bproc_t *p, size_t index)
{
    (void)b;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        vc_log(VC_LOG_ERR, "background", "%s/%s: pipe(): %s", e->site, e->name, strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child(e, index, fds[1], parent);
    close(fds[1]);
    if (pid < 0) {
        vc_log(VC_LOG_ERR, "background", "%s/%s: fork(): %s", e->site, e->name, strerror(errno));
        close(fds[0]);
        return -1;
    }
    setpgid(pid, pid); /* as the child does: whichever runs first */
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    p->pid = pid;
    p->out = fds[0];
    p->len = 0;
    return 0;
}
