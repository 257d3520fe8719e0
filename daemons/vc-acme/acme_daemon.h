/*
 * What vc-acme's main loop (main.c) and its control commands (commands.c)
 * share: the daemon's state and the jobs its order thread runs.
 */
#ifndef VC_ACME_DAEMON_H
#define VC_ACME_DAEMON_H

#include "certs.h"
#include "on_demand.h"
#include "vc_daemon.h"
#include "vc_store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

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

typedef enum { JOB_ORDER, JOB_CHECK, JOB_REVOKE } job_kind_t;

typedef struct job {
    job_kind_t kind;    /* an order, a question for the renewal window, a revocation */
    char *site, *hosts; /* hosts: space-separated */
    char *challenge;    /* "http-01", "tls-alpn-01" or "dns-01" */
    char *directory;    /* the site's own CA; "": acme.directory */
    int renewal;        /* it had a certificate */
    int ok;             /* the result */
    char err[1024];
    unsigned round_trips;
    int64_t not_after;
    char *problem;    /* a failed order: the CA's problem document */
    int64_t retry_at; /* a failed order: when it is tried again */
    int rate_limited; /* the CA said rateLimited */
    int moved;        /* a check: the window changed, and with it renew_at */
    int reason;       /* a revocation's CRL reason code; -1: none */
    int on_demand;    /* an on-demand host's (site "on-demand/HOST"): the ask URL is asked first */
    int refused;      /* ...and it said no, or could not be asked */
    cert_state_t st;  /* the schedule as the job left it */
    int deferred;     /* in a cluster: not ordered here (another node orders, or has it); no failure */
    int locked;       /* in a cluster: this node holds the site's order lock */
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
    char *forced;      /* a site `vc cert renew --force` or `vc cert issue` named */
    char *revoking;    /* a site `vc cert revoke` named... */
    int revoke_reason; /* ...and its reason, or -1 */
    uint64_t issued, failed;
    uint64_t shared_in; /* in a cluster: other nodes' certificates installed */
    on_demand_t *od;
} acme_t;

/* A site's host names, space-separated (malloc'd). */
char *acme_site_hosts(const vc_site_t *s);

/* vc-acme's control commands: status, certs, renew (and issue), revoke,
 * reload. */
void acme_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply);

#endif
