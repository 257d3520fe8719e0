/*
 * The path to vc-php: one link (libcommon/vc_link.h) to the pool's broker
 * at the "php" endpoint, read and written by the h2o event loop itself.
 * A request leaves as [FrontMessage][body]; the answer streams back as
 * BackMessages and is fed to h2o as it arrives. Requests made while the
 * pool is away (a restart) wait in the link's buffer and leave when it is
 * back; it is tried every 100 ms. Over a Unix socket the pool also lends
 * the front workers of its own, which it then talks to directly (lent.c).
 */
#ifndef VC_FRONT_BACKEND_H
#define VC_FRONT_BACKEND_H

#include "front.h"
#include "request.pb-c.h"

backend_t *backend_new(front_t *f, const char *endpoint);
void backend_destroy(backend_t **be);

/* Sends the request to PHP and takes charge of answering req. head is
 * borrowed (its id is set here). Returns 0; on failure answers 502
 * itself. */
int backend_submit(backend_t *be, h2o_req_t *req, Vc__RequestHead *head);

/* Once a second: 504 for requests PHP has not begun to answer in
 * front.php_timeout; sets php_waiting on the connections PHP is working
 * for (the watchdog reads it). */
void backend_tick(backend_t *be);

/* Requests waiting for an answer. */
size_t backend_inflight(backend_t *be);

#endif
