/*
 * The HTTP side of Socket.IO's handshake (socketio.c): the query's
 * parameters, and engine.io's refusals, answered as socket.io 4.8 answers
 * them (status, type and body).
 */
#ifndef VC_FRONT_SIO_HTTP_H
#define VC_FRONT_SIO_HTTP_H

#include <h2o.h>

/* The query parameter name's value (undecoded: these are short tokens),
 * or NULL. */
const char *sio_query_param(h2o_req_t *req, const char *name, char *buf, size_t cap);

/* engine.io's error codes (its Server.errors). */
enum { SIO_E_TRANSPORT, SIO_E_SID, SIO_E_METHOD, SIO_E_BAD, SIO_E_FORBIDDEN, SIO_E_PROTOCOL };

/* As the reference refuses: a WebSocket handshake with a plain 400 and the
 * message; any other request with JSON, 403 for Forbidden. Returns 1. */
int sio_refuse(h2o_req_t *req, int upgrade, int code);

/* Answers req with status, type and body (copied). Returns 1. */
int sio_answer(h2o_req_t *req, int status, const char *type, const char *body, size_t len);

#endif
