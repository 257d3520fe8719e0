/*
 * A daemon's link to the cluster's NATS (libnats): the options every
 * daemon that talks to the other nodes sets alike, from cluster.* (the
 * servers, TLS, credentials, reconnecting for ever). Linked by vc-mesh and
 * vc-fed only (the vc_nats library).
 */
#ifndef VC_NATS_H
#define VC_NATS_H

#include "vc_mesh.h"

#include <nats/nats.h>
#include <pthread.h>

/* Options for daemon's connection; on_event (may be NULL) is called, on a
 * libnats thread, when the link goes down, comes back, or a first
 * connect failed and is retried. NATS_OK and *out, or a status (logged). */
natsStatus vc_nats_options(natsOptions **out, const mesh_settings_t *c, const char *daemon,
                           natsConnectionHandler on_event, void *closure);

/* A connection with those options: it keeps trying when the servers are
 * not up yet. NATS_OK and *nc, or a status (logged). */
natsStatus vc_nats_connect(natsConnection **nc, const mesh_settings_t *c, const char *daemon,
                           natsConnectionHandler on_event, void *closure);

/* A key-value bucket of the cluster's, made if it is not there: one value
 * a key, cluster.replicas copies, each entry gone after ttl_ms (0: kept). */
natsStatus vc_nats_kv_bucket(kvStore **kv, jsCtx *js, const char *bucket, int64_t replicas, int64_t ttl_ms);
/* Watches the keys of bucket that match keys (a subject's tail: ">",
 * "cert.>"): each one's last value, then every new one as it is put, to
 * cb on a libnats thread, in order. */
natsStatus vc_nats_kv_watch(natsSubscription **sub, jsCtx *js, const char *bucket, const char *keys, natsMsgHandler cb,
                            void *arg);

/* What libnats's threads (and a daemon's own) hand the daemon's one loop:
 * a queue under a lock, and an eventfd the loop polls, written when the
 * queue turns non-empty. An item is a message or the daemon's own data. */
typedef struct vc_nats_item {
    struct vc_nats_item *next;
    int kind;     /* the daemon's */
    natsMsg *msg; /* or NULL */
    void *data;   /* or NULL */
} vc_nats_item_t;

typedef struct vc_nats_inbox {
    pthread_mutex_t lock;
    vc_nats_item_t *head, **tail;
    int fd;
} vc_nats_inbox_t;

int vc_nats_inbox_init(vc_nats_inbox_t *ib);
void vc_nats_inbox_push(vc_nats_inbox_t *ib, int kind, natsMsg *msg);
void vc_nats_inbox_put(vc_nats_inbox_t *ib, int kind, void *data);
/* Everything queued, oldest first; each item freed by the caller (and its
 * message destroyed). */
vc_nats_item_t *vc_nats_inbox_take(vc_nats_inbox_t *ib);
/* Drops what is left (messages destroyed; data freed with free()). */
void vc_nats_inbox_fini(vc_nats_inbox_t *ib);

#endif
