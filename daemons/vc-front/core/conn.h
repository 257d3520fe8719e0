#ifndef VC_FRONT_CONN_H
#define VC_FRONT_CONN_H
/* A client connection's state (conn_state_t, front.h) from accept to
 * close: conn.c. */
#include "front.h"

/* The state of a new connection on sock (fd, from peer), counted in the
 * front's connections and listed in f->conns until the socket closes. */
conn_state_t *conn_state_add(front_t *f, h2o_socket_t *sock, int fd, const struct sockaddr_storage *peer);
/* Drops one reference; the last frees it. */
void conn_state_release(conn_state_t *c);
/* The state of a client connection's socket, or NULL. Borrowed. */
conn_state_t *conn_state_of(h2o_socket_t *sock);
/* The same for the connection a request came on. */
conn_state_t *conn_state_of_req(h2o_req_t *req);
/* At front.max_connections: cuts the connection idle the longest, to make
 * room for a new client. 1 if one was cut, 0 if none was idle. */
int conn_evict_idle(front_t *f);

#endif
