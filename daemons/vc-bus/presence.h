/*
 * Presence across the node, and across the cluster: who is in each
 * presence channel, counted over every front process (their connections
 * come and go as MemberChange room messages, proto/realtime.proto) and
 * over the other nodes (vc-mesh brings their MemberChanges, one a user
 * and node). A user's first connection anywhere makes a member_added,
 * its last a member_removed; the members are kept in LMDB ("presence")
 * for the fronts' subscription_succeeded.
 *
 * A front that dies without saying so (kill -9) loses its connections at
 * the next sweep: its pid is gone. A node the roster says is gone loses
 * its users (presence_forget_node).
 */
#ifndef VC_BUS_PRESENCE_H
#define VC_BUS_PRESENCE_H

#include "realtime.pb-c.h"
#include "vc_store.h"

typedef struct presence presence_t;

/* Where a change goes: the fronts (member_added, member_removed), the
 * app's webhooks, the other nodes. */
enum { PRESENCE_CLIENTS = 1, PRESENCE_HOOKS = 2 };

typedef struct presence_calls {
    /* A user's first connection anywhere came (added) or its last went:
     * data is the event's, except the connection not told; to says who
     * hears of it (PRESENCE_*). */
    void (*member)(void *arg, const char *room, const char *user_id, int added, const char *data, const char *except,
                   int to);
    /* A user's first connection on this node came or its last here went:
     * for the other nodes (vc-mesh). */
    void (*share)(void *arg, const char *room, const char *user_id, const char *info, int joined, int restore);
    void *arg;
} presence_calls_t;

/* Starts empty, and empties the database: fronts say again who they hold
 * when they see the bus come back (its welcome). */
presence_t *presence_new(vc_store_t *st, presence_calls_t calls);
void presence_destroy(presence_t **p);
/* A change from this node's fronts (node 0), or from another node (node:
 * its number, rooms.c; pid ignored, one holding a user and node). A
 * restore from a front (a new bus) is told to no one; from another node
 * (it tells all it holds when the roster changes), to the fronts only. */
void presence_change(presence_t *p, const char *room, const Vc__MemberChange *c, unsigned node);
/* Drops the connections of front processes that are gone. */
void presence_sweep(presence_t *p);
/* Drops what another node held (the roster says it is gone). */
void presence_forget_node(presence_t *p, unsigned node);
/* Shares again every user held on this node (as restores). */
void presence_share_all(presence_t *p);

#endif
