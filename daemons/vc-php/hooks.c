/*
 * Release hooks run in the pool (docs/deploys.md, "Hooks"): vc-fed asks
 * for a site's `before_switch` and `after_switch` commands to run in a
 * release's directory, as the pool's user inside its wall, as a
 * background process runs, and reads their output and end:
 *
 *   hook-run SITE DIR COMMAND   -> "id" (DIR: DEPLOY_TO/releases/ID)
 *   hook-status ID OFFSET       -> "state" running|done, "status", "output"
 *                                  (from OFFSET), "next" (the offset after it)
 *   hook-stop ID                -> SIGTERM, SIGKILL 10 s later
 *
 * A command with a shell's punctuation (`&&`, `|`, `;`, `>`, `$`...) runs
 * under /bin/sh -c; any other runs as its words, `php` being the pool's
 * PHP CLI. A run's output is kept (up to HOOK_OUTPUT_MAX) until vc-fed has
 * read it to its end, or for HOOK_KEEP_MS after the run ends.
 */
#include "background_internal.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define HOOK_OUTPUT_MAX (1024 * 1024)
#define HOOK_REPLY_MAX (64 * 1024)
#define HOOK_KEEP_MS (10 * 60 * 1000)

void hook_output(background_t *b, bentry_t *e, const char *line, size_t n)
{
    if (e->outlen >= HOOK_OUTPUT_MAX)
        return;
    /* As it comes, for `vc deploy`'s terminal (live only: the release's
     * log keeps it). */
    char id[16], text[1024];
    snprintf(id, sizeof(id), "%u", e->id);
    snprintf(text, sizeof(text), "%.*s", (int)(n < sizeof(text) ? n : sizeof(text) - 1), line);
    vc_bus_publish(b->bus, VC_EVENT(PHP_HOOK_OUTPUT), VC__SEVERITY__INFO, "site", e->site, "id", id, "line", text,
                   NULL);
    if (e->outlen + n + 1 > HOOK_OUTPUT_MAX) {
        static const char cut[] = "[output cut at 1 MiB]";
        n = sizeof(cut) - 1;
        line = cut;
    }
    VC_GROW(e->out, e->outcap, e->outlen + n + 2, 4096);
    memcpy(e->out + e->outlen, line, n);
    e->outlen += n;
    e->out[e->outlen++] = '\n';
    e->out[e->outlen] = '\0';
}

void hook_ended(background_t *b, bentry_t *e, int status)
{
    (void)b;
    e->last_status = status;
    e->done_ms = (int64_t)vc_mono_ms();
    e->last_ms = e->done_ms - e->procs[0].started_ms;
    vc_log(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? VC_LOG_INFO : VC_LOG_WARN, "hook",
           "%s: \"%s\" ended (%s %d) after %lld ms", e->site, e->line, WIFEXITED(status) ? "exit" : "signal",
           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), (long long)e->last_ms);
}

/* Whether dir is a release of site s: below DEPLOY_TO/releases/, as it
 * resolves. */
static int release_dir_of(const vc_site_t *s, const char *dir)
{
    if (s->deploy_to == NULL)
        return 0;
    char *real = realpath(dir, NULL), *base = realpath(s->deploy_to, NULL);
    char *want = base ? vc_asprintf("%s/releases/", base) : NULL;
    int ok = real && want && strncmp(real, want, strlen(want)) == 0 && strchr(real + strlen(want), '/') == NULL;
    free(real);
    free(base);
    free(want);
    return ok;
}

static char **hook_argv(const vc_config_t *cfg, const char *command)
{
    if (strpbrk(command, "|&;<>()$`*?[]{}~!#\n\\'\"") == NULL)
        return bg_argv(cfg, command);
    char **argv = vc_calloc(4, sizeof(*argv));
    argv[0] = vc_strdup("/bin/sh");
    argv[1] = vc_strdup("-c");
    argv[2] = vc_strdup(command);
    return argv;
}

static void run(background_t *b, const Vc__Command *cmd, Vc__Reply *reply)
{
    const char *site = cmd->args[0], *dir = cmd->args[1], *command = cmd->args[2];
    const vc_site_t *s = NULL;
    for (size_t i = 0; b->cfg && i < b->cfg->nsites && !s; i++)
        if (!strcmp(b->cfg->sites[i].name, site) &&
            !strcmp(b->cfg->sites[i].pool ? b->cfg->sites[i].pool : "default", b->cfg->php.name))
            s = &b->cfg->sites[i];
    if (s == NULL || !release_dir_of(s, dir)) {
        vc_reply_fail(reply, "%s is not a release of a site \"%s\" of this pool", dir, site);
        return;
    }
    char name[32];
    snprintf(name, sizeof(name), "hook:%u", b->next_id);
    char *real = realpath(dir, NULL);
    bentry_t *e = bg_add_entry(b, site, name, real);
    free(real);
    e->is_hook = 1;
    e->line = vc_strdup(command);
    e->argv = hook_argv(b->cfg, command);
    e->nprocs = 1;
    e->procs = vc_calloc(1, sizeof(*e->procs));
    e->procs[0].out = -1;
    e->spec.name = vc_strdup(name);
    e->spec.command = vc_strdup(command);
    e->spec.stop_signal = vc_strdup("TERM");
    e->spec.stop_wait_ms = 10000;
    e->spec.processes = 1;
    if (e->argv == NULL || bg_start_once(b, e) < 0) {
        e->done_ms = (int64_t)vc_mono_ms(); /* swept */
        vc_reply_fail(reply, "cannot start \"%s\" (see the pool's log)", command);
        return;
    }
    vc_log(VC_LOG_INFO, "hook", "%s: \"%s\" started in %s (process %d)", site, command, e->app_dir,
           (int)e->procs[0].pid);
    vc_reply_ok(reply, "started");
    vc_reply_field(reply, "id", "%u", e->id);
}

static bentry_t *hook_of(background_t *b, const char *id)
{
    char *end;
    unsigned long n = strtoul(id, &end, 10);
    bentry_t *e = *id && !*end && n <= UINT_MAX ? bg_entry(b, (unsigned)n) : NULL;
    return e && e->is_hook ? e : NULL;
}

static void status(background_t *b, const Vc__Command *cmd, Vc__Reply *reply)
{
    bentry_t *e = hook_of(b, cmd->args[0]);
    if (e == NULL) {
        vc_reply_fail(reply, "no hook run %s", cmd->args[0]);
        return;
    }
    size_t from = (size_t)strtoull(cmd->args[1], NULL, 10);
    if (from > e->outlen)
        from = e->outlen;
    size_t n = e->outlen - from < HOOK_REPLY_MAX ? e->outlen - from : HOOK_REPLY_MAX;
    int done = e->done_ms > 0;
    vc_reply_ok(reply, "%s", done ? "done" : "running");
    vc_reply_field(reply, "state", "%s", done ? "done" : "running");
    vc_reply_field(reply, "status", "%d", done ? e->last_status : -1);
    vc_reply_field(reply, "output", "%.*s", (int)n, e->out ? e->out + from : "");
    vc_reply_field(reply, "next", "%zu", from + n);
    if (done && n == 0)
        e->done_ms = 1; /* ended, and read to its end: swept at the next tick */
}

void hooks_verb(background_t *b, const Vc__Command *cmd, Vc__Reply *reply)
{
    VC_CHECK_OBJ(b, BACKGROUND_MAGIC);
    if (!strcmp(cmd->verb, "hook-run") && cmd->n_args == 3) {
        run(b, cmd, reply);
    } else if (!strcmp(cmd->verb, "hook-status") && cmd->n_args == 2) {
        status(b, cmd, reply);
    } else if (!strcmp(cmd->verb, "hook-stop") && cmd->n_args == 1) {
        bentry_t *e = hook_of(b, cmd->args[0]);
        if (e && e->procs[0].pid > 0)
            bg_stop(e, &e->procs[0], "hook-stop", 0);
        if (e)
            vc_reply_ok(reply, "stopping");
        else
            vc_reply_fail(reply, "no hook run %s", cmd->args[0]);
    } else {
        vc_reply_fail(reply, "usage: hook-run SITE DIR COMMAND | hook-status ID OFFSET | hook-stop ID");
    }
}

void hooks_sweep(background_t *b)
{
    int64_t now = (int64_t)vc_mono_ms();
    for (size_t i = 0; i < b->n; i++) {
        bentry_t *e = &b->e[i];
        if (e->is_hook && e->done_ms > 0 && e->procs[0].pid <= 0 &&
            (e->done_ms == 1 || now - e->done_ms > HOOK_KEEP_MS))
            e->retired = 1; /* sweep() frees it */
    }
}
