/*
 * Room messages (proto/realtime.proto): fronts and pools push them into
 * "rooms-in", vc-bus gives each an id and sends it to every front on
 * "rooms-out". They travel apart from events, so that a burst of events
 * never delays a room's fan-out, and `vc events` never sees them. This is
 * the one place a node's room messages pass: where vc-mesh will bridge
 * them to other nodes.
 */
#ifndef VC_BUS_ROOMS_H
#define VC_BUS_ROOMS_H

#include "vc_config.h"
#include "webhooks.h"

#include <stdint.h>

typedef struct rooms_relay rooms_relay_t;

/* Binds both endpoints; NULL (logged) if either fails. Messages marked
 * keep go to the room's history in store first, history_max a room.
 * Occupancy, presence and client events go to webhooks. */
struct vc_store;
rooms_relay_t *rooms_relay_open(void *zctx, const vc_config_t *cfg, struct vc_store *store, uint64_t history_max,
                                webhooks_t *webhooks);
void rooms_relay_close(rooms_relay_t **r);
/* The sockets to poll for input: rooms-in, and rooms-out (subscriptions). */
void *rooms_relay_in(const rooms_relay_t *r);
void *rooms_relay_out(const rooms_relay_t *r);
/* Relays what waits on rooms-in (at most a batch), and drains the
 * subscriptions rooms-out has read. */
void rooms_relay_pump(rooms_relay_t *r);
uint64_t rooms_relay_count(const rooms_relay_t *r, uint64_t *malformed);
/* Rooms occupied on the node (a subscriber in some front process). */
size_t rooms_relay_occupied(const rooms_relay_t *r);
/* The cluster (vc-mesh calls these through vc-bus's verbs): a node the
 * roster says is gone loses its members and rooms; share tells the other
 * nodes again everything this node holds (a node joined, or came back);
 * hooks says whether this node posts the apps' occupancy and presence
 * webhooks (one node of the cluster does). */
void rooms_relay_forget_node(rooms_relay_t *r, const char *node);
void rooms_relay_share(rooms_relay_t *r);
void rooms_relay_set_hooks(rooms_relay_t *r, int here);
int rooms_relay_hooks(const rooms_relay_t *r);
/* Other nodes heard of. */
size_t rooms_relay_nodes(const rooms_relay_t *r);
/* Once a second or so (presence.h's sweep). */
void rooms_relay_tick(rooms_relay_t *r);

/* A room message's checks, for the relay and for its fuzz target: 1 if
 * m may be relayed. */
struct Vc__RoomMessage;
int rooms_message_valid(const struct Vc__RoomMessage *m);

#endif
