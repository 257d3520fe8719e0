/*
 * The path to vc-php. A pool is, for the front, a link (libcommon/vc_link.h)
 * to the broker of the pool's current process at the "php" endpoint, read
 * and written by the h2o event loop itself (backend.c), plus the links to
 * processes that are leaving (vc restart php) and still finish what they
 * hold (php_pool.c). A request leaves as [FrontMessage][body]; the answer
 * streams back as BackMessages and is fed to h2o as it arrives. Requests
 * made while the pool is away (a crash) wait in the link's buffer and
 * leave when it is back; it is tried every 100 ms. Over a Unix socket the
 * pool also lends the front workers of its own, which it then talks to
 * directly (lent.c).
 */
#ifndef VC_FRONT_BACKEND_H
#define VC_FRONT_BACKEND_H

#include "core/front.h"

typedef struct php_pool php_pool_t;
typedef struct backend backend_t;
#include "request.pb-c.h"

php_pool_t *php_pool_new(front_t *f, const vc_pool_t *conf, const char *endpoint);
void php_pool_destroy(php_pool_t **pool);

/* Sends the request of site s to PHP and takes charge of answering req.
 * head is borrowed (its id is set here). Returns 0, or -1 once it
 * answered req itself (429, 503). */
int php_pool_submit(php_pool_t *pool, site_rt_t *s, h2o_req_t *req, Vc__RequestHead *head);

/* Once a second: 504 for requests PHP has not begun to answer in
 * front.php_timeout; sets php_waiting on the connections PHP is working
 * for (the watchdog reads it); lets go of processes that left. */
void php_pool_tick(php_pool_t *pool);

/* Requests waiting for an answer. */
size_t php_pool_inflight(const php_pool_t *pool);

#endif
