/*
 * `vc bg` and `vc schedule` (docs/background.md): each pool's background
 * processes and schedule entries, asked of every vc-php, and a start,
 * stop or restart sent to the pool of the site named; `vc bg logs` reads
 * their lines from the suite's log.
 */
#include "cli.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

static const char *field(const Vc__Record *r, const char *key)
{
    const char *v = vc_record_get(r, key);
    return v ? v : "-";
}

/* Every pool's records of kind ("background" or "schedule"), of site
 * (NULL: all), printed. 0, or 1 if a pool did not answer. */
static int list(const vc_config_t *cfg, const char *kind, const char *site, int json)
{
    void *zctx = zmq_ctx_new();
    int failed = 0, shown = 0;
    if (json)
        printf("[");
    for (size_t i = 0; i <= cfg->npools; i++) {
        char *daemon = i ? vc_asprintf("vc-php.%s", cfg->pools[i - 1].name) : vc_strdup("vc-php");
        const char *args[1] = {site};
        Vc__Reply *r = NULL;
        if (cli_call(zctx, cfg, daemon, "background", args, site ? 1 : 0, &r) < 0 || !r->ok) {
            fprintf(stderr, "vc: %s does not answer%s%s\n", daemon, r ? ": " : "", r ? r->message : "");
            failed = 1;
        }
        for (size_t k = 0; r && r->ok && k < r->n_records; k++) {
            const Vc__Record *rec = r->records[k];
            if (strcmp(field(rec, "kind"), kind) != 0 || !strcmp(field(rec, "retired"), "1"))
                continue;
            if (json) {
                printf("%s{", shown ? "," : "");
                cli_print_json_fields(rec->fields, rec->n_fields);
                printf("}");
            } else if (!strcmp(kind, "background")) {
                if (!shown)
                    printf("%-16s %-16s %-3s %-9s %-8s %-10s %-8s %s\n", "SITE", "NAME", "#", "STATE", "PID", "UPTIME",
                           "RESTARTS", "COMMAND");
                long long up = atoll(field(rec, "uptime_ms")) / 1000;
                printf("%-16s %-16s %-3s %-9s %-8s %-10lld %-8s %s\n", field(rec, "site"), field(rec, "name"),
                       field(rec, "process"), field(rec, "state"), field(rec, "pid"), up, field(rec, "restarts"),
                       field(rec, "command"));
            } else {
                if (!shown)
                    printf("%-16s %-8s %-25s %-25s %-10s %-8s %s\n", "SITE", "STATE", "NEXT RUN", "LAST RUN", "LAST",
                           "SKIPPED", "LINE");
                printf("%-16s %-8s %-25s %-25s %-10s %-8s %s\n", field(rec, "site"), field(rec, "state"),
                       field(rec, "next_run"), field(rec, "last_run"), field(rec, "last_status"), field(rec, "skipped"),
                       field(rec, "line"));
                if (strcmp(field(rec, "last_failure"), "-") != 0)
                    printf("%-16s last failure %s\n", "", field(rec, "last_failure"));
            }
            shown++;
        }
        if (r)
            vc__reply__free_unpacked(r, NULL);
        free(daemon);
    }
    if (json)
        printf("]\n");
    else if (!shown)
        printf("no %s%s%s\n", !strcmp(kind, "background") ? "background processes" : "schedule entries",
               site ? " for site " : "", site ? site : "");
    zmq_ctx_term(zctx);
    return failed;
}

static const vc_site_t *site_named(const vc_config_t *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->nsites; i++)
        if (strcmp(cfg->sites[i].name, name) == 0)
            return &cfg->sites[i];
    return NULL;
}

static int control(const vc_config_t *cfg, const char *action, const char *site, const char *name)
{
    const vc_site_t *s = site_named(cfg, site);
    if (s == NULL) {
        fprintf(stderr, "vc bg: no site \"%s\"\n", site);
        return 1;
    }
    const char *pool = s->pool ? s->pool : "default";
    char *daemon = strcmp(pool, "default") ? vc_asprintf("vc-php.%s", pool) : vc_strdup("vc-php");
    char *verb = vc_asprintf("background-%s", action);
    const char *args[2] = {site, name};
    void *zctx = zmq_ctx_new();
    Vc__Reply *r = NULL;
    int rc = 1;
    if (cli_call(zctx, cfg, daemon, verb, args, 2, &r) < 0)
        fprintf(stderr, "vc bg: %s does not answer\n", daemon);
    else if (!r->ok)
        fprintf(stderr, "vc bg: %s\n", r->message);
    else
        rc = (printf("%s\n", r->message), 0);
    if (r)
        vc__reply__free_unpacked(r, NULL);
    zmq_ctx_term(zctx);
    free(verb);
    free(daemon);
    return rc;
}

static volatile sig_atomic_t interrupted;
static void on_int(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* The lines of SITE/NAME's output in the suite's log (where `vc up -d`
 * and the package's service write it); --follow: and those to come. */
static int logs(const vc_config_t *cfg, const char *site, const char *name, int follow)
{
    char *path = vc_asprintf("%s/vc.log", cfg->log_dir);
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        fprintf(stderr,
                "vc bg logs: %s is not there: `vc up -d` logs there; a suite run in a terminal logs to it, and "
                "under systemd to the journal (journalctl -u velocity -g 'background: %s/%s')\n",
                path, site, name);
        free(path);
        return 1;
    }
    char *tag = vc_asprintf("background: %s/%s[", site, name);
    signal(SIGINT, on_int);
    char line[8192];
    while (!interrupted) {
        if (fgets(line, sizeof(line), f)) {
            if (strstr(line, tag))
                fputs(line, stdout);
            continue;
        }
        if (!follow)
            break;
        fflush(stdout);
        clearerr(f);
        usleep(200 * 1000);
    }
    fclose(f);
    free(tag);
    free(path);
    return 0;
}

int cmd_bg(cli_t *cli, int argc, char **argv)
{
    int json = argc > 1 && strcmp(argv[1], "--json") == 0;
    argc -= json, argv += json;
    const char *sub = argc > 1 ? argv[1] : NULL;
    int is_action = sub && (!strcmp(sub, "start") || !strcmp(sub, "stop") || !strcmp(sub, "restart"));
    int is_logs = sub && !strcmp(sub, "logs");
    if ((is_action && argc != 4) || (is_logs && (argc < 4 || argc > 5)) || (!is_action && !is_logs && argc > 2)) {
        fprintf(stderr, "usage: vc bg [--json] [SITE] | vc bg start|stop|restart SITE NAME | "
                        "vc bg logs SITE NAME [--follow]\n");
        return 2;
    }
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    int rc = is_action ? control(cfg, sub, argv[2], argv[3])
             : is_logs ? logs(cfg, argv[2], argv[3], argc == 5 && !strcmp(argv[4], "--follow"))
                       : list(cfg, "background", sub, json);
    vc_config_destroy(&cfg);
    return rc;
}

int cmd_schedule(cli_t *cli, int argc, char **argv)
{
    int json = argc > 1 && strcmp(argv[1], "--json") == 0;
    argc -= json, argv += json;
    if (argc > 2) {
        fprintf(stderr, "usage: vc schedule [--json] [SITE]\n");
        return 2;
    }
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    int rc = list(cfg, "schedule", argc > 1 ? argv[1] : NULL, json);
    vc_config_destroy(&cfg);
    return rc;
}
