/*
 * vc-mesh: this node's link to the cluster (docs/cluster.md). It holds one
 * NATS connection (libnats, which reconnects by itself) and does with it:
 * the roster (roster.c), purges to and from the other nodes (purges.c),
 * room messages, presence and occupancy (rooms_*.c), certificates
 * (certs_shared.c), and the `nodes` verb.
 *
 * libnats calls back on threads of its own. Those callbacks do nothing
 * but queue what arrived in the inbox (libcommon/vc_nats.h) and wake the daemon's one
 * loop through an eventfd: everything else runs on the loop, so nothing
 * here needs a lock but the inbox's.
 */
#ifndef VC_MESH_INTERNAL_H
#define VC_MESH_INTERNAL_H

#include "vc_daemon.h"
#include "vc_mesh.h"
#include "vc_nats.h"

#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef enum {
    INBOX_ROSTER,
    INBOX_PURGE,
    INBOX_LINK,
    INBOX_RESEND,
    INBOX_ROOM,
    INBOX_SHARE,
    INBOX_CERT,
    INBOX_ANSWER,
    INBOX_ANSWER_REPLY
} inbox_kind_t; /* what a vc_nats_item_t holds */

typedef enum { NODE_UP, NODE_SUSPECT, NODE_GONE } node_state_t;

/* A challenge answer sent, and the other nodes that said they have it. */
typedef struct answer_wait {
    uint64_t ask; /* 0: none */
    size_t want, got;
} answer_wait_t;
#define MESH_ANSWER_WAITS 16

/* This node's challenge answers still out (put, not yet withdrawn): a
 * node that joins was not listening when they went, and gets them again. */
typedef struct own_answer {
    char *type, *name, *value;
} own_answer_t;
#define MESH_OWN_ANSWERS 32

/* Another node's answer this node's vc-acme has not taken yet. */
typedef struct pending_answer {
    char *origin, *type, *name, *value, *reply; /* value and reply may be NULL */
    int put;
    uint64_t since_ms, next_ms; /* monotonic */
} pending_answer_t;
#define MESH_PENDING_ANSWERS 32

typedef struct node {
    char name[VC_MESH_NODE_MAX + 1];
    node_state_t state;
    uint64_t seen_ms; /* monotonic, at its last heartbeat */
    int64_t at_ms, started_ms;
    double load;
    char *version, *config;
    char **addresses, **sites;
    size_t naddresses, nsites;
} node_t;

/* schedules.c: one schedule entry of this node's configuration. */
typedef struct mesh_entry mesh_entry_t;
/* What became of the minutes this node's pools said were due. */
enum { SCHED_TAKEN, SCHED_ELSEWHERE, SCHED_SKIPPED, SCHED_LOST, SCHED_UNREACHABLE, SCHED_COUNTS };

typedef struct mesh {
#define MESH_MAGIC 0x6d657368u /* "mesh": checked by every module vc-mesh hands it to */
    unsigned magic;
    vc_daemon_t d;
    const mesh_settings_t *cfg;
    vc_nats_inbox_t inbox;
    natsConnection *nc;
    jsCtx *js;
    jsCtx *js_beat; /* the roster's: waits a heartbeat at most */
    kvStore *roster;
    natsSubscription *roster_sub, *purge_sub;
    int ready; /* roster bucket and purge stream set up */
    uint64_t next_setup_ms, next_setup_warn_ms;
    int connected; /* as libnats last said */
    uint64_t next_beat_ms;
    pthread_t stall_thread; /* stall.c: whether this process stood still */
    atomic_uint_fast64_t stall_last_ms, stalled_ms;
    atomic_int stall_stop;
    uint64_t stalled_seen_ms;
    int64_t started_ms;
    node_t *nodes;
    size_t nnodes, capnodes;
    /* What this node's roster entry lists: its sites (and the
     * configuration releases if it follows them), and the configuration's
     * version; taken at start and at each reload (roster_take). */
    char **sites;
    size_t nsites;
    uint64_t config_version;
    void *in;                     /* PULL: purges vc-cache hands on (mesh-in) */
    void *rooms_sub, *rooms_push; /* this node's vc-bus: rooms-out (SUB), rooms-in (PUSH) */
    natsSubscription *room_sub, *share_sub;
    uint64_t rooms_sent, rooms_received, rooms_dropped, rooms_shared;
    int rooms_share_due;       /* tell the others all this node holds (a node came up) */
    int bus_welcomed;          /* vc-bus's rooms-out said welcome once */
    int hooks_told;            /* what vc-bus was last told: -1 nothing yet */
    uint64_t next_hooks_ms;    /* monotonic: when to tell vc-bus again */
    uint64_t next_bus_warn_ms; /* monotonic: vc-bus not answering is said this often */
    uint64_t next_metrics_ms, metrics_failed;
    natsMsg **resend; /* purges the stream did not take (a leader moving): sent again every 2 s */
    size_t nresend, capresend;
    uint64_t next_resend_ms; /* monotonic */
    int resending;           /* an episode of refusals: logged at its start and at its end */
    uint64_t resent;         /* sends again in this episode */
    uint64_t purges_sent, purges_applied, purges_failed, purges_skipped, malformed, reconnects;
    int64_t replay_lag_ms; /* age of the last purge applied when it was applied */
    int held;              /* this node's cache held (vc-cache starts so) */
    int must_drop;         /* purges were missed: drop the cache before answering */
    uint64_t cut_since_ms; /* monotonic; 0: linked */
    uint64_t beat_ok_ms;   /* monotonic: this node's last heartbeat stored */
    uint64_t next_catchup_ms;
    char mark[64];           /* the marker this node put on the purge stream while held... */
    int mark_seen;           /* ...and whether its consumer has brought it back */
    uint64_t marks, mark_ms; /* markers put; monotonic, when the last was */
    kvStore *certs;          /* the vc_certs bucket: sealed pairs and order locks */
    natsSubscription *cert_sub, *answer_sub, *reply_sub;
    char answer_inbox[64]; /* replies to this node's answers: INBOX.ASK */
    uint64_t answer_ask;
    answer_wait_t answer_waits[MESH_ANSWER_WAITS];
    own_answer_t own_answers[MESH_OWN_ANSWERS];
    size_t nown_answers;
    pending_answer_t pending_answers[MESH_PENDING_ANSWERS];
    size_t npending_answers;
    unsigned char seal_key[VC_MESH_SEAL_KEY];
    int can_seal; /* cluster.secret_file read: certificates are shared */
    uint64_t certs_shared, certs_handed, answers_sent, answers_applied;
    kvStore *schedules; /* the vc_schedules bucket: which node runs each schedule entry's minute */
    void *sched_sub;    /* this node's bus-out (SUB): its pools' schedule events */
    mesh_entry_t *sched;
    size_t nsched;
    uint64_t sched_count[SCHED_COUNTS];
} mesh_t;

/* link.c: the NATS connection and what it sets up once connected. */
int link_open(mesh_t *m);
/* Sets up the roster bucket, the purge stream and the subscriptions, once
 * the connection is up; retried each tick until done. */
void link_setup(mesh_t *m);
const char *link_state(const mesh_t *m);
/* This node's durable consumer of the purge stream. */
void link_durable(const mesh_t *m, char *name, size_t len);
void link_close(mesh_t *m);

/* calls.c: calls a verb of one of this node's daemons ("vc-cache"),
 * waiting timeout_ms at most: NULL, or why it failed (in err). */
const char *mesh_call(mesh_t *m, const char *daemon, const char *verb, const char *const *args, size_t nargs,
                      int timeout_ms, char *err, size_t errlen);
/* How long vc-cache may take to apply one purge. */
#define MESH_CACHE_TIMEOUT_MS 10000

/* rooms_bridge.c: room messages across nodes, over core NATS subjects (at
 * most once, as within a node). */
int rooms_bridge_open(mesh_t *m);
natsStatus rooms_bridge_subscribe(mesh_t *m);
void rooms_from_bus(void *arg); /* rooms-out readable */
void rooms_heard(mesh_t *m, natsMsg *msg);
void rooms_bridge_close(mesh_t *m);

/* rooms_shared.c: presence and occupancy across nodes. Each node's vc-bus
 * counts the others' members and rooms as they come (their changes travel
 * as room messages); the roster says when to tell them all again and when
 * to forget a node's; one node posts the apps' webhooks. */
/* This node tells all it holds, at the next tick. */
void rooms_share_soon(mesh_t *m);
/* A node came up in the roster: this node and every other tells all. */
void rooms_node_up(mesh_t *m);
/* The roster says node is gone: what it held goes. */
void rooms_node_gone(mesh_t *m, const char *node);
/* vc-bus's rooms-out said welcome: a restarted bus lost the others' holds. */
void rooms_bus_welcome(mesh_t *m);
void rooms_share_heard(mesh_t *m, natsMsg *msg);
/* Each tick: shares when due, and tells vc-bus whether it posts the
 * webhooks (the first node by name that is up does). */
void rooms_shared_tick(mesh_t *m);

/* schedules.c: each schedule entry runs on one node a minute. The
 * entries of cfg (at start and each reload); the bus's schedule events;
 * the bucket, set up with the link; a run of e by this node ended. */
void schedules_take(mesh_t *m, const vc_config_t *cfg);
int schedules_open(mesh_t *m);
natsStatus schedules_setup(mesh_t *m);
void schedules_from_bus(void *arg);
void schedules_ended(mesh_t *m, const mesh_entry_t *e);
void schedules_fini(mesh_t *m);

/* certs_shared.c: certificates across nodes, for vc-acme. Set up with
 * the link (a no-op without cluster.secret_file). */
natsStatus certs_setup(mesh_t *m);
void certs_heard(mesh_t *m, natsMsg *msg); /* a pair put in the bucket */
/* The verbs need the bucket and nargs arguments: 0, or 1 when they are
 * not there (replied). */
int certs_unready(mesh_t *m, const Vc__Command *cmd, size_t nargs, Vc__Reply *reply);
/* answers_shared.c: challenge answers across nodes. */
void certs_answer_heard(mesh_t *m, natsMsg *msg); /* another node's challenge answer */
void certs_answers_tick(mesh_t *m);               /* tries again those vc-acme did not take */
void answers_fini(mesh_t *m);
/* vc-acme's verbs: cert-lock, cert-unlock, cert-answer, cert-share. */
void certs_lock_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void certs_unlock_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void certs_answer_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void certs_answered_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void certs_reply_heard(mesh_t *m, natsMsg *msg); /* a node has this node's answer */
void certs_node_up(mesh_t *m);                   /* sends it this node's answers still out */
void certs_share_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void certs_fini(mesh_t *m);

/* catchup.c: whether this node's cache may answer. */
/* Before this node's consumer is bound: whether it saw every purge the
 * stream still has, since it last read it (else its cache is dropped). */
void catchup_before_consumer(mesh_t *m);
/* Each tick: holds the cache while cut off past cluster.suspect_after,
 * lets it answer once every purge the stream had for it is applied. */
void catchup_tick(mesh_t *m);

/* roster.c */
void roster_beat(mesh_t *m);
void roster_take(mesh_t *m, const vc_config_t *cfg);
void roster_heard(mesh_t *m, natsMsg *msg);
/* Marks silent nodes suspect, then gone; each change an event. */
void roster_check(mesh_t *m);
/* Whether the roster shows node name up or suspect (not gone, not unknown). */
int roster_node_up(const mesh_t *m, const char *name);
void roster_reply(const mesh_t *m, Vc__Reply *reply);
/* The other nodes, up or suspect, whose entry lists site (vc-fed's). */
void roster_peers_reply(const mesh_t *m, const char *site, Vc__Reply *reply);
void roster_fini(mesh_t *m);

/* stall.c: a thread that sees whether the process stood still, apart
 * from the loop waiting in a call while libnats hears on. */
int stall_start(mesh_t *m);
/* Milliseconds the process stood still since the last call. */
uint64_t stall_since_last(mesh_t *m);
void stall_stop(mesh_t *m);

/* metrics.c: written once a second for the front's /metrics. */
void metrics_tick(mesh_t *m);

/* purges.c */
void purges_from_cache(void *arg); /* mesh-in readable */
void purges_heard(mesh_t *m, natsMsg *msg);
/* A purge JetStream did not acknowledge: kept to be sent again (the
 * message id makes a second copy harmless). Takes msg. */
void purges_refused(mesh_t *m, natsMsg *msg);
/* Puts a marker on the stream (kind "mark", purging nothing): once this
 * node's consumer brings it back, every purge stored before it has come. */
void purges_mark(mesh_t *m);
/* Each tick: sends again what was refused. */
void purges_resend(mesh_t *m);
void purges_fini(mesh_t *m);

#endif
