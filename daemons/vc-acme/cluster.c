#include "cluster.h"
#include "dns_hook.h"
#include "vc_acme.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_mesh.h"
#include "vc_store.h"
#include "vc_util.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

/* vc-mesh answers from its loop; an answer's verb waits for the other
 * nodes (5 s at most, daemons/vc-mesh/certs_shared.c). */
#define MESH_TIMEOUT_MS 8000
/* How long the CA waits for every node to have an answer, asked this often. */
#define ANSWER_WAIT_MS 5000
#define ANSWER_POLL_MS 10
#define ANSWER_RESEND_MS 1000
/* Asked again this soon when another node orders, or vc-mesh cannot say. */
#define DEFER_S 5
/* Cut off from the cluster, a node orders alone only when its own
 * certificate has less than this part of its life left. */
#define ALONE_FRACTION 10

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

/* This node's store: value NULL withdraws. 0, or -1 with err. */
static int answer_store(vc_store_t *st, const char *type, const char *name, const char *value, char *err, size_t errlen)
{
    answer_t a = {name, value};
    const char *db = strcmp(type, "tls-alpn-01") == 0 ? VC_DB_ACME_ALPN : VC_DB_ACME_HTTP01;
    int rc = vc_store_write(st, db, answer_fn, &a);
    if (rc < 0)
        snprintf(err, errlen, "the state store: %s", vc_strerror(rc));
    return rc < 0 ? -1 : 0;
}

int acme_clustered(const vc_config_t *cfg)
{
    return vc_mesh_settings_of(cfg)->node[0] != '\0';
}

/* Calls a vc-mesh verb: its reply (the caller frees it), or NULL with err. */
static Vc__Reply *mesh(void *zctx, const vc_config_t *cfg, const char *verb, const char *const *args, size_t n,
                       char *err, size_t errlen)
{
    char *ep = vc_config_endpoint(cfg, "ctl-vc-mesh");
    Vc__Reply *r = NULL;
    int rc = vc_ctl_call(zctx, ep, verb, args, n, MESH_TIMEOUT_MS, &r);
    free(ep);
    if (rc < 0)
        snprintf(err, errlen, "vc-mesh: %s", vc_strerror(rc));
    else if (!r->ok)
        snprintf(err, errlen, "vc-mesh: %s", r->message);
    if (rc < 0 || r->ok)
        return r;
    vc__reply__free_unpacked(r, NULL);
    return NULL;
}

/* Every other node up has the answer before the CA is told to look (it
 * may look at any of them): asked of vc-mesh every ANSWER_POLL_MS, for
 * ANSWER_WAIT_MS at most. Every ANSWER_RESEND_MS that some have not said
 * so, the answer goes again (a node's vc-acme still starting, or its
 * subscription not yet known to every NATS server): taking it twice is
 * harmless. Fewer is logged, and the order goes on (the CA may come to a
 * node that has it). */
static void wait_answered(const answers_t *an, const char *const *args, const char *first_ask)
{
    size_t want = 0, got = 0;
    char err[256] = "", ask[32];
    snprintf(ask, sizeof(ask), "%s", first_ask ? first_ask : "");
    const char *ask_arg = ask;
    struct timespec poll = {0, ANSWER_POLL_MS * 1000000L};
    for (int64_t waited = 0; ask[0] && waited <= ANSWER_WAIT_MS; waited += ANSWER_POLL_MS) {
        if (waited > 0 && waited % ANSWER_RESEND_MS == 0) {
            Vc__Reply *again = mesh(an->zctx, an->cfg, "cert-answer", args, 4, err, sizeof(err));
            const char *a = again ? vc_reply_get(again, "ask") : NULL;
            if (a)
                snprintf(ask, sizeof(ask), "%s", a);
            if (again)
                vc__reply__free_unpacked(again, NULL);
        }
        Vc__Reply *r = mesh(an->zctx, an->cfg, "cert-answered", &ask_arg, 1, err, sizeof(err));
        const char *w = r ? vc_reply_get(r, "want") : NULL, *g = r ? vc_reply_get(r, "got") : NULL;
        want = w ? strtoul(w, NULL, 10) : 0;
        got = g ? strtoul(g, NULL, 10) : 0;
        if (r)
            vc__reply__free_unpacked(r, NULL);
        if (r == NULL || got >= want)
            break;
        nanosleep(&poll, NULL);
    }
    if (got < want || err[0])
        vc_log(VC_LOG_WARN, "order", "the answer \"%s\" reached %zu of the %zu other nodes up%s%s", args[2], got, want,
               err[0] ? ": " : "", err);
}

int answers_publish(void *arg, const char *type, const char *name, const char *value, int put, char *err, size_t errlen)
{
    const answers_t *an = arg;
    if (strcmp(type, "dns-01") == 0)
        return dns_hook_run(an->dns_hook, put ? "set" : "unset", name, value, err, errlen);
    if (answer_store(an->store, type, name, put ? value : NULL, err, errlen) < 0)
        return -1;
    if (!acme_clustered(an->cfg))
        return 0;
    /* A withdrawal that does not reach a node leaves an answer no CA asks
     * for again. */
    const char *args[] = {put ? "put" : "del", type, name, value};
    Vc__Reply *r = mesh(an->zctx, an->cfg, "cert-answer", args, put ? 4 : 3, err, errlen);
    if (r == NULL && put) { /* not ordered: nowhere half-answered */
        char scratch[128];
        answer_store(an->store, type, name, NULL, scratch, sizeof(scratch));
        return -1;
    }
    if (r && put)
        wait_answered(an, args, vc_reply_get(r, "ask"));
    if (r)
        vc__reply__free_unpacked(r, NULL);
    return 0;
}

static int clear_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    (void)arg;
    return vc_store_err(mdb_drop(txn, dbi, 0));
}

void answers_clear(vc_store_t *st)
{
    vc_store_write(st, VC_DB_ACME_HTTP01, clear_fn, NULL);
    vc_store_write(st, VC_DB_ACME_ALPN, clear_fn, NULL);
}

/* ---- the order lock ------------------------------------------------------------ */

static void defer(job_t *j, const char *why, const char *who)
{
    j->deferred = 1;
    j->st.next_try = (int64_t)time(NULL) + DEFER_S;
    if (who)
        snprintf(j->err, sizeof(j->err), "node %s %s", who, why);
    else
        snprintf(j->err, sizeof(j->err), "%s (asked again in a few seconds)", why);
}

int acme_cluster_may_order(acme_t *a, const vc_config_t *cfg, job_t *j)
{
    if (!acme_clustered(cfg))
        return 1;
    char na[24], err[512] = "";
    snprintf(na, sizeof(na), "%lld", (long long)(j->renewal ? j->st.not_after : 0));
    const char *args[] = {j->site, j->hosts, na};
    Vc__Reply *r = mesh(a->d.zctx, cfg, "cert-lock", args, 3, err, sizeof(err));
    const char *lock = r ? vc_reply_get(r, "lock") : NULL, *holder = r ? vc_reply_get(r, "holder") : NULL;
    int go = lock && strcmp(lock, "held") == 0;
    if (lock && strcmp(lock, "have") == 0)
        defer(j, "has a newer certificate: installed here instead", holder ? holder : "?");
    else if (lock && !go)
        defer(j, "is ordering it", holder ? holder : "?");
    else if (!go) {
        /* Cut off: order alone only if the certificate runs out soon. */
        const cert_state_t *st = &j->st;
        int64_t left = st->not_after - (int64_t)time(NULL), life = st->not_after - st->not_before;
        go = j->renewal && life > 0 && left < life / ALONE_FRACTION;
        if (go)
            vc_log(VC_LOG_WARN, "order", "\"%s\": %s; ordering alone, the certificate runs out in %lld s", j->site, err,
                   (long long)left);
        else
            defer(j, err, NULL);
    }
    if (r)
        vc__reply__free_unpacked(r, NULL);
    j->locked = go && lock != NULL;
    return go;
}

void acme_cluster_ordered(acme_t *a, const vc_config_t *cfg, const job_t *j, const char *cert_pem, const char *key_pem)
{
    char err[512] = "";
    if (j->ok && cert_pem && acme_clustered(cfg)) {
        char na[24];
        snprintf(na, sizeof(na), "%lld", (long long)j->st.not_after);
        const char *args[] = {j->site, j->hosts, na, cert_pem, key_pem};
        Vc__Reply *r = mesh(a->d.zctx, cfg, "cert-share", args, 5, err, sizeof(err));
        if (r)
            vc__reply__free_unpacked(r, NULL);
        else
            vc_log(VC_LOG_ERR, "order", "\"%s\": the certificate did not reach the other nodes: %s", j->site, err);
    }
    if (j->locked) {
        Vc__Reply *r = mesh(a->d.zctx, cfg, "cert-unlock", (const char *const *)&j->site, 1, err, sizeof(err));
        if (r)
            vc__reply__free_unpacked(r, NULL);
    }
}

/* ---- what vc-mesh hands this node ------------------------------------------------ */

/* The configured name a pair is for, with the hosts it must cover (a
 * site's, or an on-demand host's under the default site). NULL if this
 * node has no such certificate to hold. hosts is malloc'd. */
static const char *known_name(const vc_config_t *cfg, const char *name, char **hosts)
{
    size_t p = strlen(VC_ACME_ON_DEMAND_PREFIX);
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (s->tls && strcmp(s->name, name) == 0) {
            *hosts = acme_site_hosts(s);
            return s->name;
        }
        if (s->acme_on_demand && strncmp(name, VC_ACME_ON_DEMAND_PREFIX, p) == 0) {
            char host[256];
            if (vc_acme_on_demand_host(name + p, strlen(name + p), host, sizeof(host)) && !strcmp(host, name + p)) {
                *hosts = vc_strdup(host);
                return name;
            }
        }
    }
    return NULL;
}

/* The chain's first certificate names every host, has not run out, and
 * the key is its own. 0, or -1 with err. */
static int pair_ok(const char *cert_pem, const char *key_pem, const char *hosts, char *err, size_t errlen)
{
    BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
    X509 *x = PEM_read_bio_X509(cb, NULL, NULL, NULL);
    EVP_PKEY *k = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
    BIO_free(cb);
    BIO_free(kb);
    int ok = x && k && X509_check_private_key(x, k) == 1 && X509_cmp_current_time(X509_get0_notAfter(x)) > 0;
    if (!ok)
        snprintf(err, errlen, "not a certificate in force with its key");
    char *copy = vc_strdup(hosts), *save = NULL;
    for (char *h = strtok_r(copy, " ", &save); ok && h; h = strtok_r(NULL, " ", &save))
        if (X509_check_host(x, h, 0, 0, NULL) != 1) {
            snprintf(err, errlen, "the certificate does not name \"%s\"", h);
            ok = 0;
        }
    free(copy);
    X509_free(x);
    EVP_PKEY_free(k);
    return ok ? 0 : -1;
}

void acme_install_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    acme_t *a = arg;
    if (cmd->n_args < 6) {
        vc_reply_fail(reply, "install SITE HOSTS NOT_AFTER CERT KEY ORIGIN");
        return;
    }
    const char *site = cmd->args[0], *hosts = cmd->args[1], *origin = cmd->args[5];
    int64_t not_after = strtoll(cmd->args[2], NULL, 10);
    char *want = NULL, err[256];
    const char *name = known_name(a->d.cfg, site, &want);
    cert_state_t st;
    certs_state_read(a->store, site, &st);
    char *kp = vc_acme_cert_path(a->d.cfg->data_dir, site, "key");
    struct stat sb;
    int have = st.not_after >= not_after && strcmp(st.hosts, hosts) == 0 && stat(kp, &sb) == 0;
    free(kp);
    if (name == NULL) /* a site of other nodes only: nothing to say */
        vc_reply_ok(reply, "\"%s\" is no site of this node's", site);
    else if (strcmp(want, hosts) != 0)
        vc_reply_fail(reply, "\"%s\" is for \"%s\" here, not \"%s\" (the nodes' configurations differ)", site, want,
                      hosts);
    else if (have)
        vc_reply_ok(reply, "kept: this node's certificate for \"%s\" is as new", site);
    else if (pair_ok(cmd->args[3], cmd->args[4], hosts, err, sizeof(err)) < 0 ||
             certs_install(a->d.cfg->data_dir, site, cmd->args[3], cmd->args[4], &st, err, sizeof(err)) < 0)
        vc_reply_fail(reply, "\"%s\": %s", site, err);
    else {
        snprintf(st.hosts, sizeof(st.hosts), "%s", hosts);
        st.failures = 0;
        st.next_try = 0;
        st.last_error[0] = '\0';
        certs_state_write(a->store, site, &st);
        a->shared_in++;
        char na[24];
        snprintf(na, sizeof(na), "%lld", (long long)st.not_after);
        vc_log(VC_LOG_NOTICE, "order", "\"%s\" (%s): node %s's certificate installed", site, hosts, origin);
        vc_bus_publish(a->d.bus, VC_EVENT(ACME_CERT_SHARED), VC__SEVERITY__NOTICE, "site", site, "hosts", hosts,
                       "origin", origin, "not_after", na, NULL);
        vc_reply_ok(reply, "installed");
    }
    free(want);
}

void acme_answer_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    acme_t *a = arg;
    int put = cmd->n_args >= 4 && strcmp(cmd->args[0], "put") == 0;
    if (!put && !(cmd->n_args >= 3 && strcmp(cmd->args[0], "del") == 0)) {
        vc_reply_fail(reply, "answer put TYPE NAME VALUE, or del TYPE NAME");
        return;
    }
    char err[256];
    if (answer_store(a->store, cmd->args[1], cmd->args[2], put ? cmd->args[3] : NULL, err, sizeof(err)) < 0)
        vc_reply_fail(reply, "%s", err);
    else
        vc_reply_ok(reply, "%s", put ? "put" : "withdrawn");
}
