/*
 * Which rooms are occupied on the node: each front process says when a
 * room gets its first subscriber there and loses its last (Occupancy room
 * messages, proto/realtime.proto). A room is occupied while any process
 * holds it: the first process makes channel_occupied, the last one to let
 * go channel_vacated (the apps' webhooks). A process that dies without a
 * word lets go of its rooms at the next sweep.
 *
 * In a cluster, other nodes hold rooms too (vc-mesh brings their
 * Occupancy changes, one a room and node): a room is occupied while any
 * process of any node holds it, so the webhooks are about the cluster.
 */
#ifndef VC_BUS_OCCUPANCY_H
#define VC_BUS_OCCUPANCY_H

#include "realtime.pb-c.h"

typedef struct occupancy occupancy_t;

typedef struct occupancy_calls {
    /* A room became occupied (1) or vacated (0) anywhere: for the app. */
    void (*hook)(void *arg, const char *room, int occupied);
    /* A room became occupied or vacated on this node: for the other nodes. */
    void (*share)(void *arg, const char *room, int occupied, int restore);
    void *arg;
} occupancy_calls_t;

occupancy_t *occupancy_new(occupancy_calls_t calls);
void occupancy_destroy(occupancy_t **o);
/* A change from this node's fronts (node 0) or another node (its number,
 * rooms.c). A restore (a front telling a new bus what it holds, a node
 * telling all it holds) is counted but reported to no one: nothing
 * changed for the app. */
void occupancy_change(occupancy_t *o, const char *room, const Vc__Occupancy *c, unsigned node);
/* Lets go of the rooms of front processes that are gone. */
void occupancy_sweep(occupancy_t *o);
/* Lets go of what another node held (the roster says it is gone). */
void occupancy_forget_node(occupancy_t *o, unsigned node);
/* Shares again every room held on this node (as restores). */
void occupancy_share_all(occupancy_t *o);
/* Rooms occupied (on any node). */
size_t occupancy_rooms(const occupancy_t *o);

#endif
