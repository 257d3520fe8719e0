/*
 * A WebSocket connection on one of h2o's sockets: the handshake (an
 * HTTP/1.1 upgrade, plain or TLS), reading with libcommon/vc_ws.h, and a send
 * queue with a bound.
 *
 * What we send is a ws_out_t, a whole frame counted by reference: a
 * message published to 10,000 subscribers is framed once and queued
 * 10,000 times. A connection whose queue passes its bound (a client that
 * does not read) is closed, never allowed to grow the front's memory.
 */
#ifndef VC_FRONT_WS_CONN_H
#define VC_FRONT_WS_CONN_H

#include "core/front.h"
#include "vc_ws.h"

typedef struct ws_conn ws_conn_t;

typedef struct ws_out {
    uint32_t refs;
    uint32_t len;
    uint8_t data[]; /* header, then payload */
} ws_out_t;

/* One frame of opcode with payload; one reference, the caller's. */
ws_out_t *ws_out_new(int opcode, const void *payload, size_t len);
void ws_out_unref(ws_out_t *o);
/* Its payload, past the (unmasked) header. */
const uint8_t *ws_out_payload(const ws_out_t *o, size_t *len);

typedef struct ws_callbacks {
    /* A whole text or binary message. Returns non-zero if it closed the
     * connection (ws_close). */
    int (*on_message)(ws_conn_t *c, const vc_ws_message_t *m);
    /* The socket is gone (either side closed it, or an error): the
     * connection is freed after this returns. */
    void (*on_closed)(ws_conn_t *c);
    /* The upgrade is done (the 101 sent): the first thing the protocol
     * may send. May be NULL. */
    void (*on_open)(ws_conn_t *c);
} ws_callbacks_t;

typedef struct ws_options {
    vc_ws_limits_t limits;
    size_t max_queue; /* bytes queued for a client before it is cut */
} ws_options_t;

/* Checks req is a WebSocket handshake (RFC 6455 4.2.1): NULL with why set
 * and an answer status if not (400, or 426 for a version we do not
 * speak), which the caller sends. Otherwise sends the 101 and returns the
 * connection; on_open follows once the 101 is written. data is the
 * caller's. */
ws_conn_t *ws_upgrade(front_t *f, h2o_req_t *req, const ws_callbacks_t *cb, const ws_options_t *opt, void *data,
                      int *status, const char **why);

/* 1 if req asks for a WebSocket (Upgrade: websocket), well formed or not. */
int ws_is_upgrade(h2o_req_t *req);

/* Queues o (taking a reference of its own). Returns 0, or -1 if the
 * connection is closing or the queue is over its bound, in which case it
 * is closed with 1008. */
int ws_send(ws_conn_t *c, ws_out_t *o);
/* The same for one frame made here. */
int ws_send_text(ws_conn_t *c, const char *text, size_t len);
/* Sends a close frame after what is queued, and closes the socket once the
 * client answers it (or at once if it already sent its own). */
void ws_close(ws_conn_t *c, uint16_t code, const char *reason);

void *ws_data(const ws_conn_t *c);
/* Milliseconds (vc_mono_ms) of the last bytes read from the client. */
uint64_t ws_last_read_ms(const ws_conn_t *c);
/* 1 once a close was sent or the socket is going. */
int ws_closing(const ws_conn_t *c);
/* 1 if it is being closed for not reading (its queue passed the bound). */
int ws_was_cut(const ws_conn_t *c);

#endif
