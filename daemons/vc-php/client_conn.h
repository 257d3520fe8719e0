/*
 * A client's connection the front lent this worker (docs/php.md, "Lent
 * connections"): the worker reads the connection's next requests itself
 * and writes their answers, as the front would have, byte for byte
 * (libcommon/vc_http1.h), until a request is not one it may serve, the
 * connection idles, or the front asks for it back. It then hands the
 * connection back with the bytes it read and did not serve.
 *
 * What a request runs is decided by the front, once: its first request's
 * RequestHead (the lease) says the script, the document root and the
 * site's parameters for that Host and path. A next request for the same
 * Host and path reuses it with its own method, target, query, headers and
 * body; any other goes back to the front, which routes it.
 *
 * No link I/O here: worker_link.c reads the lend and says what became of
 * the connection.
 */
#ifndef VC_PHP_CLIENT_CONN_H
#define VC_PHP_CLIENT_CONN_H

#include "sapi.h"
#include "vc_lent_quiet.h"

#include <stddef.h>
#include <stdint.h>

typedef struct client_conn client_conn_t;

/* What the front says of a connection it lends (libcommon/vc_wire.h). */
#define CLIENT_TRUSTED 1  /* its client is a trusted proxy: forwarding headers reach PHP */
#define CLIENT_COMPRESS 2 /* the front compresses the site's answers: a request that may want it goes back */

/* fd: the connection; lease: request 1's FrontMessage (taken); flags:
 * CLIENT_*; bytes: what the front read of it, request 1's head first. */
client_conn_t *client_conn_open(int fd, void *lease, int flags, const void *bytes, size_t len, size_t max_body);

typedef enum client_conn_step {
    CLIENT_REQUEST,   /* r is the next request: run it, then client_conn_done() */
    CLIENT_WAIT,      /* nothing to do until its descriptor is readable, or *wait_ms pass */
    CLIENT_HAND_BACK, /* the connection goes back to the front: client_conn_unread() */
    CLIENT_CLOSED,    /* the connection is closed (the client left, or an answer said close) */
    CLIENT_LOG,       /* access-log records wait: send client_conn_log()'s, then call again */
} client_conn_step_t;

/* The next thing to do for c, without waiting: what the client sent
 * is read and parsed as far as it goes. back: hand the connection back
 * before reading another request (the front asked). */
client_conn_step_t client_conn_step(client_conn_t *c, int back, vc_request_t *r, int *wait_ms);

/* Where c says whether it is quiet (libcommon/vc_lent_quiet.h): the
 * front's word for it, id, in q. */
void client_conn_tell_quiet(client_conn_t *c, vc_lent_quiet_t *q, uint32_t id);

/* Its descriptor, to wait on (POLLIN) after CLIENT_WAIT. */
int client_conn_fd(const client_conn_t *c);

/* What PHP emits for c's request (vc_request_t.emit's contract). */
void client_conn_emit(vc_request_t *r, int final);

/* The request's answer is whole: 1 if the connection goes on, 0 if it
 * was closed (the answer said close, or the client is gone). */
int client_conn_done(client_conn_t *c, vc_request_t *r);

/* The bytes read and not served (a request's head as the client sent
 * it first), for the hand-back; valid until client_conn_free(). */
const char *client_conn_unread(client_conn_t *c, size_t *len);

/* The access-log records of the requests served since the last call
 * (vc_lent_log.h), if a batch is due (all: whatever waits); NULL if none.
 * Valid until the next call on c. */
const char *client_conn_log(client_conn_t *c, int all, size_t *len);

/* Requests served on c. */
uint64_t client_conn_served(const client_conn_t *c);

/* Closes this process's copy of the descriptor and frees c. */
void client_conn_free(client_conn_t **c);

#endif
