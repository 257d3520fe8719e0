/*
 * Engine.IO's HTTP long-polling transport for one session: the packets
 * the server has for the client, queued until a GET takes them (joined by
 * the record separator, as engine.io 6 writes a payload), and the GET
 * held until there are some. Bounded as a WebSocket's queue is: a client
 * that stops polling is cut, not grown.
 */
#ifndef VC_FRONT_SIO_POLLING_H
#define VC_FRONT_SIO_POLLING_H

#include <h2o.h>

typedef struct sio_poll sio_poll_t;

sio_poll_t *sio_poll_new(size_t max_queue);
/* A held GET is answered with what is queued, then the rest is dropped. */
void sio_poll_free(sio_poll_t *p);

/* Queues one Engine.IO packet's text (type digit first) and answers a
 * held GET. 0, or -1 if the queue would pass its bound. */
int sio_poll_push(sio_poll_t *p, const char *packet, size_t len);
/* A binary message, written "b" and its base64. */
int sio_poll_push_binary(sio_poll_t *p, const void *data, size_t len);

/* A GET for the session: answered now if packets wait, else held until
 * one comes. -1 if a GET is held already (engine.io's "overlap from
 * client": the caller refuses this one and ends the session). */
int sio_poll_get(sio_poll_t *p, h2o_req_t *req);
/* Whether a GET is held. */
int sio_poll_holding(const sio_poll_t *p);
/* Bytes queued. */
size_t sio_poll_queued(const sio_poll_t *p);

/* Takes what is queued, as packets' texts joined by the record separator
 * (malloc'd, *len set; NULL if none): the session moves to a WebSocket. */
char *sio_poll_take(sio_poll_t *p, size_t *len);

#endif
