/*
 * vc-acme: certificates for the sites that ask for them (tls = "acme"),
 * from an ACME CA (RFC 8555), renewed when a third of their lifetime is
 * left, installed where every front picks them up within a second.
 *
 * The main thread answers control commands, publishes events and keeps
 * the schedule; one order at a time runs on a thread of its own (an order
 * waits on the CA for seconds to minutes). The schedule is in LMDB
 * (certs.h), so a restart neither forgets a failure's back-off nor orders
 * again what it has.
 */
#include "acme_daemon.h"
#include "cluster.h"
#include "vc_events.h"
#include "acme_order.h"
#include "dns_hook.h"
#include "certs.h"
#include "vc_acme_settings.h"
#include "vc_acme.h"
#include "vc_confstore.h"
#include "vc_daemon.h"
#include "vc_log.h"
#include "vc_loop.h"
#include "vc_proc.h"
#include "vc_store.h"
#include "vc_util.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <time.h>
#include <zmq.h>

static const char *directory_url(const char *d)
{
    if (strcmp(d, "letsencrypt") == 0)
        return "https://acme-v02.api.letsencrypt.org/directory";
    if (strcmp(d, "letsencrypt-staging") == 0)
        return "https://acme-staging-v02.api.letsencrypt.org/directory";
    return d;
}

static int rsa_bits_of(const char *key_type)
{
    if (strncmp(key_type, "rsa", 3) == 0)
        return atoi(key_type + 3);
    return 0;
}

/* ---- the order thread ------------------------------------------------------- */

/* The CA at directory d ("letsencrypt", a URL) with the account the
 * configuration names for it; *key_path is malloc'd. An External Account
 * Binding is acme.directory's. */
static acme_ca_t ca_of(const vc_config_t *cfg, const char *d, const job_t *j, char **key_path)
{
    const acme_settings_t *set = acme_settings(cfg);
    unsigned char md[32];
    const char *dir = directory_url(d);
    crypto_hash_sha256(md, (const unsigned char *)dir, strlen(dir));
    char hex[17];
    sodium_bin2hex(hex, sizeof(hex), md, 8);
    char *acct_dir = vc_asprintf("%s/acme", cfg->data_dir);
    vc_mkdirs(acct_dir, 0700);
    *key_path = vc_asprintf("%s/account-%s.key", acct_dir, hex);
    free(acct_dir);
    int bound = strcmp(dir, directory_url(set->directory)) == 0;
    return (acme_ca_t){
        .directory = dir,
        .ca_bundle = set->ca_bundle[0] ? set->ca_bundle : NULL,
        .email = set->email,
        .account_key_path = *key_path,
        .profile = set->profile,
        .challenge = j->challenge,
        .dns_wait_ms = (long)set->dns_wait_ms,
        .timeout_ms = (long)set->ca_timeout_ms,
        .eab_kid = bound ? set->eab_kid : NULL,
        .eab_hmac_key = bound ? set->eab_hmac_key : NULL,
    };
}

/* The CA that issued the certificate in service (asked for its renewal
 * window, told of its revocation), else the site's. */
static const char *issuing_ca(const vc_config_t *cfg, const job_t *j)
{
    return j->st.directory[0] ? j->st.directory : j->directory[0] ? j->directory : acme_settings(cfg)->directory;
}

/* After a failure: a minute, doubling to six hours, give or take a fifth;
 * longer if the CA's Retry-After asks for longer. */
static int64_t backoff(unsigned failures, long retry_after)
{
    int64_t wait = FIRST_BACKOFF_S;
    for (unsigned i = 1; i < failures && wait < LAST_BACKOFF_S; i++)
        wait *= 2;
    if (wait > LAST_BACKOFF_S)
        wait = LAST_BACKOFF_S;
    wait = wait * (80 + (int64_t)randombytes_uniform(41)) / 100;
    if (retry_after > MAX_RETRY_AFTER_S)
        retry_after = MAX_RETRY_AFTER_S;
    return retry_after > wait ? retry_after : wait;
}

/* One CA after another: the site's (or acme.directory), then
 * acme.fallback in turn, until one issues. 0, or -1 with the last one's
 * error in j->err and out. */
static int order_from_cas(acme_t *a, acme_client_t *cl, const vc_config_t *cfg, job_t *j, const acme_want_t *want,
                          acme_issued_t *out)
{
    const acme_settings_t *set = acme_settings(cfg);
    answers_t answers = {a->store, set->dns_hook, a->d.zctx, cfg};
    int rc = -1;
    for (size_t i = 0; i <= set->nfallback && rc < 0 && !atomic_load(&a->stopping); i++) {
        const char *d = i == 0 ? (j->directory[0] ? j->directory : set->directory) : set->fallback[i - 1];
        if (i > 0) {
            vc_log(VC_LOG_WARN, "order", "\"%s\": %s; trying the next CA, %s", j->site, j->err, d);
            acme_issued_free(out);
        }
        char *key_path;
        acme_ca_t ca = ca_of(cfg, d, j, &key_path);
        /* What the old certificate's CA knows it by, for that CA only. */
        acme_want_t w = *want;
        if (w.replaces && strcmp(ca.directory, directory_url(issuing_ca(cfg, j))) != 0)
            w.replaces = NULL;
        rc = acme_issue(cl, &ca, &w, answers_publish, &answers, out, j->err, sizeof(j->err));
        j->round_trips += out->round_trips;
        if (rc == 0)
            snprintf(j->st.directory, sizeof(j->st.directory), "%s", d);
        free(key_path);
    }
    return rc;
}

static void run_order(acme_t *a, acme_client_t *cl, const vc_config_t *cfg, job_t *j)
{
    char *hosts_copy = vc_strdup(j->hosts);
    const char *hosts[64];
    size_t n = 0;
    for (char *save = NULL, *h = strtok_r(hosts_copy, " ", &save); h && n < 64; h = strtok_r(NULL, " ", &save))
        hosts[n++] = h;
    cert_state_t *st = &j->st;
    acme_want_t want = {
        .hosts = hosts,
        .nhosts = n,
        .rsa_bits = rsa_bits_of(acme_settings(cfg)->key_type),
        .replaces = j->renewal && st->cert_id[0] ? st->cert_id : NULL,
    };
    acme_issued_t out = {.retry_after = -1};
    char issuer_was[sizeof(st->directory)];
    snprintf(issuer_was, sizeof(issuer_was), "%s", st->directory);
    /* An on-demand host is the operator's to approve, each time. */
    j->refused = j->on_demand && on_demand_ask(acme_settings(cfg)->on_demand_ask, j->hosts, j->err, sizeof(j->err)) < 1;
    if (!j->refused && !acme_cluster_may_order(a, cfg, j)) {
        free(hosts_copy);
        return; /* another node's, or not known yet: no failure */
    }
    int rc = j->refused ? -1 : order_from_cas(a, cl, cfg, j, &want, &out);
    if (rc == 0)
        rc = certs_install(cfg->data_dir, j->site, out.cert_pem, out.key_pem, st, j->err, sizeof(j->err));
    int64_t now = (int64_t)time(NULL);
    if (rc == 0) {
        snprintf(st->hosts, sizeof(st->hosts), "%s", j->hosts);
        st->failures = 0;
        st->next_try = 0;
        st->last_error[0] = '\0';
        j->not_after = st->not_after;
    } else if (!atomic_load(&a->stopping)) {
        snprintf(st->directory, sizeof(st->directory), "%s", issuer_was); /* still the one in service */
        st->failures++;
        st->next_try = j->retry_at = now + backoff(st->failures, out.retry_after);
        snprintf(st->last_error, sizeof(st->last_error), "%s", j->err);
        j->rate_limited = strstr(j->err, "urn:ietf:params:acme:error:rateLimited") != NULL;
        j->problem = out.problem;
        out.problem = NULL;
    }
    j->ok = rc == 0;
    acme_cluster_ordered(a, cfg, j, out.cert_pem, out.key_pem);
    acme_issued_free(&out);
    free(hosts_copy);
}

/* The CA's renewal window for the certificate in service (RFC 9773): a
 * new one moves renew_at to a random time inside it (4.2), so that the
 * CA's clients do not all come at once; the same one leaves it. */
static void run_check(acme_client_t *cl, const vc_config_t *cfg, job_t *j)
{
    char *key_path;
    acme_ca_t ca = ca_of(cfg, issuing_ca(cfg, j), j, &key_path);
    cert_state_t *st = &j->st;
    acme_renewal_t w;
    int rc = acme_renewal_info(cl, &ca, st->cert_id, &w, j->err, sizeof(j->err));
    int64_t now = (int64_t)time(NULL), wait = ARI_FAILED_WAIT_S;
    if (rc == 1) {
        wait = ARI_MAX_WAIT_S;
    } else if (rc == 0) {
        wait = w.retry_after < 0 ? ARI_DEFAULT_WAIT_S : w.retry_after;
        wait = wait < ARI_MIN_WAIT_S ? ARI_MIN_WAIT_S : wait > ARI_MAX_WAIT_S ? ARI_MAX_WAIT_S : wait;
        if (w.start != st->window_start || w.end != st->window_end) {
            st->window_start = w.start;
            st->window_end = w.end;
            uint64_t span = (uint64_t)(w.end - w.start);
            st->renew_at = w.start + (int64_t)(span > UINT32_MAX ? randombytes_uniform(UINT32_MAX)
                                                                 : randombytes_uniform((uint32_t)span));
            j->moved = 1;
        }
    }
    st->ari_next = now + wait;
    j->ok = rc >= 0;
    free(key_path);
}

/* The certificate in service revoked; the schedule then orders a new one
 * at once (what is served stays until it comes). */
static void run_revoke(acme_client_t *cl, const vc_config_t *cfg, job_t *j)
{
    char *key_path;
    acme_ca_t ca = ca_of(cfg, issuing_ca(cfg, j), j, &key_path);
    char *path = vc_acme_cert_path(cfg->data_dir, j->site, "crt");
    size_t len;
    char *pem = vc_read_file(path, &len);
    if (pem == NULL)
        snprintf(j->err, sizeof(j->err), "\"%s\" cannot be read", path);
    j->ok = pem && acme_revoke(cl, &ca, pem, j->reason, j->err, sizeof(j->err)) == 0;
    if (j->ok) { /* due at once; a revoked certificate is not one a new order "replaces" (RFC 9773 5) */
        j->st.renew_at = 0;
        j->st.next_try = 0;
        j->st.cert_id[0] = '\0';
    }
    free(pem);
    free(path);
    free(key_path);
}

static void run_job(acme_t *a, acme_client_t *cl, const vc_config_t *cfg, job_t *j)
{
    if (j->kind == JOB_ORDER)
        run_order(a, cl, cfg, j);
    else if (j->kind == JOB_CHECK)
        run_check(cl, cfg, j);
    else
        run_revoke(cl, cfg, j);
    if (j->deferred) { /* the schedule as another node's pair may have left it, asked again soon */
        int64_t next = j->st.next_try;
        certs_state_read(a->store, j->site, &j->st);
        j->st.next_try = next;
    }
    /* A stop abandons an order half-way: its failure is not one to back
     * off from. What did succeed is kept. A host refused before it ever
     * had a certificate is not kept at all (anyone can name hosts). */
    if ((j->ok || !atomic_load(&a->stopping)) && !(j->refused && !j->renewal) &&
        certs_state_write(a->store, j->site, &j->st) < 0)
        vc_log(VC_LOG_ERR, "schedule", "the schedule of \"%s\" could not be written", j->site);
}

static void *order_thread(void *arg)
{
    acme_t *a = arg;
    acme_client_t *cl = acme_client_new(&a->stopping);
    pthread_mutex_lock(&a->mu);
    while (!atomic_load(&a->stopping)) {
        if (a->todo == NULL) {
            pthread_cond_wait(&a->cv, &a->mu);
            continue;
        }
        job_t *j = a->todo;
        a->todo = NULL;
        /* The configuration as it was when the job was made: a reload
         * swaps d.cfg on the main thread, so the job reads its own. */
        char err[512];
        vc_config_t *cfg = vc_confstore_load(a->d.data_dir, err, sizeof(err));
        pthread_mutex_unlock(&a->mu);
        if (cfg) {
            run_job(a, cl, cfg, j);
            vc_config_destroy(&cfg);
        } else { /* tried again in a minute, not at once */
            snprintf(j->err, sizeof(j->err), "%s", err);
            j->retry_at = j->st.next_try = j->st.ari_next = (int64_t)time(NULL) + FIRST_BACKOFF_S;
            certs_state_write(a->store, j->site, &j->st);
        }
        pthread_mutex_lock(&a->mu);
        a->done = j;
    }
    pthread_mutex_unlock(&a->mu);
    acme_client_free(&cl);
    return NULL;
}

/* ---- the main thread ------------------------------------------------------- */

static void job_free(job_t *j)
{
    free(j->site);
    free(j->hosts);
    free(j->challenge);
    free(j->problem);
    free(j->directory);
    free(j);
}

/* A finished check: a log line if it moved the renewal or failed. */
static void report_check(job_t *j)
{
    if (j->moved)
        vc_log(VC_LOG_NOTICE, "ari", "\"%s\": the CA suggests renewing between %lld and %lld (unix time): at %lld",
               j->site, (long long)j->st.window_start, (long long)j->st.window_end, (long long)j->st.renew_at);
    else if (!j->ok)
        vc_log(VC_LOG_WARN, "ari", "\"%s\": no renewal window: %s (asked again in an hour)", j->site, j->err);
}

/* A finished revocation: its event and log line. */
static void report_revoke(acme_t *a, job_t *j)
{
    char reason[16];
    snprintf(reason, sizeof(reason), "%d", j->reason);
    if (j->ok) {
        vc_log(VC_LOG_NOTICE, "revoke", "\"%s\": certificate revoked; ordering a new one", j->site);
        vc_bus_publish(a->d.bus, VC_EVENT(ACME_CERT_REVOKED), VC__SEVERITY__NOTICE, "site", j->site, "reason", reason,
                       NULL);
    } else {
        vc_log(VC_LOG_ERR, "revoke", "\"%s\": the certificate could not be revoked: %s", j->site, j->err);
        vc_bus_publish(a->d.bus, VC_EVENT(ACME_REVOKE_FAILED), VC__SEVERITY__ERROR, "site", j->site, "error", j->err,
                       NULL);
    }
}

/* A finished job: its events and log line. */
static void report(acme_t *a, job_t *j)
{
    if (j->refused && !j->renewal) {
        on_demand_refuse(a->od, a->d.bus, j->hosts, j->err);
        job_free(j);
        return;
    }
    if (j->deferred) {
        vc_log(VC_LOG_INFO, "order", "\"%s\" (%s): not ordered here: %s", j->site, j->hosts, j->err);
        job_free(j);
        return;
    }
    if (j->on_demand && !j->renewal && j->kind == JOB_ORDER)
        on_demand_take(a->od);
    if (j->kind != JOB_ORDER) {
        if (j->kind == JOB_CHECK)
            report_check(j);
        else
            report_revoke(a, j);
        job_free(j);
        return;
    }
    char na[24];
    snprintf(na, sizeof(na), "%lld", (long long)j->not_after);
    char rt[16];
    snprintf(rt, sizeof(rt), "%u", j->round_trips);
    if (j->ok) {
        a->issued++;
        vc_log(VC_LOG_NOTICE, "order", "\"%s\" (%s): certificate %s, %s round trips", j->site, j->hosts,
               j->renewal ? "renewed" : "issued", rt);
        vc_bus_publish(a->d.bus, j->renewal ? VC_EVENT(ACME_CERT_RENEWED) : VC_EVENT(ACME_CERT_ISSUED),
                       VC__SEVERITY__NOTICE, "site", j->site, "hosts", j->hosts, "challenge", j->challenge, "not_after",
                       na, "round_trips", rt, NULL);
    } else {
        a->failed++;
        char at[24];
        snprintf(at, sizeof(at), "%lld", (long long)j->retry_at);
        vc_log(VC_LOG_ERR, "order", "\"%s\" (%s): %s; %s again at %s (unix time)", j->site, j->hosts, j->err,
               j->rate_limited ? "rate-limited by the CA: ordered" : "ordered", at);
        vc_bus_publish(a->d.bus, VC_EVENT(ACME_CERT_FAILED), VC__SEVERITY__ERROR, "site", j->site, "hosts", j->hosts,
                       "error", j->err, "retry_at", at, "rate_limited", j->rate_limited ? "yes" : "no", "problem",
                       j->problem ? j->problem : "", NULL);
    }
    job_free(j);
}

static int cert_files_there(const char *data_dir, const char *site)
{
    char *c = vc_acme_cert_path(data_dir, site, "crt"), *k = vc_acme_cert_path(data_dir, site, "key");
    struct stat sc, sk;
    int there = stat(c, &sc) == 0 && stat(k, &sk) == 0;
    free(c);
    free(k);
    return there;
}

static int busy_now(acme_t *a)
{
    pthread_mutex_lock(&a->mu);
    int busy = a->busy;
    pthread_mutex_unlock(&a->mu);
    return busy;
}

static void submit(acme_t *a, job_t *j)
{
    pthread_mutex_lock(&a->mu);
    a->todo = j;
    a->busy = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* A job for the certificate name (a site's, or an on-demand host's
 * under the default site s, which answers HTTP-01 or TLS-ALPN-01). */
static job_t *job_new(job_kind_t kind, const vc_site_t *s, const char *name, int on_demand, char *hosts,
                      const cert_state_t *st)
{
    job_t *j = vc_calloc(1, sizeof(*j));
    j->kind = kind;
    j->site = vc_strdup(name);
    j->hosts = hosts;
    const char *ch = s->acme_challenge ? s->acme_challenge : "http-01";
    j->challenge = vc_strdup(on_demand && strcmp(ch, "tls-alpn-01") != 0 ? "http-01" : ch);
    j->directory = vc_strdup(s->acme_directory ? s->acme_directory : "");
    j->on_demand = on_demand;
    j->st = *st;
    return j;
}

/* A key and certificate that do not agree (a kill between the two
 * writes): the schedule is told to order again at once. Once, at start. */
static void check_pairs(acme_t *a)
{
    const vc_config_t *cfg = a->d.cfg;
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        cert_state_t st;
        if (s->tls == NULL || certs_state_read(a->store, s->name, &st) < 0 || st.not_after == 0 ||
            certs_pair_agrees(cfg->data_dir, s->name))
            continue;
        vc_log(VC_LOG_WARN, "schedule", "\"%s\": its key and certificate do not agree: ordering again", s->name);
        st.not_after = 0;
        st.next_try = 0;
        certs_state_write(a->store, s->name, &st);
    }
}

/* One certificate's turn (a site's, or an on-demand host's): an order if
 * it is due or forced, else a question for its renewal window if that is
 * due. 1 if a job went to the order thread, which then owns hosts. */
static int consider(acme_t *a, const vc_site_t *s, const char *name, int on_demand, char *hosts, int64_t now)
{
    const vc_config_t *cfg = a->d.cfg;
    cert_state_t st;
    int known = certs_state_read(a->store, name, &st) == 0;
    int forced = a->forced && strcmp(a->forced, name) == 0;
    int have = known && st.not_after > 0 && cert_files_there(cfg->data_dir, name);
    int due = forced || !have || strcmp(st.hosts, hosts) != 0 || now >= st.renew_at;
    if (due && (forced || !known || now >= st.next_try)) {
        if (forced) {
            free(a->forced);
            a->forced = NULL;
        }
        job_t *j = job_new(JOB_ORDER, s, name, on_demand, hosts, &st);
        j->renewal = have;
        vc_log(VC_LOG_INFO, "order", "\"%s\" (%s): ordering a certificate%s", name, hosts,
               have        ? " (renewal)"
               : on_demand ? " (on demand)"
                           : "");
        vc_bus_publish(a->d.bus, VC_EVENT(ACME_ORDER_STARTED), VC__SEVERITY__INFO, "site", name, "hosts", hosts, NULL);
        submit(a, j);
        return 1;
    }
    if (!due && st.cert_id[0] && now >= st.ari_next) {
        submit(a, job_new(JOB_CHECK, s, name, on_demand, hosts, &st));
        return 1;
    }
    free(hosts);
    return 0;
}

static int on_demand_known(void *arg, const char *host)
{
    acme_t *a = arg;
    char *name = vc_asprintf(VC_ACME_ON_DEMAND_PREFIX "%s", host);
    cert_state_t st;
    int known = certs_state_read(a->store, name, &st) == 0;
    free(name);
    return known;
}

/* The on-demand hosts the schedule has (renewed as sites are, each
 * approved by the ask URL again), then a new one a front wants. Each
 * turn reads every host's schedule: fine for thousands, not millions. */
static void schedule_on_demand(acme_t *a, const vc_site_t *s, int64_t now)
{
    char **names;
    size_t n = certs_names(a->store, VC_ACME_ON_DEMAND_PREFIX, &names);
    int submitted = 0;
    for (size_t i = 0; i < n && !submitted; i++)
        submitted = consider(a, s, names[i], 1, vc_strdup(names[i] + strlen(VC_ACME_ON_DEMAND_PREFIX)), now);
    certs_names_free(names, n);
    char *host = submitted
                     ? NULL
                     : on_demand_next(a->od, a->d.bus, acme_settings(a->d.cfg)->on_demand_per_hour, on_demand_known, a);
    if (host) {
        char *name = vc_asprintf(VC_ACME_ON_DEMAND_PREFIX "%s", host);
        consider(a, s, name, 1, host, now);
        free(name);
    }
}

/* The first site whose certificate is due, or whose renewal window is to
 * be asked for, to the order thread. */
static void schedule(acme_t *a)
{
    pthread_mutex_lock(&a->mu);
    if (a->done) {
        job_t *j = a->done;
        a->done = NULL;
        a->busy = 0;
        pthread_mutex_unlock(&a->mu);
        report(a, j);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    if (busy_now(a))
        return;
    int64_t now = (int64_t)time(NULL);
    const vc_config_t *cfg = a->d.cfg;
    for (size_t i = 0; a->revoking && i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        cert_state_t st;
        if (s->tls == NULL || strcmp(s->name, a->revoking) != 0 || certs_state_read(a->store, s->name, &st) < 0)
            continue;
        job_t *j = job_new(JOB_REVOKE, s, s->name, 0, acme_site_hosts(s), &st);
        j->reason = a->revoke_reason;
        submit(a, j);
        break;
    }
    free(a->revoking);
    a->revoking = NULL;
    if (busy_now(a))
        return;
    const vc_site_t *on_demand_site = NULL;
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (s->acme_on_demand)
            on_demand_site = s;
        if (s->tls && consider(a, s, s->name, 0, acme_site_hosts(s), now))
            return;
    }
    if (on_demand_site)
        schedule_on_demand(a, on_demand_site, now);
}

static void schedule_now(void *arg)
{
    schedule(arg);
}

static void on_demand_ready(void *arg)
{
    acme_t *a = arg;
    on_demand_read(a->od);
}

int main(int argc, char **argv)
{
    acme_t a = {0};
    vc_daemon_load(&a.d, "vc-acme", argc, argv);
    char err[512] = "";
    a.store = vc_store_open(a.d.cfg->state_dir, (size_t)a.d.cfg->store.map_size, err, sizeof(err));
    if (a.store == NULL) {
        vc_log(VC_LOG_CRIT, "main", "%s", err);
        return 1;
    }
    if (sodium_init() < 0)
        return 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* Answers of an order a kill interrupted are of no use to anyone. */
    answers_clear(a.store);
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    vc_daemon_start(&a.d, acme_command, &a);
    char *bus_out = vc_config_endpoint(a.d.cfg, "bus-out");
    a.od = on_demand_new(a.d.zctx, bus_out);
    free(bus_out);
    if (pthread_create(&a.thread, NULL, order_thread, &a) != 0) {
        vc_log(VC_LOG_CRIT, "main", "pthread_create() failed");
        return 1;
    }
    check_pairs(&a);
    vc_daemon_ready(&a.d);
    /* Orders are decided before each wait; a wait lasts at most 500 ms. */
    const vc_watch_t watch[] = {{on_demand_socket(a.od), 0, on_demand_ready}};
    vc_loop_t loop = {.ctl = a.d.ctl,
                      .sigfd = a.d.sigfd,
                      .arg = &a,
                      .watch = watch,
                      .nwatch = on_demand_socket(a.od) ? 1 : 0,
                      .before = schedule_now,
                      .tick_ms = 500};
    vc_loop_run(&loop);
    vc_log(VC_LOG_INFO, "main", "stopping");
    pthread_mutex_lock(&a.mu);
    atomic_store(&a.stopping, 1);
    pthread_cond_signal(&a.cv);
    pthread_mutex_unlock(&a.mu);
    pthread_join(a.thread, NULL);
    if (a.done)
        report(&a, a.done);
    if (a.todo)
        job_free(a.todo);
    free(a.forced);
    free(a.revoking);
    on_demand_free(&a.od);
    vc_daemon_fini(&a.d);
    vc_store_destroy(&a.store);
    curl_global_cleanup();
    return 0;
}
