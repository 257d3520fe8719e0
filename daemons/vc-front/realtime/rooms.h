/*
 * Rooms in a front process: who is subscribed to what, and the link to
 * vc-bus that carries every room message (daemons/vc-bus/rooms.h).
 *
 * A message is never delivered where it is published: it goes to the
 * bus, which gives it its id and sends it to every front process of the
 * node, this one too. So every subscriber, wherever its socket lives,
 * sees the same messages in the same order, and the bus is the one place
 * a cluster bridges. A room is "APP_ID:CHANNEL".
 *
 * Subscribers are of any protocol (the Pusher protocol now, Mercure's
 * SSE next): each says how it takes a message through its rt_sub_ops_t.
 */
#ifndef VC_FRONT_ROOMS_H
#define VC_FRONT_ROOMS_H

#include "core/front.h"
#include "realtime.pb-c.h"
#include "ws_conn.h"

typedef struct rt_room rt_room_t;
typedef struct rt_sub rt_sub_t;

typedef struct rt_sub_ops {
    /* m for s. frame is the frame made for m in this room by the first
     * subscriber of the same ops, shared by the others: NULL the first
     * time, the callee may set it (one reference), and rooms unrefs it. */
    void (*deliver)(rt_sub_t *s, const Vc__RoomMessage *m, ws_out_t **frame);
} rt_sub_ops_t;

struct rt_sub {
    const rt_sub_ops_t *ops;
    const char *socket_id; /* messages that name it in except skip it */
    rt_room_t *room;       /* set by rooms_join */
    size_t index;          /* in the room's array */
};

/* A presence room's member: one user, however many connections. */
typedef struct rt_member {
    char *user_id;
    char *info; /* JSON text, or NULL */
    unsigned conns;
} rt_member_t;

/* Connects to the bus's rooms-in and rooms-out, reading the latter on the
 * front's loop. 0, or -1 (logged). */
int rooms_start(front_t *f);
/* Once a second: what the socket's edge did not announce. */
void rooms_tick(void);

void rooms_join(const char *name, rt_sub_t *s);
void rooms_leave(rt_sub_t *s);
const char *rooms_name(const rt_room_t *r);
size_t rooms_subscribers(const rt_room_t *r);
/* The room of that name, or NULL if nobody here is in it. */
rt_room_t *rooms_find(const char *name);
/* Rooms with someone in them here, and subscriptions in all. */
size_t rooms_count(size_t *subscriptions);
/* Each room here (for the HTTP API's channel lists): stops when cb
 * returns non-zero. */
void rooms_each(int (*cb)(rt_room_t *r, void *arg), void *arg);

/* Sends m to the bus. 0, or -1 if it was dropped (the bus away so long
 * that its queue is full). */
int rooms_publish(const Vc__RoomMessage *m);

/* Presence. A user's first connection returns 1 (tell the room), later
 * ones 0; info replaces the one kept. */
int rooms_member_add(rt_room_t *r, const char *user_id, const char *info);
/* 1 if that was the user's last connection here (tell the room). */
int rooms_member_remove(rt_room_t *r, const char *user_id);
const rt_member_t *rooms_members(const rt_room_t *r, size_t *n);

/* The messages vc-bus kept for room (those published with keep) with an
 * id after after_id, oldest first, each to cb until it returns non-zero.
 * The count seen: 0 if there is none, or the node's state cannot be read. */
typedef int (*rooms_history_cb)(const Vc__RoomMessage *m, void *arg);
int rooms_history(front_t *f, const char *room, uint64_t after_id, rooms_history_cb cb, void *arg);

/* cb sees every message marked keep as it comes back from the bus (so it
 * is in the room's history by then), before its subscribers do. */
void rooms_on_kept(void (*cb)(const Vc__RoomMessage *m));

/* Tells vc-bus a presence connection came (joined) or went: the bus counts
 * them over the node's fronts and sends member_added and member_removed
 * (daemons/vc-bus/presence.h). 0, or -1 if dropped. */
int rooms_member_change(const char *room, const char *user_id, const char *info, int joined, const char *socket_id);
/* The node's members of a presence room as vc-bus last wrote them, a JSON
 * object {USER_ID: user_info} (malloc'd), or NULL if none. */
char *rooms_presence_read(front_t *f, const char *room);

/* Messages delivered from the bus since start, and dropped on the way in
 * (malformed). */
uint64_t rooms_delivered(uint64_t *malformed);

#endif
