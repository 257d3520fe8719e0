/*
 * A plaintext HTTP/1.1 connection passed out of h2o, to be served by
 * another process (a lent worker: docs/php.md, "Lent connections"), and
 * taken back as if just accepted, with the bytes that process read from
 * it and did not serve.
 *
 * libh2o 2.2.5 has no call that lets go of an HTTP/1 connection without
 * a word. h2o_socket_export() takes the descriptor and the bytes read out
 * of the socket, but leaves the connection pointing at the socket it
 * freed; h2o_http1_upgrade() ends a connection, but writes an answer's
 * head first. conn_pass_out() does both: the connection is given a socket
 * of its own whose peer is gone, to which the upgrade's head is written
 * and fails, and h2o frees the connection as after any failed write. That
 * needs the connection's socket field, which lib/http1.c keeps first
 * after its h2o_conn_t; the field is checked against what h2o's own
 * get_socket() says before it is written, and a libh2o laid out otherwise
 * passes nothing (logged once).
 */
#ifndef VC_FRONT_CONN_PASS_H
#define VC_FRONT_CONN_PASS_H

#include <h2o.h>

typedef struct conn_passed {
    int fd;
    char *bytes; /* read from it and not yet served, from the passed request's head on */
    size_t len;
    /* The socket's on_close, which h2o did not call: the front's state
     * for the connection, ended by conn_pass_end() or back with the
     * connection. */
    void (*on_close)(void *);
    void *on_close_data;
} conn_passed_t;

/* Why req's connection cannot be passed as it stands, or NULL: it must be
 * plaintext HTTP/1.x, with nothing of req's answer begun and no body
 * (h2o decodes a chunked one in place, and a 100 Continue is sent), and
 * the bytes h2o holds must begin with req's head as the client sent it
 * (an absolute-form target is rewritten in place). */
const char *conn_pass_refusal(h2o_req_t *req);

/* Takes req's connection out of h2o, which ends it without writing a
 * byte, without a line in the access log, and without calling the
 * socket's on_close (the caller keeps its own state for the connection).
 * 0, or -1 with the connection left to h2o as it was. */
int conn_pass_out(h2o_req_t *req, conn_passed_t *out);

/* A socket on loop for a passed connection coming back, its bytes read
 * already (p->bytes is freed), its on_close as before the pass. The
 * caller calls h2o_accept(), which serves what was read before it reads
 * more. */
h2o_socket_t *conn_take_back(h2o_loop_t *loop, conn_passed_t *p);

/* The passed connection will not come back: its descriptor is closed
 * (the client sees the end once no other process holds it) and its
 * on_close runs. */
void conn_pass_end(conn_passed_t *p);

#endif
