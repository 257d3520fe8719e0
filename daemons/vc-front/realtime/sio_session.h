/*
 * A Socket.IO session inside the front (socketio.c): its transports, its
 * namespaces, and the handler calls waiting their turn (sio_jobs.c). Only
 * the realtime room's Socket.IO files include this.
 */
#ifndef VC_FRONT_SIO_SESSION_H
#define VC_FRONT_SIO_SESSION_H

#include "realtime.h"
#include "sio_handler.h"
#include "sio_polling.h"
#include "sio_rooms.h"
#include "sio_wire.h"
#include "ws_conn.h"

#include <jansson.h>

/* Namespaces one connection may join. */
#define MAX_NSPS 32
/* Handler calls one connection may have waiting: a client that sends
 * faster than its handler answers is closed, not queued without end. */
#define MAX_JOBS 64

typedef struct sio_nsp {
    char *name;         /* malloc'd: most connections join one short namespace */
    sio_socket_t *sock; /* its id and rooms */
    int pending;        /* its connect handler has not answered yet */
} sio_nsp_t;

enum { JOB_CONNECT, JOB_EVENT, JOB_DISCONNECT };

/* A handler call waiting its turn: one runs at a time per connection, so
 * a socket's events reach PHP in the order they were sent. */
typedef struct sio_job {
    int kind;
    char id[24]; /* the socket's: found again by it when answered */
    char *body;  /* the handler's JSON */
    int has_ack;
    uint64_t ack;
    struct sio_job *next;
} sio_job_t;

typedef struct sio_conn sio_conn_t;
struct sio_conn {
    ws_conn_t *ws;           /* the WebSocket carrying the session; NULL while it polls */
    ws_conn_t *probe;        /* a WebSocket being probed to take over from polling */
    sio_poll_t *poll;        /* polling's queue and held GET, until an upgrade is done */
    struct sid_entry *entry; /* in by_sid */
    int ended;               /* closing: freed once no WebSocket of it is left */
    const vc_site_t *conf;
    char sid[24];
    uint64_t opened_ms;       /* monotonic */
    int ping_out;             /* a ping is waiting for its pong */
    h2o_timeout_entry_t ping; /* the next ping, or (ping_out) the pong's deadline */
    h2o_loop_t *loop;
    sio_nsp_t *nsps; /* grown as joined, up to MAX_NSPS */
    size_t nnsps, capnsps;
    unsigned awaiting;   /* attachments of a binary packet still to come */
    sio_handshake_t *hs; /* NULL: the site has no handler */
    sio_job_t *jobs, *jobs_tail, *running;
    size_t njobs;
    sio_call_t *call;   /* running's */
    const char *reason; /* why it closes, as socket.io says it to a disconnect handler */
    sio_conn_t *prev, *next;
};

/* An Engine.IO packet (type, then data) to the client; a Socket.IO one
 * (json: its data, or NULL) as an Engine.IO message. */
void sio_send_packet(sio_conn_t *c, int eio_type, const char *data, size_t len);
void sio_send_sio(sio_conn_t *c, int type, const char *nsp, const char *json);
/* Ends the session as the reference would, reason as socket.io tells a
 * disconnect handler (close_for: "parse error"). Return 1. */
int sio_close_as(sio_conn_t *c, const char *reason, const char *why);
int sio_close_for(sio_conn_t *c, const char *why);
/* Whether the site serves the namespace. */
int sio_nsp_listed(const vc_site_t *s, const char *nsp);
/* The CONNECT that lets n's socket in (with its private id for recovery). */
void sio_send_connect(sio_conn_t *c, const sio_nsp_t *n);
/* The namespace whose socket has that id, or NULL. */
sio_nsp_t *sio_by_id(sio_conn_t *c, const char *id);
/* The socket leaves the namespace: out of its rooms, and out of c; its
 * disconnect handler runs (reason NULL: it never connected). */
void sio_nsp_leave(sio_conn_t *c, sio_nsp_t *n, const char *reason);

/* sio_jobs.c: queues a handler call (body taken; p: the event, for its
 * ack id); 0, or -1 (and the session ended) if too many wait. */
int sio_job_add(sio_conn_t *c, int kind, const char *id, json_t *body, const sio_packet_t *p);
json_t *sio_disconnect_json(const sio_nsp_t *n, const char *reason);
char *sio_disconnect_body(const sio_nsp_t *n, const char *reason);
/* The session is gone: what waited still reaches the handler, unheard. */
void sio_jobs_after_close(sio_conn_t *c);

#endif
