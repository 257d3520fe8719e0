/*
 * vc cert list [--json]: each certificate vc-acme keeps (docs/certificates.md);
 * vc cert renew [--force] SITE|HOST: orders it now. Without --force a
 * certificate that is not due yet is left alone;
 * vc cert issue SITE|HOST: orders one for a site that has none yet, now,
 * past any back-off;
 * vc cert revoke [--reason N] SITE|HOST: revokes the one in service and
 * orders a new one.
 */
#include "cli.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

static int usage(void)
{
    fprintf(stderr, "usage: vc cert list [--json]\n"
                    "       vc cert renew [--force] SITE|HOST\n"
                    "       vc cert issue SITE|HOST\n"
                    "       vc cert revoke [--reason N] SITE|HOST\n");
    return 2;
}

static void when(const char *unix_s, char *out, size_t len)
{
    time_t t = unix_s ? (time_t)strtoll(unix_s, NULL, 10) : 0;
    struct tm tm;
    if (t <= 0 || gmtime_r(&t, &tm) == NULL)
        snprintf(out, len, "-");
    else
        strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int list(void *zctx, const vc_config_t *cfg, int json)
{
    Vc__Reply *r = NULL;
    if (cli_call(zctx, cfg, "vc-acme", "certs", NULL, 0, &r) < 0)
        return 1;
    if (!json)
        printf("%-16s %-32s %-20s %-20s %-20s %s\n", "SITE", "HOSTS", "ISSUER", "NOT AFTER", "NEXT RENEWAL",
               "LAST ERROR");
    for (size_t i = 0; i < r->n_records; i++) {
        const Vc__Record *rec = r->records[i];
        const char *site = vc_record_get(rec, "site"), *hosts = vc_record_get(rec, "hosts");
        const char *issuer = vc_record_get(rec, "issuer"), *err = vc_record_get(rec, "last_error");
        const char *na = vc_record_get(rec, "not_after"), *ra = vc_record_get(rec, "renew_at");
        const char *nt = vc_record_get(rec, "next_try");
        const char *ws = vc_record_get(rec, "window_start"), *we = vc_record_get(rec, "window_end");
        if (json) {
            printf("{\"site\":\"");
            vc_json_escape(stdout, site ? site : "", strlen(site ? site : ""));
            printf("\",\"hosts\":\"");
            vc_json_escape(stdout, hosts ? hosts : "", strlen(hosts ? hosts : ""));
            printf("\",\"issuer\":\"");
            vc_json_escape(stdout, issuer ? issuer : "", strlen(issuer ? issuer : ""));
            printf("\",\"not_after\":%s,\"renew_at\":%s,\"next_try\":%s,\"window_start\":%s,\"window_end\":%s,"
                   "\"last_error\":\"",
                   na ? na : "0", ra ? ra : "0", nt ? nt : "0", ws ? ws : "0", we ? we : "0");
            vc_json_escape(stdout, err ? err : "", strlen(err ? err : ""));
            printf("\"}\n");
            continue;
        }
        char a[32], b[32];
        when(na, a, sizeof(a));
        /* After a failure the next try says when the renewal comes. */
        when(nt && strcmp(nt, "0") ? nt : ra, b, sizeof(b));
        printf("%-16s %-32s %-20s %-20s %-20s %s\n", site ? site : "", hosts ? hosts : "",
               issuer && issuer[0] ? issuer : "-", a, b, err && err[0] ? err : "-");
    }
    vc__reply__free_unpacked(r, NULL);
    return 0;
}

/* What each verb takes: at most one option (one with a value when
 * with_value) and a site name or not. */
typedef struct {
    const char *verb;
    const char *option;
    int with_value, takes_name;
} cert_verb_t;

static const cert_verb_t cert_verbs[] = {
    {"list", "--json", 0, 0},
    {"renew", "--force", 0, 1},
    {"issue", NULL, 0, 1},
    {"revoke", "--reason", 1, 1},
};

/* Asks vc-acme to renew, issue or revoke name; prints its answer. */
static int ask_acme(void *zctx, vc_config_t *cfg, const char *verb, const char *name, const char *option,
                    const char *value)
{
    int revoke = !strcmp(verb, "revoke");
    const char *renew_args[] = {name, option ? "force" : !strcmp(verb, "issue") ? "issue" : "due"};
    const char *revoke_args[] = {name, value};
    Vc__Reply *r = NULL;
    int rc = cli_call(zctx, cfg, "vc-acme", revoke ? "revoke" : "renew", revoke ? revoke_args : renew_args,
                      revoke && value == NULL ? 1 : 2, &r) < 0;
    if (r) {
        fprintf(r->ok ? stdout : stderr, "%s\n", r->message);
        rc = !r->ok;
        vc__reply__free_unpacked(r, NULL);
    }
    return rc;
}

int cmd_cert(cli_t *cli, int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const cert_verb_t *v = NULL;
    for (size_t i = 0; i < VC_ARRAY_SIZE(cert_verbs) && v == NULL; i++)
        if (!strcmp(argv[1], cert_verbs[i].verb))
            v = &cert_verbs[i];
    if (v == NULL)
        return usage();
    const char *name = NULL, *option = NULL, *value = NULL;
    for (int i = 2; i < argc; i++) {
        if (v->option && !strcmp(argv[i], v->option) && option == NULL && (!v->with_value || i + 1 < argc)) {
            option = argv[i];
            if (v->with_value)
                value = argv[++i];
        } else if (argv[i][0] != '-' && name == NULL && v->takes_name) {
            name = argv[i];
        } else {
            return usage();
        }
    }
    if (v->takes_name && name == NULL)
        return usage();
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    void *zctx = zmq_ctx_new();
    int rc = v->takes_name ? ask_acme(zctx, cfg, v->verb, name, option, value) : list(zctx, cfg, option != NULL);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return rc;
}
