/*
 * What vc-mesh reads from NATS, decoded and checked before anything acts
 * on it: a roster entry (proto MeshNode), a purge (MeshPurge) and a room
 * message (RoomMessage, with presence and occupancy changes). Another
 * node may run another version, or a client with the cluster's
 * credentials may be hostile; what does not pass is counted and dropped.
 * What carries a private key (a certificate, a challenge's answer) is
 * also sealed with the cluster's secret. fuzz/fuzz_mesh_wire.c drives
 * every reader.
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
#define MESH_SIO_ROOMS_MAX 100    /* rooms named by one Socket.IO operation */
#define MESH_SIO_ROOM_MAX 512     /* a Socket.IO room's name */
#define MESH_CERT_MAX (64 * 1024) /* a chain */
#define MESH_KEY_MAX (16 * 1024)  /* a private key, or an answer */
#define MESH_SITE_MAX 300         /* a site's name, or "on-demand/" and a host */

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

/* Sealed: a random nonce, then XChaCha20-Poly1305 of the message with ad
 * (the key or subject it travels under) bound in, so that a sealed value
 * moved to another key does not open. malloc'd; *outlen set. */
unsigned char *mesh_seal(const unsigned char *key, const char *ad, const void *plain, size_t len, size_t *outlen);
/* NULL if it does not open with key and ad (another cluster's secret, or
 * altered on the way). */
unsigned char *mesh_unseal(const unsigned char *key, const char *ad, const void *data, size_t len, size_t *outlen);

/* A certificate another node ordered, unsealed: its origin a node, its
 * site a name vc-acme could hold ([A-Za-z0-9._-], or "on-demand/" and a
 * host a CA issues for), a chain and a key within bounds. NULL with why. */
Vc__MeshCert *mesh_cert_read(const void *data, size_t len, char *why, size_t wlen);
/* A challenge's answer, unsealed: an HTTP-01 or TLS-ALPN-01 one, named,
 * with a value when it is put. NULL with why. */
Vc__MeshAnswer *mesh_answer_read(const void *data, size_t len, char *why, size_t wlen);

/* A schedule entry's key in the vc_schedules bucket (schedules.c):
 * "NODE MINUTE running|done STARTED_MS", the node a node name, the minute
 * and the start positive. 0, or -1 when it is not that. */
typedef struct mesh_sched_value {
    char node[64];
    long long minute, started_ms;
    int running;
} mesh_sched_value_t;
#define MESH_SCHED_VALUE_MAX 160
int mesh_sched_read(const void *data, size_t len, mesh_sched_value_t *v);
/* Writes v as mesh_sched_read reads it; its length (< MESH_SCHED_VALUE_MAX). */
int mesh_sched_write(const mesh_sched_value_t *v, char *out, size_t len);

#endif
