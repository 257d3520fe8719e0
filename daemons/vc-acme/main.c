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
#include "acme_order.h"
#include "certs.h"
#include "settings.h"
#include "vc_acme.h"
#include "vc_confstore.h"
#include "vc_daemon.h"
#include "vc_log.h"
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

/* After a failure: a minute, doubling to six hours, give or take a fifth. */
#define FIRST_BACKOFF_S 60
#define LAST_BACKOFF_S (6 * 3600)

/* ARI (RFC 9773): the CA's window is asked for again when its
 * Retry-After says, within a minute and a day; six hours if it does not
 * say; an hour after a failure; a day if the CA offers no ARI. */
#define ARI_MIN_WAIT_S 60
#define ARI_MAX_WAIT_S 86400
#define ARI_DEFAULT_WAIT_S (6 * 3600)
#define ARI_FAILED_WAIT_S 3600
/* A Retry-After longer than a week is not believed. */
#define MAX_RETRY_AFTER_S (7 * 86400)

typedef enum { JOB_ORDER, JOB_CHECK } job_kind_t;

typedef struct job {
    job_kind_t kind;    /* an order, or a question for the renewal window */
    char *site, *hosts; /* hosts: space-separated */
    char *challenge;    /* "http-01" or "tls-alpn-01" */
    int renewal;        /* it had a certificate */
    int ok;             /* the result */
    char err[1024];
    unsigned round_trips;
    int64_t not_after;
    char *problem;    /* a failed order: the CA's problem document */
    int64_t retry_at; /* a failed order: when it is tried again */
    int rate_limited; /* the CA said rateLimited */
    int moved;        /* a check: the window changed, and with it renew_at */
    cert_state_t st;  /* the schedule as the job left it */
} job_t;

typedef struct acme {
    vc_daemon_t d;
    vc_store_t *store;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job_t *todo, *done; /* one at a time */
    int busy;
    atomic_int stopping;
    char *forced; /* a site `vc cert renew --force` named */
    uint64_t issued, failed;
} acme_t;

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

/* ---- challenge answers, read by the fronts ----------------------------------- */

typedef struct answer {
    const char *name, *value;
} answer_t;

static int answer_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    const answer_t *a = arg;
    MDB_val k = {strlen(a->name), (void *)a->name};
    if (a->value) {
        MDB_val v = {strlen(a->value), (void *)a->value};
        return vc_store_err(mdb_put(txn, dbi, &k, &v, 0));
    }
    int rc = mdb_del(txn, dbi, &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : vc_store_err(rc);
}

static int publish(void *arg, const char *type, const char *name, const char *value, int put)
{
    answer_t a = {name, put ? value : NULL};
    const char *db = strcmp(type, "tls-alpn-01") == 0 ? VC_DB_ACME_ALPN : VC_DB_ACME_HTTP01;
    return vc_store_write(arg, db, answer_fn, &a) < 0 ? -1 : 0;
}

static int clear_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    (void)arg;
    return vc_store_err(mdb_drop(txn, dbi, 0));
}

/* ---- the order thread ------------------------------------------------------- */

/* The CA and account the configuration names; *key_path is malloc'd. */
static acme_ca_t ca_of(const vc_config_t *cfg, const job_t *j, char **key_path)
{
    const acme_settings_t *set = acme_settings(cfg);
    unsigned char md[32];
    const char *dir = directory_url(set->directory);
    crypto_hash_sha256(md, (const unsigned char *)dir, strlen(dir));
    char hex[17];
    sodium_bin2hex(hex, sizeof(hex), md, 8);
    char *acct_dir = vc_asprintf("%s/acme", cfg->data_dir);
    vc_mkdirs(acct_dir, 0700);
    *key_path = vc_asprintf("%s/account-%s.key", acct_dir, hex);
    free(acct_dir);
    return (acme_ca_t){
        .directory = dir,
        .ca_bundle = set->ca_bundle[0] ? set->ca_bundle : NULL,
        .email = set->email,
        .account_key_path = *key_path,
        .profile = set->profile,
        .challenge = j->challenge,
    };
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

static void run_order(acme_t *a, acme_client_t *cl, const vc_config_t *cfg, job_t *j)
{
    char *key_path;
    acme_ca_t ca = ca_of(cfg, j, &key_path);
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
    acme_issued_t out;
    int rc = acme_issue(cl, &ca, &want, publish, a->store, &out, j->err, sizeof(j->err));
    j->round_trips = out.round_trips;
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
        st->failures++;
        st->next_try = j->retry_at = now + backoff(st->failures, out.retry_after);
        snprintf(st->last_error, sizeof(st->last_error), "%s", j->err);
        j->rate_limited = strstr(j->err, "urn:ietf:params:acme:error:rateLimited") != NULL;
        j->problem = out.problem;
        out.problem = NULL;
    }
    acme_issued_free(&out);
    j->ok = rc == 0;
    free(hosts_copy);
    free(key_path);
}

/* The CA's renewal window for the certificate in service (RFC 9773): a
 * new one moves renew_at to a random time inside it (4.2), so that the
 * CA's clients do not all come at once; the same one leaves it. */
static void run_check(acme_client_t *cl, const vc_config_t *cfg, job_t *j)
{
    char *key_path;
    acme_ca_t ca = ca_of(cfg, j, &key_path);
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

static void run_job(acme_t *a, acme_client_t *cl, const vc_config_t *cfg, job_t *j)
{
    if (j->kind == JOB_ORDER)
        run_order(a, cl, cfg, j);
    else
        run_check(cl, cfg, j);
    /* A stop abandons an order half-way: its failure is not one to back
     * off from. What did succeed is kept. */
    if ((j->ok || !atomic_load(&a->stopping)) && certs_state_write(a->store, j->site, &j->st) < 0)
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

static char *hosts_of(const vc_site_t *s)
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

static void job_free(job_t *j)
{
    free(j->site);
    free(j->hosts);
    free(j->challenge);
    free(j->problem);
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

/* A finished order: its events and log line. */
static void report(acme_t *a, job_t *j)
{
    if (j->kind == JOB_CHECK) {
        report_check(j);
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
        vc_bus_publish(a->d.bus, j->renewal ? "acme.cert.renewed" : "acme.cert.issued", VC__SEVERITY__NOTICE, "site",
                       j->site, "hosts", j->hosts, "challenge", j->challenge, "not_after", na, "round_trips", rt, NULL);
    } else {
        a->failed++;
        char at[24];
        snprintf(at, sizeof(at), "%lld", (long long)j->retry_at);
        vc_log(VC_LOG_ERR, "order", "\"%s\" (%s): %s; %s again at %s (unix time)", j->site, j->hosts, j->err,
               j->rate_limited ? "rate-limited by the CA: ordered" : "ordered", at);
        vc_bus_publish(a->d.bus, "acme.cert.failed", VC__SEVERITY__ERROR, "site", j->site, "hosts", j->hosts, "error",
                       j->err, "retry_at", at, "rate_limited", j->rate_limited ? "yes" : "no", "problem",
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

static void submit(acme_t *a, job_t *j)
{
    pthread_mutex_lock(&a->mu);
    a->todo = j;
    a->busy = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static job_t *job_new(job_kind_t kind, const vc_site_t *s, char *hosts, const cert_state_t *st)
{
    job_t *j = vc_calloc(1, sizeof(*j));
    j->kind = kind;
    j->site = vc_strdup(s->name);
    j->hosts = hosts;
    j->challenge = vc_strdup(s->acme_challenge ? s->acme_challenge : "http-01");
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
    int busy = a->busy;
    pthread_mutex_unlock(&a->mu);
    if (busy)
        return;
    int64_t now = (int64_t)time(NULL);
    const vc_config_t *cfg = a->d.cfg;
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (s->tls == NULL)
            continue;
        cert_state_t st;
        int known = certs_state_read(a->store, s->name, &st) == 0;
        char *hosts = hosts_of(s);
        int forced = a->forced && strcmp(a->forced, s->name) == 0;
        int have = known && st.not_after > 0 && cert_files_there(cfg->data_dir, s->name);
        int due = forced || !have || strcmp(st.hosts, hosts) != 0 || now >= st.renew_at;
        if (due && (forced || !known || now >= st.next_try)) {
            if (forced) {
                free(a->forced);
                a->forced = NULL;
            }
            job_t *j = job_new(JOB_ORDER, s, hosts, &st);
            j->renewal = have;
            vc_log(VC_LOG_INFO, "order", "\"%s\" (%s): ordering a certificate%s", s->name, hosts,
                   have ? " (renewal)" : "");
            vc_bus_publish(a->d.bus, "acme.order.started", VC__SEVERITY__INFO, "site", s->name, "hosts", hosts, NULL);
            submit(a, j);
            return;
        }
        if (!due && st.cert_id[0] && now >= st.ari_next) {
            submit(a, job_new(JOB_CHECK, s, hosts, &st));
            return;
        }
        free(hosts);
    }
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

static void on_certs(acme_t *a, Vc__Reply *reply)
{
    const vc_config_t *cfg = a->d.cfg;
    size_t n = 0;
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (s->tls == NULL)
            continue;
        cert_state_t st;
        certs_state_read(a->store, s->name, &st);
        char *hosts = hosts_of(s);
        Vc__Record *rec = vc_reply_record(reply);
        vc_record_field(rec, "site", "%s", s->name);
        vc_record_field(rec, "hosts", "%s", hosts);
        vc_record_field(rec, "issuer", "%s", st.issuer);
        vc_record_field(rec, "not_after", "%lld", (long long)st.not_after);
        vc_record_field(rec, "renew_at", "%lld", (long long)st.renew_at);
        vc_record_field(rec, "next_try", "%lld", (long long)st.next_try);
        vc_record_field(rec, "window_start", "%lld", (long long)st.window_start);
        vc_record_field(rec, "window_end", "%lld", (long long)st.window_end);
        vc_record_field(rec, "last_error", "%s", st.last_error);
        free(hosts);
        n++;
    }
    vc_reply_ok(reply, "%zu certificates", n);
}

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    acme_t *a = arg;
    if (!strcmp(cmd->verb, "status") || !strcmp(cmd->verb, "ping")) {
        pthread_mutex_lock(&a->mu);
        int busy = a->busy;
        pthread_mutex_unlock(&a->mu);
        vc_reply_ok(reply, "vc-acme is running");
        vc_reply_field(reply, "health", "ok");
        vc_reply_field(reply, "ordering", "%s", busy ? "yes" : "no");
        vc_reply_field(reply, "issued", "%llu", (unsigned long long)a->issued);
        vc_reply_field(reply, "failed", "%llu", (unsigned long long)a->failed);
    } else if (!strcmp(cmd->verb, "certs")) {
        on_certs(a, reply);
    } else if (!strcmp(cmd->verb, "renew")) {
        const vc_site_t *s = cmd->n_args >= 1 ? site_named(a->d.cfg, cmd->args[0]) : NULL;
        if (s == NULL) {
            vc_reply_fail(reply, "no site with tls = \"acme\" is named or serves \"%s\"",
                          cmd->n_args ? cmd->args[0] : "");
            return;
        }
        if (cmd->n_args < 2 || strcmp(cmd->args[1], "force") != 0) {
            cert_state_t st;
            if (certs_state_read(a->store, s->name, &st) == 0 && st.not_after > 0 && time(NULL) < st.renew_at) {
                vc_reply_ok(reply, "\"%s\" is not due before %lld (unix time); --force orders it now", s->name,
                            (long long)st.renew_at);
                return;
            }
        }
        free(a->forced);
        a->forced = vc_strdup(s->name);
        vc_reply_ok(reply, "\"%s\" will be ordered next (vc events --follow acme. shows it)", s->name);
    } else if (!strcmp(cmd->verb, "reload")) {
        char err[512];
        vc_config_t *cfg = vc_confstore_load(a->d.data_dir, err, sizeof(err));
        if (cfg == NULL) {
            vc_reply_fail(reply, "%s", err);
            return;
        }
        vc_config_destroy(&a->d.cfg);
        a->d.cfg = cfg;
        vc_reply_ok(reply, "reloaded");
    }
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
    vc_store_write(a.store, VC_DB_ACME_HTTP01, clear_fn, NULL);
    vc_store_write(a.store, VC_DB_ACME_ALPN, clear_fn, NULL);
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    vc_daemon_start(&a.d, on_command, &a);
    if (pthread_create(&a.thread, NULL, order_thread, &a) != 0) {
        vc_log(VC_LOG_CRIT, "main", "pthread_create() failed");
        return 1;
    }
    check_pairs(&a);
    vc_daemon_ready(&a.d);
    for (int running = 1; running;) {
        schedule(&a);
        zmq_pollitem_t items[] = {
            {vc_ctl_socket(a.d.ctl), 0, ZMQ_POLLIN, 0},
            {NULL, a.d.sigfd, ZMQ_POLLIN, 0},
        };
        int n = zmq_poll(items, 2, 500);
        if (n < 0 && errno != EINTR)
            break;
        if (items[0].revents & ZMQ_POLLIN)
            vc_ctl_handle(a.d.ctl);
        if (items[1].revents & ZMQ_POLLIN)
            for (int sig; (sig = vc_proc_read_signal(a.d.sigfd)) != 0;)
                if (sig == SIGTERM || sig == SIGINT || sig == SIGQUIT)
                    running = 0;
    }
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
    vc_daemon_fini(&a.d);
    vc_store_destroy(&a.store);
    curl_global_cleanup();
    return 0;
}
