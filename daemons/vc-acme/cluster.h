/*
 * vc-acme in a cluster (docs/cluster.md, "Certificates across nodes").
 * vc-acme alone talks to the CA; vc-mesh carries the rest:
 *  - before an order, the site's order lock (one node at a time), or the
 *    word that another node already has a newer pair, installed here;
 *  - each challenge answer, to every node's store, before the CA is told
 *    to check (the load balancer may send its check to any node);
 *  - the issued pair, sealed, to every node.
 * And the other way: vc-mesh hands this node the answers and the pairs
 * other nodes published (verbs answer and install).
 * Also the challenge answers' store the fronts read, cluster or not.
 */
#ifndef VC_ACME_CLUSTER_H
#define VC_ACME_CLUSTER_H

#include "acme_daemon.h"
#include "vc_config.h"
#include "vc_ctl.h"

#include <stdint.h>

/* What order_from_cas hands acme_issue as its publisher's argument. */
typedef struct answers {
    vc_store_t *store;    /* the fronts read HTTP-01 and TLS-ALPN-01 answers there */
    const char *dns_hook; /* dns-01: the operator's hook */
    void *zctx;           /* in a cluster: vc-mesh, for every node */
    const vc_config_t *cfg;
} answers_t;

/* An acme_publish_fn: the answer put (or withdrawn) where the CA will
 * look: a DNS record through the hook, or this node's store and, in a
 * cluster, every node's. 0, or -1 with err. */
int answers_publish(void *arg, const char *type, const char *name, const char *value, int put, char *err,
                    size_t errlen);
/* An interrupted order's answers are of no use: dropped at start. */
void answers_clear(vc_store_t *st);

/* Whether cluster.node is set. */
int acme_clustered(const vc_config_t *cfg);

/* Before an order (on the order thread): 1 if this node orders it now.
 * 0 if not: another node holds the lock, another node's newer pair was
 * installed instead, or vc-mesh could not say (j->deferred set, with
 * j->st.next_try and the reason in j->err). */
int acme_cluster_may_order(acme_t *a, const vc_config_t *cfg, job_t *j);
/* After it: the pair to every node (ok), and the lock released. */
void acme_cluster_ordered(acme_t *a, const vc_config_t *cfg, const job_t *j, const char *cert_pem, const char *key_pem);

/* vc-mesh's verbs to this daemon: install SITE HOSTS NOT_AFTER CERT KEY
 * ORIGIN (another node's pair, kept if newer than this node's), and
 * answer put|del TYPE NAME [VALUE]. */
void acme_install_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void acme_answer_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);

#endif
