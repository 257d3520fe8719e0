/*
 * vc-acme's control commands (vc cert ..., vc reload, vc status): they
 * read the schedule and leave requests for the main loop, which hands
 * them to the order thread in turn.
 */
#include "acme_daemon.h"
#include "cluster.h"
#include "vc_acme.h"
#include "vc_confstore.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

char *acme_site_hosts(const vc_site_t *s)
{
    size_t len = 1;
    for (size_t h = 0; h < s->nhosts; h++)
        len += strlen(s->hosts[h]) + 1;
    char *out = vc_calloc(1, len);
    for (size_t h = 0; h < s->nhosts; h++) {
        if (h)
            strcat(out, " ");
        strcat(out, s->hosts[h]);
    }
    return out;
}

static const vc_site_t *site_named(const vc_config_t *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (s->tls == NULL)
            continue;
        if (strcmp(s->name, name) == 0)
            return s;
        for (size_t h = 0; h < s->nhosts; h++)
            if (strcasecmp(s->hosts[h], name) == 0)
                return s;
    }
    return NULL;
}

static void cert_record(acme_t *a, Vc__Reply *reply, const char *name, const char *hosts)
{
    cert_state_t st;
    certs_state_read(a->store, name, &st);
    Vc__Record *rec = vc_reply_record(reply);
    vc_record_field(rec, "site", "%s", name);
    vc_record_field(rec, "hosts", "%s", hosts);
    vc_record_field(rec, "issuer", "%s", st.issuer);
    vc_record_field(rec, "not_after", "%lld", (long long)st.not_after);
    vc_record_field(rec, "renew_at", "%lld", (long long)st.renew_at);
    vc_record_field(rec, "next_try", "%lld", (long long)st.next_try);
    vc_record_field(rec, "window_start", "%lld", (long long)st.window_start);
    vc_record_field(rec, "window_end", "%lld", (long long)st.window_end);
    vc_record_field(rec, "last_error", "%s", st.last_error);
}

/* The sites' certificates, then the on-demand hosts' ("on-demand/HOST"). */
static void on_certs(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    acme_t *a = arg;
    const vc_config_t *cfg = a->d.cfg;
    size_t n = 0;
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (s->tls == NULL)
            continue;
        char *hosts = acme_site_hosts(s);
        cert_record(a, reply, s->name, hosts);
        free(hosts);
        n++;
    }
    char **names;
    size_t nd = certs_names(a->store, VC_ACME_ON_DEMAND_PREFIX, &names);
    for (size_t i = 0; i < nd; i++)
        cert_record(a, reply, names[i], names[i] + strlen(VC_ACME_ON_DEMAND_PREFIX));
    certs_names_free(names, nd);
    vc_reply_ok(reply, "%zu certificates", n + nd);
}

/* The site a command names (args[0]), with tls = "acme", or NULL and a
 * failure replied. */
static const vc_site_t *named_site(acme_t *a, const Vc__Command *cmd, Vc__Reply *reply)
{
    const vc_site_t *s = cmd->n_args >= 1 ? site_named(a->d.cfg, cmd->args[0]) : NULL;
    if (s == NULL)
        vc_reply_fail(reply, "no site with tls = \"acme\" is named or serves \"%s\"", cmd->n_args ? cmd->args[0] : "");
    return s;
}

/* renew SITE due|force|issue: force orders now; due only if it is due;
 * issue only if the site has no certificate yet (past any back-off). */
static void on_renew(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    acme_t *a = arg;
    const vc_site_t *s = named_site(a, cmd, reply);
    if (s == NULL)
        return;
    const char *mode = cmd->n_args >= 2 ? cmd->args[1] : "due";
    cert_state_t st;
    int have = certs_state_read(a->store, s->name, &st) == 0 && st.not_after > 0;
    if (!strcmp(mode, "issue") && have) {
        vc_reply_fail(reply, "\"%s\" has a certificate until %lld (unix time); vc cert renew --force replaces it",
                      s->name, (long long)st.not_after);
        return;
    }
    if (!strcmp(mode, "due") && have && time(NULL) < st.renew_at) {
        vc_reply_ok(reply, "\"%s\" is not due before %lld (unix time); --force orders it now", s->name,
                    (long long)st.renew_at);
        return;
    }
    free(a->forced);
    a->forced = vc_strdup(s->name);
    vc_reply_ok(reply, "\"%s\" will be ordered next (vc events --follow acme. shows it)", s->name);
}

/* revoke SITE [REASON]: the certificate in service is revoked, and a new
 * one ordered at once. */
static void on_revoke(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    acme_t *a = arg;
    const vc_site_t *s = named_site(a, cmd, reply);
    if (s == NULL)
        return;
    cert_state_t st;
    if (certs_state_read(a->store, s->name, &st) < 0 || st.not_after == 0) {
        vc_reply_fail(reply, "\"%s\" has no certificate to revoke", s->name);
        return;
    }
    char *end = NULL;
    long reason = cmd->n_args >= 2 ? strtol(cmd->args[1], &end, 10) : -1;
    /* RFC 5280 5.3.1's codes; 7 is unused, and a CA refuses most others. */
    if (cmd->n_args >= 2 && (end == cmd->args[1] || *end || reason < 0 || reason > 10 || reason == 7)) {
        vc_reply_fail(reply, "the reason is a CRL reason code: 0 to 10, but not 7 (RFC 5280 5.3.1)");
        return;
    }
    free(a->revoking);
    a->revoking = vc_strdup(s->name);
    a->revoke_reason = (int)reason;
    vc_reply_ok(reply, "\"%s\" will be revoked next, and ordered again (vc events --follow acme. shows it)", s->name);
}

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    acme_t *a = arg;
    pthread_mutex_lock(&a->mu);
    int busy = a->busy;
    pthread_mutex_unlock(&a->mu);
    vc_reply_ok(reply, "vc-acme is running");
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "ordering", "%s", busy ? "yes" : "no");
    vc_reply_field(reply, "issued", "%llu", (unsigned long long)a->issued);
    vc_reply_field(reply, "failed", "%llu", (unsigned long long)a->failed);
    vc_reply_field(reply, "shared_in", "%llu", (unsigned long long)a->shared_in);
}

static void on_reload(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    acme_t *a = arg;
    vc_daemon_reload(&a->d, NULL, NULL, reply);
}

static const vc_verb_t verbs[] = {
    {"status", "", "whether an order runs; certificates issued and failed", on_status},
    {"ping", "", "as status", on_status},
    {"certs", "", "each certificate: hosts, issuer, expiry, next renewal, last error", on_certs},
    {"renew", "SITE|HOST [force|issue]", "order a certificate now", on_renew},
    {"revoke", "SITE|HOST [REASON]", "revoke the certificate in service and order a new one", on_revoke},
    {"reload", "", "take the stored configuration", on_reload},
    {"install", "SITE HOSTS NOT_AFTER CERT KEY ORIGIN", "(vc-mesh) another node's certificate, kept if newer",
     acme_install_verb},
    {"answer", "put|del TYPE NAME [VALUE]", "(vc-mesh) another node's challenge answer", acme_answer_verb},
};

void acme_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
}
