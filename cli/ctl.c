/*
 * vc status, vc stop, vc reload: clients of the control endpoints.
 */
#include "cli.h"
#include "vc_ctl.h"
#include "vc_proc.h"
#include "vc_util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define CALL_TIMEOUT_MS 3000
/* restart and reload are answered once the daemons they replace are
 * ready: a successor has 15 s (cli/replace.c). */
#define REPLACE_TIMEOUT_MS 30000

static int call(void *zctx, const vc_config_t *cfg, const char *daemon, const char *verb, const char *const *args,
                size_t nargs, Vc__Reply **out)
{
    char *name = vc_asprintf("ctl-%s", daemon);
    char *ep = vc_config_endpoint(cfg, name);
    /* A replacement, or a walk of the whole cache (a purge, a check of a
     * million entries), takes its time. */
    int long_one =
        !strcmp(verb, "restart") || !strcmp(verb, "reload") || !strcmp(verb, "purge") || !strcmp(verb, "check");
    long timeout = long_one ? REPLACE_TIMEOUT_MS : CALL_TIMEOUT_MS;
    int r = vc_ctl_call(zctx, ep, verb, args, nargs, timeout, out);
    free(ep);
    free(name);
    return r;
}

void cli_print_json_fields(Vc__Field *const *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        printf("%s\"", i ? "," : "");
        vc_json_escape(stdout, f[i]->key, strlen(f[i]->key));
        printf("\":\"");
        vc_json_escape(stdout, f[i]->value, strlen(f[i]->value));
        printf("\"");
    }
}

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

/* One round of status: the supervisor's list, then a ping of each daemon.
 * Returns 1 when every daemon is healthy. */
static int status_once(void *zctx, const vc_config_t *cfg, int json, int print)
{
    Vc__Reply *sup = NULL;
    int r = call(zctx, cfg, "vc", "status", NULL, 0, &sup);
    if (r < 0) {
        if (print)
            fprintf(stderr, "vc: the supervisor does not answer: %s\n", vc_strerror(r));
        return 0;
    }
    int healthy = 1;
    if (print && json)
        printf("{\"supervisor\":{");
    if (print && json)
        cli_print_json_fields(sup->fields, sup->n_fields);
    if (print && json)
        printf("},\"daemons\":[");
    const char *sep = vc_reply_get(sup, "separation");
    if (print && !json && sep && strncmp(sep, "none", 4) == 0)
        printf("warning: the sites are not separated from the suite (%s): their scripts can read its keys and "
               "state and stop it; start it as root to keep them apart\n",
               sep + (sep[4] == ':' ? 6 : 4));
    if (print && !json)
        printf("%-10s %8s %-10s %10s %8s %-8s %s\n", "DAEMON", "PID", "STATE", "UPTIME", "RESTARTS", "VERSION",
               "HEALTH");
    for (size_t i = 0; i < sup->n_records; i++) {
        Vc__Record *rec = sup->records[i];
        const char *name = vc_record_get(rec, "daemon");
        const char *state = vc_record_get(rec, "state");
        Vc__Reply *d = NULL;
        int dr = name ? call(zctx, cfg, name, "status", NULL, 0, &d) : -VC_ERR_NOTFOUND;
        const char *health = dr < 0 ? vc_strerror(dr) : or_dash(vc_reply_get(d, "health"));
        int ok = dr == 0 && d->ok && state && !strcmp(state, "running") &&
                 (!vc_reply_get(d, "health") || !strcmp(vc_reply_get(d, "health"), "ok"));
        healthy &= ok;
        if (print && json) {
            printf("%s{", i ? "," : "");
            cli_print_json_fields(rec->fields, rec->n_fields);
            printf(",\"healthy\":%s", ok ? "true" : "false");
            if (d) {
                printf(",\"status\":{");
                cli_print_json_fields(d->fields, d->n_fields);
                printf("},\"workers\":[");
                for (size_t w = 0; w < d->n_records; w++) {
                    printf("%s{", w ? "," : "");
                    cli_print_json_fields(d->records[w]->fields, d->records[w]->n_fields);
                    printf("}");
                }
                printf("]");
            } else {
                printf(",\"error\":\"%s\"", health);
            }
            printf("}");
        } else if (print) {
            const char *up = vc_record_get(rec, "uptime_ms");
            char upbuf[32] = "-";
            if (up)
                snprintf(upbuf, sizeof(upbuf), "%.1fs", atof(up) / 1000.0);
            printf("%-10s %8s %-10s %10s %8s %-8s %s\n", or_dash(name), or_dash(vc_record_get(rec, "pid")),
                   or_dash(state), upbuf, or_dash(vc_record_get(rec, "restarts")),
                   d ? or_dash(vc_reply_get(d, "version")) : "-", health);
            for (size_t w = 0; d && w < d->n_records; w++) {
                printf("  ");
                for (size_t f = 0; f < d->records[w]->n_fields; f++)
                    printf("%s%s=%s", f ? " " : "", d->records[w]->fields[f]->key, d->records[w]->fields[f]->value);
                printf("\n");
            }
        }
        if (d)
            vc__reply__free_unpacked(d, NULL);
    }
    if (print && json)
        printf("],\"healthy\":%s}\n", healthy ? "true" : "false");
    vc__reply__free_unpacked(sup, NULL);
    return healthy && sup != NULL;
}

int cmd_status(cli_t *cli, int argc, char **argv)
{
    int json = 0;
    double wait_s = -1;
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"wait", required_argument, NULL, 'w'}, {NULL, 0, NULL, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'j')
            json = 1;
        else if (c == 'w')
            wait_s = atof(optarg);
        else
            return 2;
    }
    void *zctx = zmq_ctx_new();
    int rc = 1;
    if (wait_s >= 0) {
        /* Poll until healthy: a suite that is still starting is not an
         * error until the time is up. */
        uint64_t deadline = vc_mono_ms() + (uint64_t)(wait_s * 1000);
        char *lock = vc_asprintf("%s/run/vc.lock", cli->data_dir);
        struct timespec since;
        clock_gettime(CLOCK_REALTIME, &since);
        int seen = 0;
        for (;;) {
            vc_config_t *cfg = NULL;
            char *pid = vc_asprintf("%s/run/vc.pid", cli->data_dir);
            if (vc_proc_pidfile_alive(pid) > 0)
                cfg = cli_running_config(cli);
            free(pid);
            int ok = cfg && status_once(zctx, cfg, json, 0);
            if (ok) {
                status_once(zctx, cfg, json, 1);
                vc_config_destroy(&cfg);
                rc = 0;
                break;
            }
            vc_config_destroy(&cfg);
            /* A suite that held its lock while we looked, or took it
             * after we began (its `vc up` sets the lock's time), and no
             * longer holds it has ended: waiting on would only wait out
             * the time. One that ended before we began tells us nothing. */
            struct stat st;
            int held = vc_proc_lock_held(lock);
            if (held == 1 && !seen) {
                fprintf(stderr, "vc status: a suite is starting under %s; waiting up to %.0f s for it\n", cli->data_dir,
                        wait_s);
                fflush(stderr);
                seen = 1;
            }
            int after =
                stat(lock, &st) == 0 && (st.st_mtim.tv_sec > since.tv_sec ||
                                         (st.st_mtim.tv_sec == since.tv_sec && st.st_mtim.tv_nsec > since.tv_nsec));
            if (held == 0 && (seen || after)) {
                fprintf(stderr,
                        "vc status: the suite under %s stopped before it was healthy (vc up exited: see "
                        "its output or log)\n",
                        cli->data_dir);
                break;
            }
            if (vc_mono_ms() >= deadline) {
                fprintf(stderr, "vc status: not healthy after %.1f s\n", wait_s);
                if ((cfg = cli_running_config(cli)) != NULL)
                    status_once(zctx, cfg, json, 1);
                vc_config_destroy(&cfg);
                break;
            }
            usleep(100000);
        }
        free(lock);
    } else {
        vc_config_t *cfg = cli_running_config(cli);
        if (cfg)
            rc = status_once(zctx, cfg, json, 1) ? 0 : 1;
        vc_config_destroy(&cfg);
    }
    zmq_ctx_term(zctx);
    return rc;
}

int cmd_stop(cli_t *cli, int argc, char **argv)
{
    char *pidfile = vc_asprintf("%s/run/vc.pid", cli->data_dir);
    char *lock_path = vc_asprintf("%s/run/vc.lock", cli->data_dir);
    pid_t pid = vc_proc_pidfile_alive(pidfile);
    int held = vc_proc_lock_held(lock_path);
    free(pidfile);
    free(lock_path);
    if (pid > 0 && held != 1) {
        /* The supervisor holds the lock for its life: a live pid without
         * it is some other process that got the number. */
        fprintf(stderr,
                "vc stop: no suite runs under %s; its pid file names pid %d, which is not its supervisor: "
                "not signalled\n",
                cli->data_dir, (int)pid);
        return 1;
    }
    if (pid <= 0) {
        fprintf(stderr, "vc: no suite runs under %s\n", cli->data_dir);
        return 1;
    }
    if (kill(pid, SIGTERM) != 0) {
        perror("vc stop: kill");
        return 1;
    }
    /* Stopped when its lock is free: it goes with the process's last
     * descriptor, so a supervisor that is a zombie waiting for its parent
     * (kill(pid, 0) still succeeds) counts as stopped too. */
    char *lock = vc_asprintf("%s/run/vc.lock", cli->data_dir);
    uint64_t deadline = vc_mono_ms() + 15000;
    while (vc_mono_ms() < deadline) {
        if (kill(pid, 0) != 0 || vc_proc_lock_held(lock) != 1) {
            free(lock);
            printf("stopped\n");
            return 0;
        }
        usleep(50000);
    }
    free(lock);
    fprintf(stderr, "vc stop: the supervisor (pid %d) is still running after 15 s\n", (int)pid);
    return 1;
}

int cmd_ctl(cli_t *cli, const char *daemon, const char *verb, int argc, char **argv)
{
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    void *zctx = zmq_ctx_new();
    Vc__Reply *r = NULL;
    int rc = call(zctx, cfg, daemon, verb, (const char *const *)argv, (size_t)argc, &r);
    int status = 1;
    if (rc < 0) {
        fprintf(stderr, "vc %s: %s does not answer: %s\n", verb, daemon, vc_strerror(rc));
    } else {
        if (r->ok)
            printf("%s\n", r->message);
        else
            fprintf(stderr, "vc %s: %s\n", verb, r->message);
        status = r->ok ? 0 : 1;
        vc__reply__free_unpacked(r, NULL);
    }
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return status;
}

/* A reply as a person reads it: the message, each field, each record on
 * a line; help's records as a table of verbs. */
static void print_reply(const Vc__Reply *r, int help)
{
    printf("%s\n", r->message);
    for (size_t i = 0; i < r->n_fields; i++)
        printf("  %s: %s\n", r->fields[i]->key, r->fields[i]->value);
    for (size_t i = 0; i < r->n_records; i++) {
        const Vc__Record *rec = r->records[i];
        if (help && rec->n_fields == 3) {
            char head[128];
            snprintf(head, sizeof(head), "%s%s%s", rec->fields[0]->value, *rec->fields[1]->value ? " " : "",
                     rec->fields[1]->value);
            printf("  %-28s %s\n", head, rec->fields[2]->value);
            continue;
        }
        for (size_t j = 0; j < rec->n_fields; j++)
            printf("%s%s=%s", j ? " " : "  ", rec->fields[j]->key, rec->fields[j]->value);
        putchar('\n');
    }
}

int cmd_ctl_verb(cli_t *cli, int argc, char **argv)
{
    int json = argc > 1 && strcmp(argv[1], "--json") == 0;
    argc -= json, argv += json;
    if (argc < 2) {
        fprintf(stderr, "usage: vc ctl [--json] DAEMON [VERB [ARG...]] (VERB help: the daemon's verbs)\n");
        return 2;
    }
    /* "front" or "vc-front"; "vc" is the supervisor. */
    char *daemon = strcmp(argv[1], "vc") == 0 || strncmp(argv[1], "vc-", 3) == 0 ? vc_strdup(argv[1])
                                                                                 : vc_asprintf("vc-%s", argv[1]);
    const char *verb = argc > 2 ? argv[2] : "help";
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL) {
        free(daemon);
        return 1;
    }
    void *zctx = zmq_ctx_new();
    Vc__Reply *r = NULL;
    int rc = call(zctx, cfg, daemon, verb, (const char *const *)argv + 3, argc > 3 ? (size_t)argc - 3 : 0, &r);
    int status = 1;
    if (rc < 0) {
        fprintf(stderr, "vc ctl: %s does not answer: %s\n", daemon, vc_strerror(rc));
    } else {
        if (json) {
            printf("{\"ok\":%s,\"message\":\"", r->ok ? "true" : "false");
            vc_json_escape(stdout, r->message, strlen(r->message));
            printf("\",\"fields\":{");
            cli_print_json_fields(r->fields, r->n_fields);
            printf("},\"records\":[");
            for (size_t i = 0; i < r->n_records; i++) {
                printf("%s{", i ? "," : "");
                cli_print_json_fields(r->records[i]->fields, r->records[i]->n_fields);
                printf("}");
            }
            printf("]}\n");
        } else if (r->ok) {
            print_reply(r, strcmp(verb, "help") == 0);
        } else {
            fprintf(stderr, "vc ctl: %s %s: %s\n", daemon, verb, r->message);
        }
        status = r->ok ? 0 : 1;
        vc__reply__free_unpacked(r, NULL);
    }
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    free(daemon);
    return status;
}

int cli_call(void *zctx, const vc_config_t *cfg, const char *daemon, const char *verb, const char *const *args,
             size_t nargs, Vc__Reply **out)
{
    int rc = call(zctx, cfg, daemon, verb, args, nargs, out);
    if (rc < 0)
        fprintf(stderr, "vc %s: %s does not answer: %s\n", verb, daemon, vc_strerror(rc));
    return rc;
}

int cmd_reload(cli_t *cli, int argc, char **argv)
{
    return cmd_ctl(cli, "vc", "reload", 0, NULL);
}

/* "pool":{...},"workers":[...] */
static void print_pool_json(const Vc__Reply *r)
{
    printf("\"pool\":{");
    cli_print_json_fields(r->fields, r->n_fields);
    printf("},\"workers\":[");
    for (size_t w = 0; w < r->n_records; w++) {
        printf("%s{", w ? "," : "");
        cli_print_json_fields(r->records[w]->fields, r->records[w]->n_fields);
        printf("}");
    }
    printf("]");
}

static void print_pool_text(const Vc__Reply *r)
{
    printf("pool %s (user %s, walled by %s): %s workers wanted (%s to %s), %s idle, %s busy, %s queued\n",
           or_dash(vc_reply_get(r, "pool")), or_dash(vc_reply_get(r, "user")), or_dash(vc_reply_get(r, "wall")),
           or_dash(vc_reply_get(r, "workers_wanted")), or_dash(vc_reply_get(r, "workers_min")),
           or_dash(vc_reply_get(r, "workers_max")), or_dash(vc_reply_get(r, "idle")), or_dash(vc_reply_get(r, "busy")),
           or_dash(vc_reply_get(r, "queued")));
    const char *refused = vc_reply_get(r, "wall_refused_writes");
    if (refused && strcmp(refused, "0") != 0)
        printf("  %s writes refused by its wall (the log says where, and the fix: php.writable_dirs)\n", refused);
    printf("%8s %-10s %8s %8s %9s %9s %8s  %s\n", "PID", "STATE", "FRONT", "SERVED", "PSS KiB", "USS KiB", "AGE ms",
           "REQUEST");
    for (size_t w = 0; w < r->n_records; w++) {
        const Vc__Record *rec = r->records[w];
        const char *front = vc_record_get(rec, "front"); /* a pid, "0" if not lent */
        printf("%8s %-10s %8s %8s %9s %9s %8s  %s\n", or_dash(vc_record_get(rec, "pid")),
               or_dash(vc_record_get(rec, "state")), front && strcmp(front, "0") ? front : "-",
               or_dash(vc_record_get(rec, "served")), or_dash(vc_record_get(rec, "pss_kib")),
               or_dash(vc_record_get(rec, "uss_kib")), or_dash(vc_record_get(rec, "age_ms")),
               or_dash(vc_record_get(rec, "uri")));
    }
}

/* Every pool's workers. JSON: the default pool's as "pool" and "workers"
 * (the shape before pools), and every pool's under "pools". */
int cmd_workers(cli_t *cli, int argc, char **argv)
{
    int json = argc > 1 && !strcmp(argv[1], "--json");
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    void *zctx = zmq_ctx_new();
    size_t n = 1 + cfg->npools;
    Vc__Reply **r = vc_calloc(n, sizeof(*r));
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        char *daemon = i ? vc_asprintf("vc-php.%s", cfg->pools[i - 1].name) : vc_strdup("vc-php");
        int rc = call(zctx, cfg, daemon, "workers", NULL, 0, &r[i]);
        if (rc < 0) {
            fprintf(stderr, "vc workers: %s does not answer: %s\n", daemon, vc_strerror(rc));
            r[i] = NULL;
            failed = 1;
        }
        free(daemon);
    }
    if (json && r[0]) {
        printf("{");
        print_pool_json(r[0]);
        printf(",\"pools\":[");
        for (size_t i = 0, k = 0; i < n; i++)
            if (r[i]) {
                printf("%s{", k++ ? "," : "");
                print_pool_json(r[i]);
                printf("}");
            }
        printf("]}\n");
    } else if (!json) {
        for (size_t i = 0; i < n; i++)
            if (r[i]) {
                printf("%s", i ? "\n" : "");
                print_pool_text(r[i]);
            }
    }
    for (size_t i = 0; i < n; i++)
        if (r[i])
            vc__reply__free_unpacked(r[i], NULL);
    free(r);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return failed ? 1 : 0;
}
