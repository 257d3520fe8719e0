/*
 * The front's one request handler: site by Host, redirects and HSTS, the
 * route (PHP, static, refusal), then PHP through the backend or the site's
 * file handler.
 */
#ifndef VC_FRONT_HANDLER_H
#define VC_FRONT_HANDLER_H

#include "front.h"

/* Registers the handler on pathconf. */
void handler_register(front_t *f, h2o_pathconf_t *pathconf);

#endif
