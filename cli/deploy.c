/*
 * vc deploy SITE DIR: the manifest of DIR, signed with the deployer's key,
 * staged by this node's vc-fed (it answers which files it lacks; only
 * those are sent), checked there, then switched to. vc rollback and vc
 * releases ask vc-fed the same way (docs/deploys.md).
 */
#include "cli.h"
#include "deploy.h"
#include "vc_push.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define STAGE_TIMEOUT_MS 120000
/* spread waits for every other node (a dead one costs vc-fed up to two
 * minutes), switch for every node's new generation and health check. */
#define WAIT_TIMEOUT_MS 300000

const char *cli_fed_absent(const vc_config_t *cfg)
{
    for (size_t i = 0; i < cfg->nsites; i++)
        if (cfg->sites[i].deploy_to)
            return NULL;
    return cfg->config_releases ? NULL
                                : "no site has deploy_to and config_releases is not set, so vc-fed does not run "
                                  "here (docs/deploys.md)";
}

/* Why a call to vc-fed got no answer (rc < 0). */
static const char *unanswered(const vc_config_t *cfg, int rc)
{
    return rc == -VC_ERR_NOTRUNNING && cli_fed_absent(cfg) ? cli_fed_absent(cfg) : vc_strerror(rc);
}

/* A call to this node's vc-fed; prints why it failed. 0 or -1. */
static int fed_call(void *zctx, const vc_config_t *cfg, const char *verb, const char *const *args, size_t nargs,
                    const void *payload, size_t plen, Vc__Reply **r)
{
    char *ep = vc_config_endpoint(cfg, "ctl-vc-fed");
    int rc = vc_ctl_call_payload(zctx, ep, verb, args, nargs, payload, plen, WAIT_TIMEOUT_MS, r);
    free(ep);
    if (rc < 0)
        fprintf(stderr, "vc deploy: vc-fed does not answer: %s\n", unanswered(cfg, rc));
    else if (*r && !(*r)->ok)
        fprintf(stderr, "vc %s: %s\n", strcmp(verb, "rollback") ? "deploy" : "rollback", (*r)->message);
    return rc < 0 || *r == NULL || !(*r)->ok ? -1 : 0;
}

/* On a terminal, while vc-fed hands the release on: a bar a node, drawn
 * again in place from `spreading` five times a second. */
typedef struct spread_bars {
    void *zctx;
    const vc_config_t *cfg;
    const char *ids[2];
    atomic_int stop;
    size_t drawn; /* lines drawn last time */
} spread_bars_t;

static void draw_bars(spread_bars_t *b, const Vc__Reply *r)
{
    if (b->drawn)
        printf("\033[%zuA", b->drawn); /* back to the first bar */
    for (size_t i = 0; i < r->n_records; i++) {
        const Vc__Record *n = r->records[i];
        unsigned long long done = strtoull(vc_record_get(n, "files_done"), NULL, 10);
        unsigned long long all = strtoull(vc_record_get(n, "files"), NULL, 10);
        int staged = !strcmp(vc_record_get(n, "state"), "staged");
        char bar[31];
        size_t fill = staged ? sizeof(bar) - 1 : all ? (size_t)(done * (sizeof(bar) - 1) / all) : 0;
        memset(bar, '#', fill);
        memset(bar + fill, '.', sizeof(bar) - 1 - fill);
        bar[sizeof(bar) - 1] = '\0';
        printf("\r\033[K[%s] %s: %s, %llu of %llu files, %s bytes\n", bar, vc_record_get(n, "node"),
               vc_record_get(n, "state"), done, all, vc_record_get(n, "sent"));
    }
    b->drawn = r->n_records;
    fflush(stdout);
}

static void *bars_thread(void *arg)
{
    spread_bars_t *b = arg;
    char *ep = vc_config_endpoint(b->cfg, "ctl-vc-fed");
    while (!atomic_load(&b->stop)) {
        Vc__Reply *r = NULL;
        if (vc_ctl_call(b->zctx, ep, "spreading", b->ids, 2, 1000, &r) == 0 && r->ok && r->n_records &&
            !atomic_load(&b->stop))
            draw_bars(b, r);
        if (r)
            vc__reply__free_unpacked(r, NULL);
        nanosleep(&(struct timespec){0, 200000000}, NULL); /* the redraw's pace */
    }
    free(ep);
    return NULL;
}

/* In a cluster, the staged release handed on by this node's vc-fed to
 * every other node of the site, each one's outcome printed: 0 when all
 * staged it (or there is no other node). */
static int deploy_spread(void *zctx, const vc_config_t *cfg, const deploy_t *d)
{
    Vc__Reply *r = NULL;
    const char *ids[2] = {d->site, d->rel.id};
    spread_bars_t bars = {.zctx = zctx, .cfg = cfg, .ids = {d->site, d->rel.id}};
    pthread_t drawer;
    int drawing = isatty(STDOUT_FILENO) && pthread_create(&drawer, NULL, bars_thread, &bars) == 0;
    int rc = fed_call(zctx, cfg, "spread", ids, 2, NULL, 0, &r);
    if (drawing) {
        atomic_store(&bars.stop, 1);
        pthread_join(drawer, NULL);
    }
    for (size_t i = 0; r && i < r->n_records; i++) {
        const Vc__Record *n = r->records[i];
        const char *why = vc_record_get(n, "why");
        printf("node %s: %s, %s bytes sent, %s bytes of signatures received%s%s\n", vc_record_get(n, "node"),
               vc_record_get(n, "state"), vc_record_get(n, "sent"), vc_record_get(n, "received"), why ? ": " : "",
               why ? why : "");
    }
    if (r && !r->ok)
        fprintf(stderr, "vc deploy: nothing switched on any node\n");
    if (r)
        vc__reply__free_unpacked(r, NULL);
    fflush(stdout);
    return rc;
}

/* The one key in the key directory, when --key does not name one. */
static char *only_key(void)
{
    char *dir = cli_key_dir(), *found = NULL;
    int n = 0;
    DIR *dh = opendir(dir);
    for (struct dirent *e; dh && (e = readdir(dh));) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".key") == 0 && n++ == 0)
            found = vc_strndup(e->d_name, len - 4);
    }
    if (dh)
        closedir(dh);
    if (n != 1) {
        fprintf(stderr, "vc deploy: %s in %s: name one with --key NAME (vc key new NAME makes one)\n",
                n ? "several keys" : "no key", dir);
        free(found);
        found = NULL;
    }
    free(dir);
    return found;
}

static int parse_args(deploy_t *d, int *no_switch, int argc, char **argv)
{
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--message") && i + 1 < argc)
            d->message = argv[++i];
        else if (!strcmp(argv[i], "--key") && i + 1 < argc)
            d->key_name = argv[++i];
        else if (!strcmp(argv[i], "--exclude") && i + 1 < argc) {
            d->exclude = vc_realloc(d->exclude, (d->nexclude + 1) * sizeof(char *));
            d->exclude[d->nexclude++] = argv[++i];
        } else if (!strcmp(argv[i], "--no-switch"))
            *no_switch = 1;
        else if (!strcmp(argv[i], "--git") && i + 1 < argc)
            d->git = argv[++i];
        else if (!strcmp(argv[i], "--ref") && i + 1 < argc)
            d->ref = argv[++i];
        else if (argv[i][0] != '-' && npos < 2)
            pos[npos++] = argv[i];
        else
            return -1;
    }
    d->site = pos[0];
    d->dir = pos[1];
    /* SITE DIR, or SITE --git URL [--ref REF] */
    return npos == (d->git ? 1 : 2) && (d->ref == NULL || d->git) ? 0 : -1;
}

static void release_id(deploy_t *d)
{
    /* When, to the millisecond, then a random part: ids sort as made. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    d->rel.id = vc_asprintf("%s.%03ld-%06x", stamp, ts.tv_nsec / 1000000, (unsigned)randombytes_uniform(1 << 24));
    d->rel.created = (int64_t)ts.tv_sec;
}

/* Where vc-fed is: this node's. */
typedef struct deploy_target {
    void *zctx;
    const vc_config_t *cfg;
} deploy_target_t;

/* What vc-fed is asked, for vc_push: its failure in why. */
static int push_call(void *arg, const char *verb, const char *const *args, size_t nargs, const void *payload,
                     size_t plen, Vc__Reply **r, char *why, size_t wlen)
{
    const deploy_target_t *t = arg;
    char *ep = vc_config_endpoint(t->cfg, "ctl-vc-fed");
    int rc = vc_ctl_call_payload(t->zctx, ep, verb, args, nargs, payload, plen, STAGE_TIMEOUT_MS, r);
    free(ep);
    if (rc < 0)
        snprintf(why, wlen, "vc-fed does not answer: %s", unanswered(t->cfg, rc));
    return rc < 0 ? -1 : 0;
}

static void progress(const vc_push_t *p, size_t done)
{
    if (done == 0) {
        printf("manifest: %llu bytes%s%s%s\n", (unsigned long long)p->manifest_bytes,
               p->base[0] ? " (a delta against release " : "", p->base, p->base[0] ? "'s)" : "");
        printf("staging: %zu files to send (%llu bytes), %llu linked from earlier releases\n", p->nneed,
               (unsigned long long)p->need_bytes, (unsigned long long)p->linked);
    }
    /* On a terminal, a line that shows how far the sending is. */
    if (!isatty(STDOUT_FILENO) || p->nneed == 0)
        return;
    char bar[41];
    size_t fill = done * (sizeof(bar) - 1) / p->nneed;
    memset(bar, '#', fill);
    memset(bar + fill, '.', sizeof(bar) - 1 - fill);
    bar[sizeof(bar) - 1] = '\0';
    printf("\r[%s] %zu of %zu files, %llu bytes%s", bar, done, p->nneed, (unsigned long long)p->sent,
           done == p->nneed ? "\n" : "");
    fflush(stdout);
}

static int stage_and_switch(void *zctx, const vc_config_t *cfg, deploy_t *d, const char *sig_hex, int no_switch,
                            const char *build_log)
{
    deploy_target_t t = {zctx, cfg};
    vc_push_t p = {.rel = &d->rel,
                   .text = d->text,
                   .len = d->len,
                   .sig_hex = sig_hex,
                   .root = d->root,
                   .call = push_call,
                   .arg = &t,
                   .progress = progress};
    if (vc_push_stage(&p) < 0) {
        fprintf(stderr, "vc deploy: %s\n", p.why);
        return -1;
    }
    printf("staged: %llu bytes sent, %llu bytes of signatures received\n", (unsigned long long)p.sent,
           (unsigned long long)p.received);
    fflush(stdout);
    int rc = deploy_spread(zctx, cfg, d);
    Vc__Reply *r = NULL;
    const char *ids[2] = {d->site, d->rel.id};
    /* The build's output first in the release's log, then the hooks'. */
    const char *logged[3] = {d->site, d->rel.id, build_log};
    if (rc == 0 && build_log && *build_log && fed_call(zctx, cfg, "release-log", logged, 3, NULL, 0, &r) < 0)
        rc = -1;
    if (r)
        vc__reply__free_unpacked(r, NULL);
    r = NULL;
    if (rc == 0 && !no_switch) {
        /* What the hooks in the pool print (before_switch, after_switch),
         * as it comes; or the release's log once switched. */
        deploy_follow_t *follow = deploy_follow_start(zctx, cfg, d->site);
        int sw = fed_call(zctx, cfg, "switch", ids, 2, NULL, 0, &r);
        if (deploy_follow_stop(follow) == 0)
            deploy_print_log(zctx, cfg, d->site, d->rel.id, build_log ? strlen(build_log) : 0);
        if (sw == 0)
            printf("switched: %s\n", r->message);
        rc = sw;
    }
    if (r)
        vc__reply__free_unpacked(r, NULL);
    return rc;
}

int cmd_deploy(cli_t *cli, int argc, char **argv)
{
    deploy_t d = {0};
    int no_switch = 0;
    if (parse_args(&d, &no_switch, argc, argv) < 0) {
        fprintf(stderr, "usage: vc deploy SITE DIR|--git URL [--ref REF] [--message TEXT] [--key NAME] "
                        "[--exclude PATTERN]... [--no-switch]\n");
        free(d.exclude);
        return 2;
    }
    if (sodium_init() < 0)
        return 1;
    char *key_name = d.key_name ? vc_strdup(d.key_name) : only_key();
    vc_config_t *cfg = key_name ? cli_running_config(cli) : NULL;
    char why[1024];
    unsigned char sk[VC_RELEASE_SECRET], sig[VC_RELEASE_SIGNATURE];
    char sig_hex[2 * VC_RELEASE_SIGNATURE + 1];
    int rc = cfg ? 0 : -1;
    if (rc == 0 && cli_key_load(key_name, sk, why, sizeof(why)) < 0) {
        fprintf(stderr, "vc deploy: %s\n", why);
        rc = -1;
    }
    for (size_t i = 0; cfg && i < cfg->nsites; i++) /* the site's own patterns, with --exclude's */
        for (size_t k = 0; !strcmp(cfg->sites[i].name, d.site) && k < cfg->sites[i].ndeploy_exclude; k++) {
            d.exclude = vc_realloc(d.exclude, (d.nexclude + 1) * sizeof(char *));
            d.exclude[d.nexclude++] = cfg->sites[i].deploy_exclude[k];
        }
    char *checkout = NULL, commit[64] = "", *message = NULL;
    if (rc == 0 && d.git) {
        if ((rc = deploy_git_checkout(d.git, d.ref, &checkout, commit, sizeof(commit), why, sizeof(why))) < 0)
            fprintf(stderr, "vc deploy: %s\n", why);
        d.dir = checkout;
        /* The release says what it was made of. */
        const char *ref = d.ref ? d.ref : "HEAD";
        message =
            d.message ? vc_asprintf("%s (git %s %s)", d.message, ref, commit) : vc_asprintf("git %s %s", ref, commit);
        d.message = message;
        if (rc == 0)
            printf("checked out %s of %s: commit %s\n", d.ref ? d.ref : "HEAD", d.git, commit);
    }
    char *build_copy = NULL, *build_log = NULL;
    const vc_site_t *site = NULL;
    for (size_t i = 0; cfg && i < cfg->nsites; i++)
        if (!strcmp(cfg->sites[i].name, d.site))
            site = &cfg->sites[i];
    if (rc == 0 && (rc = deploy_build_hooks(site, d.dir, &build_copy, &build_log, why, sizeof(why))) < 0)
        fprintf(stderr, "vc deploy: %s\n", why);
    if (build_copy)
        d.dir = build_copy; /* what the build made is what is signed */
    if (rc == 0) {
        d.rel.site = vc_strdup(d.site);
        d.rel.signer = vc_strdup(key_name);
        d.rel.message = vc_strdup(d.message ? d.message : "");
        release_id(&d);
        if ((rc = deploy_build(&d, why, sizeof(why))) < 0)
            fprintf(stderr, "vc deploy: %s\n", why);
    }
    if (rc == 0) {
        vc_release_sign(d.text, d.len, sk, sig);
        vc_release_hex(sig, sizeof(sig), sig_hex);
        printf("release %s of site \"%s\": %zu entries, %llu bytes, signed by \"%s\"\n", d.rel.id, d.site, d.rel.n,
               (unsigned long long)d.bytes, key_name);
        fflush(stdout);
        void *zctx = zmq_ctx_new();
        rc = stage_and_switch(zctx, cfg, &d, sig_hex, no_switch, build_log);
        zmq_ctx_term(zctx);
    }
    deploy_build_cleanup(build_copy);
    deploy_build_cleanup(checkout);
    free(build_log);
    free(message);
    sodium_memzero(sk, sizeof(sk));
    free(key_name);
    free(d.exclude);
    free(d.root);
    free(d.text);
    vc_release_free(&d.rel);
    if (cfg)
        vc_config_destroy(&cfg);
    return rc == 0 ? 0 : 1;
}

int cmd_rollback(cli_t *cli, int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: vc rollback SITE [RELEASE]\n");
        return 2;
    }
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    void *zctx = zmq_ctx_new();
    Vc__Reply *r = NULL;
    int rc = fed_call(zctx, cfg, "rollback", (const char *const *)argv + 1, (size_t)argc - 1, NULL, 0, &r);
    if (rc == 0)
        printf("%s\n", r->message);
    if (r)
        vc__reply__free_unpacked(r, NULL);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return rc == 0 ? 0 : 1;
}

static const char *field(const Vc__Record *rec, const char *key)
{
    const char *v = vc_record_get(rec, key);
    return v ? v : "";
}

/* vc releases SITE --log [RELEASE]: its hooks' log (the current
 * release's without RELEASE). */
static int releases_log(cli_t *cli, const char *site, const char *id)
{
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    void *zctx = zmq_ctx_new();
    char current[VC_RELEASE_ID_MAX + 1] = "";
    Vc__Reply *r = NULL;
    const char *args[] = {site};
    if (id == NULL && cli_call(zctx, cfg, "vc-fed", "releases", args, 1, &r) == 0 && r && r->ok)
        for (size_t i = 0; i < r->n_records; i++)
            if (!strcmp(field(r->records[i], "state"), "current"))
                snprintf(current, sizeof(current), "%s", field(r->records[i], "id"));
    if (r)
        vc__reply__free_unpacked(r, NULL);
    int rc = 1;
    if (id == NULL && !*current)
        fprintf(stderr, "vc releases: site \"%s\" has no current release here: name one\n", site);
    else
        rc = deploy_print_log(zctx, cfg, site, id ? id : current, 0);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return rc;
}

int cmd_releases(cli_t *cli, int argc, char **argv)
{
    if (argc >= 3 && argc <= 4 && !strcmp(argv[2], "--log"))
        return releases_log(cli, argv[1], argc == 4 ? argv[3] : NULL);
    int json = argc == 3 && !strcmp(argv[2], "--json");
    if (argc != 2 + json) {
        fprintf(stderr, "usage: vc releases SITE [--json] | vc releases SITE --log [RELEASE]\n");
        return 2;
    }
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    void *zctx = zmq_ctx_new();
    Vc__Reply *r = NULL;
    const char *args[] = {argv[1]};
    int rc = cli_call(zctx, cfg, "vc-fed", "releases", args, 1, &r) < 0 || r == NULL || !r->ok;
    if (rc && r)
        fprintf(stderr, "vc releases: %s\n", r->message);
    for (size_t i = 0; !rc && i < r->n_records; i++) {
        const Vc__Record *rel = r->records[i];
        if (json) {
            printf("%s{", i ? "," : "[");
            cli_print_json_fields(rel->fields, rel->n_fields);
            printf("}");
            continue;
        }
        if (i == 0)
            printf("%-26s %-8s %-4s %-20s %-12s %-16s %s\n", "RELEASE", "STATE", "BAD", "CREATED", "KEY", "NODES",
                   "MESSAGE");
        time_t t = (time_t)strtoll(field(rel, "created"), NULL, 10);
        char when[32];
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", gmtime(&t));
        printf("%-26s %-8s %-4s %-20s %-12s %-16s %s\n", field(rel, "id"), field(rel, "state"), field(rel, "bad"), when,
               field(rel, "key"), *field(rel, "nodes") ? field(rel, "nodes") : "this one", field(rel, "message"));
    }
    const char *unanswered = rc ? NULL : vc_reply_get(r, "unanswered");
    const char *others = rc ? NULL : vc_reply_get(r, "others");
    if (unanswered && *unanswered)
        fprintf(stderr, "vc releases: no answer from node %s: NODES may miss it\n", unanswered);
    if (others)
        fprintf(stderr, "vc releases: NODES names this node only: %s\n", others);
    if (!rc && json)
        printf("%s]\n", r->n_records ? "" : "[");
    else if (!rc && r->n_records == 0)
        printf("site \"%s\" has no release yet (vc deploy %s DIR)\n", argv[1], argv[1]);
    if (r)
        vc__reply__free_unpacked(r, NULL);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return rc;
}
