/*
 * vc cache: purges and figures of the response cache (daemons/vc-cache).
 */
#include "cli.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static int usage(void)
{
    fputs("usage: vc cache purge (--url URL | --prefix URL | --tag TAG | --site NAME | --all) [--soft]\n"
          "       vc cache stats [--json]\n"
          "       vc cache show URL [--json]\n"
          "       vc cache warm (--sitemap URL | --list FILE|-) [--concurrency N] [--insecure] [--json] [--events ID]\n"
          "       vc cache check\n",
          stderr);
    return 2;
}

static int purge(void *zctx, const vc_config_t *cfg, int argc, char **argv)
{
    const char *kind = NULL, *value = NULL;
    int soft = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--soft")) {
            soft = 1;
        } else if (!strcmp(a, "--all") && kind == NULL) {
            kind = "all";
        } else if ((!strcmp(a, "--url") || !strcmp(a, "--prefix") || !strcmp(a, "--tag") || !strcmp(a, "--site")) &&
                   kind == NULL && i + 1 < argc) {
            kind = a + 2;
            value = argv[++i];
        } else {
            return usage();
        }
    }
    char *hosts = NULL; /* a site's, "a,b,...": as long as they are */
    if (kind && !strcmp(kind, "site")) {
        /* A site is its host names: vc-cache knows keys, not sites. */
        const vc_site_t *site = NULL;
        for (size_t i = 0; i < cfg->nsites && site == NULL; i++)
            if (!strcmp(cfg->sites[i].name, value))
                site = &cfg->sites[i];
        if (site == NULL || site->nhosts == 0) {
            fprintf(stderr, "vc cache purge: %s\n",
                    site ? "that site has no host names (the default site): purge with --prefix or --all"
                         : "no such site (vc configtest lists them)");
            return 1;
        }
        size_t len = 0;
        FILE *out = open_memstream(&hosts, &len);
        for (size_t h = 0; h < site->nhosts; h++)
            fprintf(out, "%s%s", h ? "," : "", site->hosts[h]);
        fclose(out);
        value = hosts;
    }
    if (kind == NULL)
        return usage();
    const char *args[3];
    size_t n = 0;
    args[n++] = kind;
    if (value)
        args[n++] = value;
    if (soft)
        args[n++] = "soft";
    Vc__Reply *r = NULL;
    int called = cli_call(zctx, cfg, "vc-cache", "purge", args, n, &r);
    free(hosts);
    if (called < 0)
        return 1;
    int ok = r->ok;
    if (ok)
        printf("%s (purge %s) in %s ms\n", r->message, vc_reply_get(r, "id") ? vc_reply_get(r, "id") : "-",
               vc_reply_get(r, "ms") ? vc_reply_get(r, "ms") : "?");
    else
        fprintf(stderr, "vc cache purge: %s\n", r->message);
    vc__reply__free_unpacked(r, NULL);
    return ok ? 0 : 1;
}

/* What the fronts count for the cache, summed (each front process
 * answers for its own): every field of a front's status named cache_*,
 * under its name without the prefix, as the cache backend lists them
 * (daemons/vc-front/cache/cache.c). */
typedef struct front_count {
    char name[48];
    unsigned long long v;
} front_count_t;
#define FRONT_COUNTS_MAX 32

static void add_count(front_count_t *c, size_t *n, const char *name, unsigned long long v)
{
    size_t i = 0;
    while (i < *n && strcmp(c[i].name, name) != 0)
        i++;
    if (i == *n) {
        if (*n == FRONT_COUNTS_MAX)
            return;
        snprintf(c[(*n)++].name, sizeof(c->name), "%s", name);
        c[i].v = 0;
    }
    c[i].v += v;
}

static size_t front_counts(void *zctx, const vc_config_t *cfg, front_count_t *out)
{
    Vc__Reply *sup = NULL;
    size_t n = 0;
    if (cli_call(zctx, cfg, "vc", "status", NULL, 0, &sup) < 0)
        return 0;
    for (size_t i = 0; i < sup->n_records; i++) {
        const char *name = vc_record_get(sup->records[i], "daemon");
        Vc__Reply *f = NULL;
        if (name == NULL || strncmp(name, "vc-front", 8) != 0 || cli_call(zctx, cfg, name, "status", NULL, 0, &f) < 0)
            continue;
        for (size_t k = 0; k < f->n_fields; k++)
            if (strncmp(f->fields[k]->key, "cache_", 6) == 0)
                add_count(out, &n, f->fields[k]->key + 6, strtoull(f->fields[k]->value, NULL, 10));
        vc__reply__free_unpacked(f, NULL);
    }
    vc__reply__free_unpacked(sup, NULL);
    return n;
}

static unsigned long long count_of(const front_count_t *c, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0)
            return c[i].v;
    return 0;
}

static int stats(void *zctx, const vc_config_t *cfg, int argc, char **argv)
{
    int json = argc > 1 && !strcmp(argv[1], "--json");
    if (argc > 1 + json)
        return usage();
    Vc__Reply *r = NULL;
    if (cli_call(zctx, cfg, "vc-cache", "stats", NULL, 0, &r) < 0)
        return 1;
    front_count_t fc[FRONT_COUNTS_MAX];
    size_t nfc = front_counts(zctx, cfg, fc);
    static const char *const keys[] = {"entries", "bytes",       "max_size", "stored",    "refused",     "evicted",
                                       "purged",  "invalidated", "offers",   "malformed", "soft_pending"};
    /* Answers PHP did not make for their request, of those looked up. */
    unsigned long long served = count_of(fc, nfc, "hits") + count_of(fc, nfc, "stale") + count_of(fc, nfc, "collapsed");
    unsigned long long misses = count_of(fc, nfc, "misses");
    double ratio = served + misses ? (double)served / (double)(served + misses) : 0;
    if (json) {
        printf("{");
        for (size_t i = 0; i < VC_ARRAY_SIZE(keys); i++) {
            const char *v = vc_reply_get(r, keys[i]);
            printf("\"%s\":%s,", keys[i], v ? v : "0");
        }
        for (size_t k = 0; k < nfc; k++)
            printf("\"%s\":%llu,", fc[k].name, fc[k].v);
        printf("\"hit_ratio\":%.4f}\n", ratio);
    } else {
        for (size_t i = 0; i < VC_ARRAY_SIZE(keys); i++) {
            const char *v = vc_reply_get(r, keys[i]);
            printf("%-11s %s\n", keys[i], v ? v : "0");
        }
        for (size_t k = 0; k < nfc; k++)
            printf("%-11s %llu\n", fc[k].name, fc[k].v);
        printf("%-11s %.1f%%\n", "hit_ratio", ratio * 100);
    }
    vc__reply__free_unpacked(r, NULL);
    return 0;
}

/* What is stored for a URL: 0 if anything is, 1 if nothing. */
static int show(void *zctx, const vc_config_t *cfg, int argc, char **argv)
{
    int json = argc == 3 && !strcmp(argv[2], "--json");
    if (argc != 2 + json)
        return usage();
    Vc__Reply *r = NULL;
    const char *args[] = {argv[1]};
    if (cli_call(zctx, cfg, "vc-cache", "show", args, 1, &r) < 0)
        return 1;
    if (!r->ok) {
        fprintf(stderr, "vc cache show: %s\n", r->message);
        vc__reply__free_unpacked(r, NULL);
        return 1;
    }
    if (json)
        printf("[");
    for (size_t i = 0; i < r->n_records; i++) {
        const Vc__Record *rec = r->records[i];
        if (json) {
            printf("%s{", i ? "," : "");
            cli_print_json_fields(rec->fields, rec->n_fields);
            printf("}");
            continue;
        }
        /* The key, what it is, then one line a field. */
        printf("%s%s (%s)\n", i ? "\n" : "", vc_record_get(rec, "key"), vc_record_get(rec, "kind"));
        for (size_t k = 0; k < rec->n_fields; k++)
            if (strcmp(rec->fields[k]->key, "key") && strcmp(rec->fields[k]->key, "kind"))
                printf("  %-8s %s\n", rec->fields[k]->key, rec->fields[k]->value);
    }
    if (json)
        printf("]\n");
    else if (r->n_records == 0)
        printf("nothing stored for %s\n", argv[1]);
    int found = r->n_records > 0;
    vc__reply__free_unpacked(r, NULL);
    return found ? 0 : 1;
}

/* vc-cache walks its databases: 0 if they agree. */
static int check(void *zctx, const vc_config_t *cfg, int argc, char **argv)
{
    if (argc != 1)
        return usage();
    Vc__Reply *r = NULL;
    if (cli_call(zctx, cfg, "vc-cache", "check", NULL, 0, &r) < 0)
        return 1;
    int ok = r->ok;
    fprintf(ok ? stdout : stderr, "%s\n", r->message);
    vc__reply__free_unpacked(r, NULL);
    return ok ? 0 : 1;
}

/* vc cache warm: HTTP to this node's own listeners, no ZeroMQ. */
static int warm(void *zctx, const vc_config_t *cfg, int argc, char **argv)
{
    (void)zctx;
    int rc = cache_warm(cfg, argc, argv);
    return rc == -2 ? usage() : rc;
}

/* vc cache's subcommands (their help: cli/commands.c). */
static const struct {
    const char *name;
    int (*run)(void *zctx, const vc_config_t *cfg, int argc, char **argv);
} subcommands[] = {
    {"purge", purge}, {"stats", stats}, {"show", show}, {"warm", warm}, {"check", check},
};

int cmd_cache(cli_t *cli, int argc, char **argv)
{
    const char *sub = argc >= 2 ? argv[1] : "";
    size_t i = 0;
    while (i < VC_ARRAY_SIZE(subcommands) && strcmp(sub, subcommands[i].name) != 0)
        i++;
    if (i == VC_ARRAY_SIZE(subcommands))
        return usage();
    /* One configuration and one ZeroMQ context for every call. */
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    void *zctx = zmq_ctx_new();
    int rc = subcommands[i].run(zctx, cfg, argc - 1, argv + 1);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return rc;
}
