/*
 * What vc-mesh reads from NATS, decoded and checked before anything acts
 * on it: a roster entry (proto MeshNode), a purge (MeshPurge) and a room
 * message (RoomMessage, with presence and occupancy changes). Another
 * node may run another version, or a client with the cluster's
 * credentials may be hostile; what does not pass is counted and dropped.
 * fuzz/fuzz_mesh_wire.c drives both.
 */
#ifndef VC_MESH_WIRE_H
#define VC_MESH_WIRE_H

#include "mesh.pb-c.h"
#include "realtime.pb-c.h"

#include <stddef.h>

/* Limits on what a node may say. */
#define MESH_ADDRESSES_MAX 64
#define MESH_SITES_MAX 10000
#define MESH_HOSTS_MAX 1024
#define MESH_STRING_MAX 4096
#define MESH_ROOM_MAX 256            /* a room's or an event's name */
#define MESH_ROOM_DATA_MAX (1 << 20) /* as vc-bus's */
#define MESH_ROOM_TOPICS_MAX 64

/* A roster entry heard on subject "$KV.<bucket>.<key>": decoded, its node
 * named as its key. NULL with why when it does not pass. */
Vc__MeshNode *mesh_node_read(const char *key, const void *data, size_t len, char *why, size_t wlen);
/* A purge: decoded, its origin a node name, its kind known, a value where
 * the kind needs one. NULL with why when it does not pass. */
Vc__MeshPurge *mesh_purge_read(const void *data, size_t len, char *why, size_t wlen);
/* A room message from another node: decoded, its origin a node name, its
 * room "APP:CHANNEL" without a newline, within vc-bus's limits; a
 * presence member's change names its user. NULL with why when it does
 * not pass. */
Vc__RoomMessage *mesh_room_read(const void *data, size_t len, char *why, size_t wlen);

#endif
