/*
 * Presence across the node: who is in each presence channel, counted over
 * every front process (their connections come and go as MemberChange
 * room messages, proto/realtime.proto). A user's first connection anywhere
 * on the node makes a member_added, its last a member_removed; the members
 * are kept in LMDB ("presence") for the fronts' subscription_succeeded.
 * A front that dies without saying so (kill -9) loses its connections at
 * the next sweep: its pid is gone.
 */
#ifndef VC_BUS_PRESENCE_H
#define VC_BUS_PRESENCE_H

#include "realtime.pb-c.h"
#include "vc_store.h"

typedef struct presence presence_t;

/* A user's first connection on the node came (added) or its last went:
 * the fronts hear of it (member_added, member_removed: data is the
 * event's, except the connection not told), and so do the app's webhooks. */
typedef void (*presence_emit_fn)(void *arg, const char *room, const char *user_id, int added, const char *data,
                                 const char *except);

/* Starts empty, and empties the database: fronts say again who they hold
 * when they see the bus come back (its welcome). */
presence_t *presence_new(vc_store_t *st, presence_emit_fn emit, void *arg);
void presence_destroy(presence_t **p);
void presence_change(presence_t *p, const char *room, const Vc__MemberChange *c);
/* Drops the connections of front processes that are gone. */
void presence_sweep(presence_t *p);

#endif
