/*
 * Socket.IO's handlers in PHP (docs/socketio.md): each connect, event and
 * disconnect of a socket is a request of the front's own to the site's
 * handler script, made as the WebSocket handshake was (its headers, so
 * cookies and sessions, its query, its client's address), a POST whose
 * body is the event as JSON. It goes where any request of the site goes
 * (routes, .htaccess, the site's pool, its limits), with the server
 * parameter VC_SOCKETIO set, which no client request can carry; the
 * answer comes back here, never to a client.
 */
#ifndef VC_FRONT_SIO_HANDLER_H
#define VC_FRONT_SIO_HANDLER_H

#include <h2o.h>

/* What the handshake said, kept for the connection's handler calls
 * (counted: a call may outlive its connection). */
typedef struct sio_handshake sio_handshake_t;

/* The handshake of req, for the site's handler at path (its URL path,
 * "/socket.php"). */
sio_handshake_t *sio_handshake_keep(h2o_req_t *req, const char *path);
void sio_handshake_unref(sio_handshake_t *hs);

/* The handler's answer: its status (0: none came, the request failed
 * before PHP answered) and body (over SIO_ANSWER_MAX: status 0). */
typedef void (*sio_answer_cb)(void *owner, int status, const char *body, size_t len);
#define SIO_ANSWER_MAX (1 << 20)

typedef struct sio_call sio_call_t;

/* Runs the handler for kind ("connect", "event", "disconnect") with body
 * (malloc'd JSON, taken); cb(owner, ...) when it has answered, unless
 * forgotten first (cb may be NULL: a disconnect, nobody waits). *slot (if
 * slot) holds the call until it is answered, then is set to NULL, before
 * cb: this may happen before sio_call returns. */
void sio_call(sio_handshake_t *hs, const char *kind, char *body, sio_answer_cb cb, void *owner, sio_call_t **slot);
/* The owner is gone: its call runs on, its answer is dropped. */
void sio_call_forget(sio_call_t *c);

/* Handler calls made, answered, and failed (no answer, or not 2xx). */
void sio_handler_counts(uint64_t *calls, uint64_t *failed);

#endif
