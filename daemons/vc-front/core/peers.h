/*
 * Connections open per client address, for front.max_connections_per_address:
 * 20,000 idle connections from two addresses filled max_connections, and
 * every other client was refused for the idle timeout.
 */
#ifndef VC_FRONT_PEERS_H
#define VC_FRONT_PEERS_H

#include <sys/socket.h>

typedef struct peers peers_t;

peers_t *peers_new(void);
void peers_destroy(peers_t **p);

/* Counts a connection from sa, unless sa already has limit open: then
 * returns -1 and counts nothing. 0: counted (or an address-less peer). */
int peers_add(peers_t *p, const struct sockaddr *sa, unsigned limit);

/* A connection from sa closed (each peers_add that returned 0, once). */
void peers_remove(peers_t *p, const struct sockaddr *sa);

#endif
