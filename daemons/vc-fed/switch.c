/*
 * Switching a site's release (fed.h): DEPLOY_TO/current is replaced by a
 * link to the release in one rename, then the site's pool boots a new
 * generation, which runs the new release while the old one finishes its
 * requests in the old (daemons/vc-php/release_pin.h): no request fails
 * and none mixes two releases' code. If the new generation does not take
 * over within fed.switch_timeout, the link goes back.
 */
#include "fed.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void fed_current(const vc_site_t *s, char *id, size_t len)
{
    char *link = vc_asprintf("%s/current", s->deploy_to), target[PATH_MAX];
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    free(link);
    id[0] = '\0';
    if (n > 9 && strncmp(target, "releases/", 9) == 0) {
        target[n] = '\0';
        snprintf(id, len, "%s", target + 9);
    }
}

/* The link, moved in one rename: a request sees the old or the new. */
static int point_current(const vc_site_t *s, const char *id, char *why, size_t wlen)
{
    char *tmp = vc_asprintf("%s/.current-%d", s->deploy_to, (int)getpid());
    char *link = vc_asprintf("%s/current", s->deploy_to), *target = vc_asprintf("releases/%s", id);
    unlink(tmp);
    int rc = symlink(target, tmp);
    if (rc == 0 && (rc = rename(tmp, link)) != 0)
        unlink(tmp);
    if (rc != 0)
        snprintf(why, wlen, "cannot point \"%s\" at %s: %s", link, target, strerror(errno));
    free(tmp);
    free(link);
    free(target);
    return rc;
}

/* The pool's current generation; *older: how many workers of earlier
 * ones are still there (finishing a request, or lent to a front that has
 * not given them back yet). */
static unsigned generation_of(fed_t *f, const char *daemon, size_t *older)
{
    char *ep = vc_config_endpoint(f->d.cfg, daemon);
    Vc__Reply *r = NULL;
    unsigned gen = 0;
    size_t old = 0;
    if (vc_ctl_call(f->d.zctx, ep, "status", NULL, 0, 2000, &r) == 0 && r && r->ok && vc_reply_get(r, "generation")) {
        gen = (unsigned)strtoul(vc_reply_get(r, "generation"), NULL, 10);
        for (size_t i = 0; i < r->n_records; i++) {
            const char *g = vc_record_get(r->records[i], "generation");
            old += g && strtoul(g, NULL, 10) < gen;
        }
    }
    if (r)
        vc__reply__free_unpacked(r, NULL);
    free(ep);
    if (older)
        *older = old;
    return gen;
}

/* Asks the site's pool for a new generation and waits until it serves. */
static int new_generation(fed_t *f, const vc_site_t *s, char *why, size_t wlen)
{
    char daemon[128];
    snprintf(daemon, sizeof(daemon), "ctl-vc-php%s%s", s->pool && strcmp(s->pool, "default") ? "." : "",
             s->pool && strcmp(s->pool, "default") ? s->pool : "");
    int64_t deadline = (int64_t)vc_mono_ms() + f->cfg->switch_timeout_ms;
    unsigned before = generation_of(f, daemon, NULL), want = 0;
    while (want == 0 && (int64_t)vc_mono_ms() < deadline) {
        char *ep = vc_config_endpoint(f->d.cfg, daemon);
        Vc__Reply *r = NULL;
        int rc = vc_ctl_call(f->d.zctx, ep, "reload", NULL, 0, 5000, &r);
        free(ep);
        if (rc < 0 || r == NULL || !r->ok) {
            snprintf(why, wlen, "the pool's reload failed: %s", rc < 0 ? vc_strerror(rc) : r ? r->message : "");
            if (r)
                vc__reply__free_unpacked(r, NULL);
            return -1;
        }
        /* "booting generation N"; or another reload is booting (it may
         * have read the old link): once it serves, ask again. */
        const char *n = strstr(r->message, "generation ");
        want = n ? (unsigned)strtoul(n + 11, NULL, 10) : 0;
        vc__reply__free_unpacked(r, NULL);
        while (want == 0 && (int64_t)vc_mono_ms() < deadline && generation_of(f, daemon, NULL) == before)
            nanosleep(&(struct timespec){0, 20000000}, NULL);
        before = want ? before : generation_of(f, daemon, NULL);
    }
    while (want && (int64_t)vc_mono_ms() < deadline && generation_of(f, daemon, NULL) < want)
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    if (want && (int64_t)vc_mono_ms() < deadline) {
        /* It serves. Until the workers of the generations before it are
         * gone, a request may still reach one (lent to a front that has
         * not read the recall yet): the switch is over when none is left,
         * or, for a request that runs long, at the bound. */
        size_t older = 1;
        while ((generation_of(f, daemon, &older), older) > 0 && (int64_t)vc_mono_ms() < deadline)
            nanosleep(&(struct timespec){0, 20000000}, NULL);
        if (older)
            vc_log(VC_LOG_WARN, "switch",
                   "site \"%s\": %zu workers of the previous release are still finishing "
                   "requests at fed.switch_timeout",
                   s->name, older);
        return 0;
    }
    snprintf(why, wlen,
             "the pool's new generation did not take over within fed.switch_timeout (%lld ms); see the "
             "pool's log",
             (long long)f->cfg->switch_timeout_ms);
    return -1;
}

/* A configuration release (VC_CONFIG_RELEASE_SITE) takes effect as `vc
 * reload` does: the supervisor reads the configuration again, with the
 * site files of the release current now, refuses it as configtest would
 * ("file:line: why", the running one stays), or hands it to every daemon
 * but this one, which asks and takes it at its next tick. */
static int reload_config(fed_t *f, char *why, size_t wlen)
{
    char *ep = vc_config_endpoint(f->d.cfg, "ctl-vc");
    const char *args[] = {f->d.name};
    Vc__Reply *r = NULL;
    int rc = vc_ctl_call(f->d.zctx, ep, "reload", args, 1, (long)f->cfg->switch_timeout_ms, &r);
    free(ep);
    /* The answer alone says: reload_wanted may still be set by a switch
     * just before this one, taken at a tick that has not come yet. */
    int taken = rc == 0 && r->ok;
    if (rc < 0)
        snprintf(why, wlen, "the supervisor did not answer the reload: %s", vc_strerror(rc));
    else if (!taken)
        snprintf(why, wlen, "the configuration was refused: %s", r->message);
    if (taken)
        f->reload_wanted = 1;
    if (r)
        vc__reply__free_unpacked(r, NULL);
    return taken ? 0 : -1;
}

/* The site's new release takes over: its pool's new generation, or the
 * configuration loaded again. */
static int take_over(fed_t *f, const vc_site_t *s, char *why, size_t wlen)
{
    return fed_is_config(s) ? reload_config(f, why, wlen) : new_generation(f, s, why, wlen);
}

/* Keeps site.keep_releases, the newest first, and always the current one
 * and the one a rollback goes to. */
static void prune(fed_t *f, const vc_site_t *s, const char *current, const char *previous)
{
    Vc__Release **all;
    size_t n = releases_of(f, s->name, &all), kept = 0;
    for (size_t i = n; i-- > 0;) { /* newest last */
        int keep = !strcmp(all[i]->id, current) || !strcmp(all[i]->id, previous) || kept < (size_t)s->keep_releases;
        if (keep) {
            kept++;
            continue;
        }
        char *dir = vc_asprintf("%s/releases/%s", s->deploy_to, all[i]->id);
        if (fed_remove_tree(dir) == 0 && releases_del(f, s->name, all[i]->id) == 0)
            vc_log(VC_LOG_INFO, "switch", "site \"%s\": release %s pruned (keep_releases = %lld)", s->name, all[i]->id,
                   (long long)s->keep_releases);
        free(dir);
    }
    releases_free(all, n);
}

/* Makes id current; marks it switched. 0, or -1 with the link as it was. */
static int do_switch(fed_t *f, const vc_site_t *s, Vc__Release *r, const char *was, char *why, size_t wlen)
{
    char *dir = vc_asprintf("%s/releases/%s", s->deploy_to, r->id);
    struct stat st;
    int there = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
    free(dir);
    if (!there) {
        snprintf(why, wlen, "release %s is not on this node", r->id);
        return -1;
    }
    if (point_current(s, r->id, why, wlen) < 0)
        return -1;
    if (take_over(f, s, why, wlen) < 0) {
        char ignore[1024];
        if (was[0] && point_current(s, was, ignore, sizeof(ignore)) == 0)
            take_over(f, s, ignore, sizeof(ignore));
        else if (!was[0] && fed_is_config(s)) {
            /* No configuration release before: none is current, or the
             * next `vc reload` would read the refused one. */
            char *link = vc_asprintf("%s/current", s->deploy_to);
            unlink(link);
            free(link);
        }
        return -1;
    }
    r->switched_ms = vc_wall_ms();
    releases_put(f, r);
    f->switched++;
    prune(f, s, r->id, was);
    return 0;
}

/* The release a rollback goes to: the last one switched to before the
 * current one, never one marked bad. */
static Vc__Release *previous_of(fed_t *f, const vc_site_t *s, const char *current)
{
    Vc__Release **all, *best = NULL;
    size_t n = releases_of(f, s->name, &all);
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i]->id, current) != 0 && !all[i]->bad && all[i]->switched_ms > 0 &&
            (best == NULL || all[i]->switched_ms > best->switched_ms))
            best = all[i];
    for (size_t i = 0; i < n; i++)
        if (all[i] != best)
            vc__release__free_unpacked(all[i], NULL);
    free(all);
    return best;
}

/* The release just switched to failed its health check: it is marked bad
 * and the one before comes back, the same way. */
static void switch_back(fed_t *f, const vc_site_t *s, Vc__Release *r, const char *was, const char *why,
                        Vc__Reply *reply)
{
    r->bad = 1;
    releases_put(f, r);
    Vc__Release *prev = was[0] ? releases_get(f, s->name, was) : NULL;
    char back[512] = "";
    if (prev && do_switch(f, s, prev, r->id, back, sizeof(back)) == 0) {
        vc_bus_publish(f->d.bus, VC_EVENT(FED_RELEASE_ROLLED_BACK), VC__SEVERITY__WARNING, "site", s->name, "release",
                       was, "from", r->id, NULL);
        stage_fail(f, reply, s->name, r->id, "%s: rolled back to release %s; %s is marked bad", why, was, r->id);
    } else {
        stage_fail(f, reply, s->name, r->id, "%s; %s (it stays current, marked bad)", why,
                   prev ? back : "there is no earlier release to go back to");
    }
    if (prev)
        vc__release__free_unpacked(prev, NULL);
}

int switch_check_again(fed_t *f, const vc_site_t *s, Vc__Release *r, char *back_to, size_t blen, Vc__Reply *reply)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    char why[1024];
    back_to[0] = '\0';
    if (health_check(f, s, why, sizeof(why)) == 0) {
        vc_reply_ok(reply, "site \"%s\" runs release %s", s->name, r->id);
        return 0;
    }
    Vc__Release *prev = previous_of(f, s, r->id);
    if (prev) {
        snprintf(back_to, blen, "%s", prev->id);
        vc__release__free_unpacked(prev, NULL);
    }
    switch_back(f, s, r, back_to, why, reply);
    return -1;
}

int switch_apply(fed_t *f, const vc_site_t *s, Vc__Release *r, int back, Vc__Reply *reply)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    char was[VC_RELEASE_ID_MAX + 1], why[1024];
    fed_current(s, was, sizeof(was));
    if (strcmp(was, r->id) == 0) {
        vc_reply_ok(reply, "release %s is site \"%s\"'s current release already", r->id, s->name);
        return 0;
    }
    if (do_switch(f, s, r, was, why, sizeof(why)) < 0) {
        stage_fail(f, reply, s->name, r->id, "%s", why);
        return -1;
    }
    if (!back && health_check(f, s, why, sizeof(why)) < 0) {
        switch_back(f, s, r, was, why, reply);
        return -1;
    }
    if (!back) {
        vc_log(VC_LOG_NOTICE, "switch", "site \"%s\" runs release %s (was %s)", s->name, r->id, was[0] ? was : "none");
        vc_bus_publish(f->d.bus, VC_EVENT(FED_RELEASE_SWITCHED), VC__SEVERITY__NOTICE, "site", s->name, "release",
                       r->id, "previous", was, NULL);
        /* On every node, after its own switch: the release stays. */
        if (hooks_run(f, s, r, "after_switch", why, sizeof(why)) < 0) {
            vc_reply_fail(reply, "site \"%s\" runs release %s, but %s", s->name, r->id, why);
            vc_reply_field(reply, "previous", "%s", was);
            return -1;
        }
        vc_reply_ok(reply, "site \"%s\" runs release %s", s->name, r->id);
        vc_reply_field(reply, "previous", "%s", was);
        return 0;
    }
    /* The release left is bad: no later rollback goes back to it. */
    Vc__Release *left = was[0] ? releases_get(f, s->name, was) : NULL;
    if (left) {
        left->bad = 1;
        releases_put(f, left);
        vc__release__free_unpacked(left, NULL);
    }
    if (r->bad) { /* named on purpose: good again */
        r->bad = 0;
        releases_put(f, r);
    }
    vc_log(VC_LOG_NOTICE, "switch", "site \"%s\" rolled back to release %s (from %s)", s->name, r->id, was);
    vc_bus_publish(f->d.bus, VC_EVENT(FED_RELEASE_ROLLED_BACK), VC__SEVERITY__WARNING, "site", s->name, "release",
                   r->id, "from", was, NULL);
    vc_reply_ok(reply, "site \"%s\" runs release %s again (release %s is marked bad)", s->name, r->id, was);
    vc_reply_field(reply, "previous", "%s", was);
    return 0;
}

void switch_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    if (cmd->n_args != 2) {
        vc_reply_fail(reply, "usage: switch SITE RELEASE");
        return;
    }
    const vc_site_t *s = fed_site(f, cmd->args[0], reply);
    if (s == NULL)
        return;
    Vc__Release *r = releases_get(f, s->name, cmd->args[1]);
    char why[1024], now[VC_RELEASE_ID_MAX + 1];
    if (r)
        fed_current(s, now, sizeof(now));
    if (r == NULL)
        vc_reply_fail(reply, "no release %s of site \"%s\" is staged here", cmd->args[1], s->name);
    else if (strcmp(now, r->id) != 0 && hooks_run(f, s, r, "before_switch", why, sizeof(why)) < 0)
        stage_fail(f, reply, s->name, r->id, "%s; no node switched", why); /* once, on the node asked */
    else if (cluster_on(f))
        together_switch(f, s, r->id, 0, reply);
    else
        switch_apply(f, s, r, 0, reply);
    if (r)
        vc__release__free_unpacked(r, NULL);
}

void rollback_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    if (cmd->n_args < 1 || cmd->n_args > 2) {
        vc_reply_fail(reply, "usage: rollback SITE [RELEASE]");
        return;
    }
    const vc_site_t *s = fed_site(f, cmd->args[0], reply);
    if (s == NULL)
        return;
    char was[VC_RELEASE_ID_MAX + 1];
    fed_current(s, was, sizeof(was));
    Vc__Release *to = cmd->n_args == 2 ? releases_get(f, s->name, cmd->args[1]) : previous_of(f, s, was);
    if (to == NULL) {
        vc_reply_fail(reply,
                      cmd->n_args == 2 ? "no release %s of site \"%s\" is here"
                                       : "site \"%s\" has no earlier good release to go back to%s",
                      cmd->n_args == 2 ? cmd->args[1] : s->name, cmd->n_args == 2 ? s->name : "");
        return;
    }
    if (to->bad && cmd->n_args == 1)
        vc_reply_fail(reply, "release %s is marked bad", to->id);
    else if (cluster_on(f))
        together_switch(f, s, to->id, 1, reply);
    else
        switch_apply(f, s, to, 1, reply);
    vc__release__free_unpacked(to, NULL);
}
