/*
 * Which rooms are occupied on the node: each front process says when a
 * room gets its first subscriber there and loses its last (Occupancy room
 * messages, proto/realtime.proto). A room is occupied while any process
 * holds it: the first process makes channel_occupied, the last one to let
 * go channel_vacated (the apps' webhooks). A process that dies without a
 * word lets go of its rooms at the next sweep.
 */
#ifndef VC_BUS_OCCUPANCY_H
#define VC_BUS_OCCUPANCY_H

#include "realtime.pb-c.h"

typedef struct occupancy occupancy_t;

/* A room became occupied (1) or vacated (0) on the node. */
typedef void (*occupancy_fn)(void *arg, const char *room, int occupied);

occupancy_t *occupancy_new(occupancy_fn fn, void *arg);
void occupancy_destroy(occupancy_t **o);
/* A restore (a front telling a new bus what it holds) is counted but
 * reported to no one: nothing changed for the app. */
void occupancy_change(occupancy_t *o, const char *room, const Vc__Occupancy *c);
/* Lets go of the rooms of front processes that are gone. */
void occupancy_sweep(occupancy_t *o);
/* Rooms occupied on the node. */
size_t occupancy_rooms(const occupancy_t *o);

#endif
