#ifndef VC_FRONT_LISTENERS_H
#define VC_FRONT_LISTENERS_H
/* The front's listening sockets and the accept of clients: listeners.c. */
#include "front.h"

/* Takes the supervisor's listeners (VC_LISTEN_FDS) or binds the
 * configured ones, and accepts on each from the front's loop. -1 (logged)
 * if one cannot be had. */
int listeners_open(front_t *f);
/* Stops accepting on every listener: at stop, the next front takes them. */
void listeners_close(void);

#endif
