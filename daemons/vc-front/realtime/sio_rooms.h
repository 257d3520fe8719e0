/*
 * Socket.IO's rooms in a front process: the sockets of each namespace of
 * each site held here, the rooms they are in, and the operations that
 * select them (socket.io's io.of(nsp).in(rooms).except(rooms) followed by
 * emit, socketsJoin, socketsLeave or disconnectSockets).
 *
 * An operation is never applied where it is made: it goes to the bus in
 * the room "~sio:HASH" (of the site's name and the namespace; '~' is in
 * no Pusher app id), which every front
 * process holding a socket of that namespace is in (rooms.h), and through
 * vc-mesh to every node; each applies it to the sockets it holds, as
 * socket.io's Redis adapter does. A socket is in the room of its own id
 * from its CONNECT to its DISCONNECT, so one socket is reached as a room.
 */
#ifndef VC_FRONT_SIO_ROOMS_H
#define VC_FRONT_SIO_ROOMS_H

#include "realtime.pb-c.h"
#include "ws_conn.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sio_space sio_space_t;
typedef struct sio_room sio_room_t;

typedef struct sio_in {
    sio_room_t *room;
    size_t index; /* in the room's array */
} sio_in_t;

/* One client's socket in one namespace. */
typedef struct sio_socket {
    sio_space_t *space;
    char id[24];
    char pid[24]; /* its private id, for recovery ("" if the site has none) */
    void *owner;  /* socketio.c's connection */
    sio_in_t *in; /* the rooms it is in */
    size_t nin, capin;
    size_t all_index; /* in the space's list of sockets */
    uint64_t mark;    /* the operation that last saw it */
} sio_socket_t;

/* What an operation does to a socket, in its owner's hands. */
typedef struct sio_socket_ops {
    /* frame: the Engine.IO message ("4" and the packet), shared. */
    void (*send)(sio_socket_t *s, ws_out_t *frame);
    /* The socket leaves its namespace (a DISCONNECT is sent to it, and it
     * is freed with sio_socket_free); close: its connection closes too. */
    void (*disconnect)(sio_socket_t *s, int close);
} sio_socket_ops_t;

void sio_rooms_init(const sio_socket_ops_t *ops);

/* A socket of site's nsp, in the room of its id; recovery_ms: the site's
 * socketio.recovery (a private id is made for it then). */
sio_socket_t *sio_socket_new(const char *site, const char *nsp, const char *id, void *owner, int64_t recovery_ms);
void sio_socket_free(sio_socket_t *s);
/* 0, or -1 if the socket is in as many rooms as one may be. */
int sio_socket_join(sio_socket_t *s, const char *room);
void sio_socket_leave(sio_socket_t *s, const char *room);

/* Connection state recovery (socket.io's, v4.6): while a namespace's
 * site has socketio.recovery, each emit carries its offset (the bus's id
 * of the operation) as a last argument and is kept that long; a socket
 * cut off is kept by its private id (its id and rooms), and a client
 * coming back with that id and the last offset it saw gets its socket
 * again and what it missed. In this front process only: a client that
 * comes back to another connects anew.
 *
 * sio_socket_keep keeps s (before it is freed) until until_ms.
 * sio_socket_restore makes the socket kept under pid again (for owner),
 * or NULL if there is none, or offset is no longer kept (too old): then
 * the client connects anew, as socket.io's would. sio_socket_replay sends
 * it what came after offset that would have reached it. */
void sio_socket_keep(sio_socket_t *s, uint64_t until_ms);
sio_socket_t *sio_socket_restore(const char *site, const char *nsp, const char *pid, const char *offset, void *owner);
void sio_socket_replay(sio_socket_t *s, const char *offset);

/* Sends op (its packet already the text a client reads) to the bus for
 * site's sockets on every front. 0, or -1 if it was dropped. */
int sio_rooms_publish(const char *site, const Vc__SioOp *op);

/* Once a second: lets go of the namespaces no socket here is in. */
void sio_rooms_tick(void);

/* Sockets and rooms held here, for status. */
size_t sio_rooms_sockets(size_t *rooms);
/* Each namespace with sockets here (room "", sockets: all of its), then
 * each room of it but the sockets' own; stops when cb returns non-zero. */
typedef int (*sio_rooms_cb)(const char *site, const char *nsp, const char *room, size_t sockets, void *arg);
void sio_rooms_each(sio_rooms_cb cb, void *arg);

/* Operations applied here since start. */
uint64_t sio_rooms_applied(void);

#endif
