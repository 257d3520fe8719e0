/*
 * vc events: the journal (--since) and the live stream of the bus.
 */
#include "cli.h"
#include "event.pb-c.h"
#include "vc_bus.h"
#include "vc_events.h"
#include "vc_zmq.h"
#include "vc_store.h"
#include "vc_util.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct opts {
    int json;
    const char *prefix;
} opts_t;

static void print_event(const opts_t *o, const Vc__Envelope *e)
{
    if (o->prefix && strncmp(e->topic, o->prefix, strlen(o->prefix)) != 0)
        return;
    time_t sec = (time_t)(e->time_us / 1000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char when[40];
    size_t w = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + w, sizeof(when) - w, ".%03uZ", (unsigned)(e->time_us / 1000 % 1000));
    if (o->json) {
        printf("{\"time\":\"%s\",\"topic\":\"", when);
        vc_json_escape(stdout, e->topic, strlen(e->topic));
        printf("\",\"source\":\"");
        vc_json_escape(stdout, e->source, strlen(e->source));
        printf("\",\"pid\":%u,\"severity\":\"%s\",\"fields\":{", e->pid, vc_bus_severity_name(e->severity));
        for (size_t i = 0; i < e->n_fields; i++) {
            printf("%s\"", i ? "," : "");
            vc_json_escape(stdout, e->fields[i]->key, strlen(e->fields[i]->key));
            printf("\":\"");
            vc_json_escape(stdout, e->fields[i]->value, strlen(e->fields[i]->value));
            printf("\"");
        }
        printf("}}\n");
    } else {
        printf("%s %-8s %-24s %s[%u]", when, vc_bus_severity_name(e->severity), e->topic, e->source, e->pid);
        for (size_t i = 0; i < e->n_fields; i++)
            printf(" %s=%s", e->fields[i]->key, e->fields[i]->value);
        printf("\n");
    }
    fflush(stdout);
}

struct since_ctx {
    const opts_t *o;
    uint64_t from_us;
    size_t printed;
};

static int journal_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    struct since_ctx *c = arg;
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, dbi, &cur) != 0)
        return -VC_ERR_STORE;
    unsigned char key[12] = {0};
    vc_store_u64_key(c->from_us, key);
    MDB_val k = {sizeof(key), key}, v;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        /* v points into the map: unpacking copies it out. */
        Vc__Envelope *e = vc__envelope__unpack(NULL, v.mv_size, v.mv_data);
        if (e) {
            print_event(c->o, e);
            c->printed++;
            vc__envelope__free_unpacked(e, NULL);
        }
    }
    mdb_cursor_close(cur);
    return 0;
}

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* --list: every topic of the table (libcommon/vc_events.h), no suite needed. */
static int list_events(int json)
{
    for (size_t i = 0; i < VC_EV_COUNT; i++) {
        const vc_event_def_t *e = &vc_event_defs[i];
        if (!json) {
            printf("%-26s %s\n%-26s fields: %s\n", e->topic, e->when, "", e->fields);
            continue;
        }
        printf("{\"topic\":\"");
        vc_json_escape(stdout, e->topic, strlen(e->topic));
        printf("\",\"fields\":\"");
        vc_json_escape(stdout, e->fields, strlen(e->fields));
        printf("\",\"when\":\"");
        vc_json_escape(stdout, e->when, strlen(e->when));
        printf("\"}\n");
    }
    return 0;
}

int cmd_events(cli_t *cli, int argc, char **argv)
{
    opts_t o = {0};
    int list = 0;
    const char *since = NULL;
    int follow = 0;
    double limit_s = -1;
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},   {"since", required_argument, NULL, 's'},
                                         {"follow", no_argument, NULL, 'f'}, {"for", required_argument, NULL, 't'},
                                         {"list", no_argument, NULL, 'l'},   {NULL, 0, NULL, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "f", opts, NULL)) != -1;) {
        switch (c) {
        case 'j': o.json = 1; break;
        case 's': since = optarg; break;
        case 'f': follow = 1; break;
        case 't': limit_s = atof(optarg); break;
        case 'l': list = 1; break;
        default:
            fprintf(stderr, "usage: vc events [--json] [--since DURATION] [--follow] [--for SECONDS] [TOPIC-PREFIX]\n"
                            "       vc events --list [--json]\n");
            return 2;
        }
    }
    if (list)
        return list_events(o.json);
    if (optind < argc)
        o.prefix = argv[optind];
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    int rc = 0;
    void *zctx = zmq_ctx_new();
    void *sub = NULL;
    if (since == NULL || follow) {
        /* Subscribe before reading the journal so nothing falls between. */
        char *ep = vc_config_endpoint(cfg, "bus-out");
        sub = vc_socket(zctx, ZMQ_SUB, ep, 0);
        free(ep);
        if (sub) {
            zmq_setsockopt(sub, ZMQ_SUBSCRIBE, o.prefix ? o.prefix : "", o.prefix ? strlen(o.prefix) : 0);
            zmq_setsockopt(sub, ZMQ_SUBSCRIBE, VC_BUS_WELCOME, strlen(VC_BUS_WELCOME));
        }
    }
    if (since) {
        int64_t ms = vc_parse_duration_ms(since);
        if (ms < 0) {
            fprintf(stderr, "vc events: --since \"%s\" is not a duration like 30s, 5m, 2h\n", since);
            rc = 2;
            goto out;
        }
        char err[512];
        vc_store_t *st = vc_store_open(cfg->state_dir, (size_t)cfg->store.map_size, err, sizeof(err));
        if (st == NULL) {
            fprintf(stderr, "vc events: %s\n", err);
            rc = 1;
            goto out;
        }
        struct since_ctx c = {&o, vc_now_us() - (uint64_t)ms * 1000, 0};
        vc_store_read(st, VC_DB_EVENTS, journal_fn, &c);
        vc_store_destroy(&st);
    }
    if (sub) {
        signal(SIGINT, on_sigint);
        signal(SIGTERM, on_sigint);
        uint64_t end = limit_s >= 0 ? vc_mono_ms() + (uint64_t)(limit_s * 1000) : 0;
        vc_zparts_t fr = {0};
        while (!interrupted && (end == 0 || vc_mono_ms() < end)) {
            if (vc_wait_readable(sub, 200) <= 0)
                continue;
            int n = vc_zparts_recv(sub, &fr, ZMQ_DONTWAIT);
            if (n == 1 && zmq_msg_size(&fr.f[0]) == strlen(VC_BUS_WELCOME) &&
                memcmp(zmq_msg_data(&fr.f[0]), VC_BUS_WELCOME, strlen(VC_BUS_WELCOME)) == 0) {
                /* Linked to the bus: what happens from now on is shown. */
                fprintf(stderr, "vc events: following the bus\n");
            } else if (n == 2) {
                Vc__Envelope *e = vc__envelope__unpack(NULL, zmq_msg_size(&fr.f[1]), zmq_msg_data(&fr.f[1]));
                if (e) {
                    print_event(&o, e);
                    vc__envelope__free_unpacked(e, NULL);
                }
            }
            vc_zparts_close(&fr);
        }
        vc_zparts_fini(&fr);
    }
out:
    if (sub)
        zmq_close(sub);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return rc;
}
