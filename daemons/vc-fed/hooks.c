/*
 * A release's hooks on this node (docs/deploys.md, "Hooks"): each command
 * of site.deploy_hooks.before_switch or .after_switch runs in the
 * release's directory through the site's pool (vc-php's hook-run, so as
 * the pool's user inside its wall, with its PHP), one after the other,
 * each bounded by fed.hook_timeout; the first that fails stops the rest.
 * What they print, and how each ended, is appended to the release's log
 * (`vc releases SITE --log`); `build`'s output comes from `vc deploy`
 * (release-log).
 */
#include "fed.h"
#include "vc_log.h"
#include "vc_util.h"

#include <protobuf-c/protobuf-c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define HOOK_POLL_NS 50000000L
#define RELEASE_LOG_MAX (4 * 1024 * 1024)

/* Appends to r's log (kept in LMDB with it). */
static void log_append(Vc__Release *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_append(Vc__Release *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *more = NULL;
    int n = vasprintf(&more, fmt, ap);
    va_end(ap);
    const char *old = r->log ? r->log : "";
    if (n >= 0 && strlen(old) + (size_t)n < RELEASE_LOG_MAX) {
        char *log = vc_asprintf("%s%s", old, more);
        if (r->log && r->log != protobuf_c_empty_string)
            free(r->log);
        r->log = log;
    }
    free(more);
}

static char *pool_ctl(fed_t *f, const vc_site_t *s)
{
    int named = s->pool && strcmp(s->pool, "default");
    char *daemon = vc_asprintf("ctl-vc-php%s%s", named ? "." : "", named ? s->pool : "");
    char *ep = vc_config_endpoint(f->d.cfg, daemon);
    free(daemon);
    return ep;
}

/* One command, to its end: 0 if it exited 0, else -1 with why. */
static int run_one(fed_t *f, const vc_site_t *s, Vc__Release *r, const char *which, const char *dir,
                   const char *command, char *why, size_t wlen)
{
    char *ep = pool_ctl(f, s);
    const char *args[3] = {s->name, dir, command};
    Vc__Reply *rep = NULL;
    int rc = vc_ctl_call(f->d.zctx, ep, "hook-run", args, 3, 10000, &rep);
    if (rc < 0 || rep == NULL || !rep->ok || vc_reply_get(rep, "id") == NULL) {
        snprintf(why, wlen, "%s \"%s\" did not start: %s", which, command,
                 rc < 0 ? vc_strerror(rc)
                 : rep  ? rep->message
                        : "no answer");
        if (rep)
            vc__reply__free_unpacked(rep, NULL);
        free(ep);
        return -1;
    }
    char id[32], next[32] = "0";
    snprintf(id, sizeof(id), "%s", vc_reply_get(rep, "id"));
    vc__reply__free_unpacked(rep, NULL);
    log_append(r, "$ %s    (%s, in %s)\n", command, which, dir);
    int64_t deadline = (int64_t)vc_mono_ms() + f->cfg->hook_timeout_ms;
    int status = -1, stopped = 0;
    for (;;) {
        const char *sargs[2] = {id, next};
        rep = NULL;
        if (vc_ctl_call(f->d.zctx, ep, "hook-status", sargs, 2, 10000, &rep) < 0 || rep == NULL || !rep->ok) {
            snprintf(why, wlen, "%s \"%s\": the pool lost the run", which, command);
            if (rep)
                vc__reply__free_unpacked(rep, NULL);
            status = -2;
            break;
        }
        const char *out = vc_reply_get(rep, "output"), *nx = vc_reply_get(rep, "next");
        if (out && *out)
            log_append(r, "%s", out);
        snprintf(next, sizeof(next), "%s", nx ? nx : next);
        int done = !strcmp(vc_reply_get(rep, "state") ? vc_reply_get(rep, "state") : "", "done");
        int more = out && *out;
        if (done)
            status = atoi(vc_reply_get(rep, "status") ? vc_reply_get(rep, "status") : "-1");
        vc__reply__free_unpacked(rep, NULL);
        if (done && !more)
            break;
        if (!done && !stopped && (int64_t)vc_mono_ms() > deadline) {
            const char *stop[1] = {id};
            rep = NULL;
            vc_ctl_call(f->d.zctx, ep, "hook-stop", stop, 1, 10000, &rep);
            if (rep)
                vc__reply__free_unpacked(rep, NULL);
            stopped = 1;
        }
        if (!more)
            nanosleep(&(struct timespec){0, HOOK_POLL_NS}, NULL);
    }
    free(ep);
    if (status == -2)
        return -1;
    if (stopped) {
        log_append(r, "[stopped at fed.hook_timeout, %lld ms]\n", (long long)f->cfg->hook_timeout_ms);
        snprintf(why, wlen, "%s \"%s\" ran past fed.hook_timeout (%lld ms)", which, command,
                 (long long)f->cfg->hook_timeout_ms);
        return -1;
    }
    int ok = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    char how[32];
    if (status >= 0 && WIFEXITED(status))
        snprintf(how, sizeof(how), "exit %d", WEXITSTATUS(status));
    else
        snprintf(how, sizeof(how), "signal %d", status >= 0 && WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    log_append(r, "[%s]\n", how);
    if (!ok)
        snprintf(why, wlen, "%s \"%s\" failed (%s): see vc releases %s --log %s", which, command, how, s->name, r->id);
    return ok ? 0 : -1;
}

int hooks_run(fed_t *f, const vc_site_t *s, Vc__Release *r, const char *which, char *why, size_t wlen)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    char **cmds = !strcmp(which, "before_switch") ? s->hooks_before_switch : s->hooks_after_switch;
    size_t n = !strcmp(which, "before_switch") ? s->nhooks_before_switch : s->nhooks_after_switch;
    if (n == 0)
        return 0;
    char *dir = vc_asprintf("%s/releases/%s", s->deploy_to, r->id);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = run_one(f, s, r, which, dir, cmds[i], why, wlen);
        vc_log(rc ? VC_LOG_ERR : VC_LOG_INFO, "hooks", "site \"%s\", release %s: %s \"%s\" %s", s->name, r->id, which,
               cmds[i], rc ? why : "done");
    }
    free(dir);
    releases_put(f, r);
    return rc;
}

void release_log_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    if (cmd->n_args != 3) {
        vc_reply_fail(reply, "usage: release-log SITE RELEASE TEXT");
        return;
    }
    const vc_site_t *s = fed_site(f, cmd->args[0], reply);
    if (s == NULL)
        return;
    Vc__Release *r = releases_get(f, s->name, cmd->args[1]);
    if (r == NULL) {
        vc_reply_fail(reply, "no release %s of site \"%s\" is here", cmd->args[1], s->name);
        return;
    }
    if (strcmp(cmd->args[2], "") == 0) { /* the log asked for */
        vc_reply_ok(reply, "%s", r->log ? r->log : "");
    } else {
        log_append(r, "%s", cmd->args[2]);
        releases_put(f, r);
        vc_reply_ok(reply, "logged");
    }
    vc__release__free_unpacked(r, NULL);
}
