/*
 * The front's one request handler, its core: site by Host, the checks
 * every request passes, redirects and HSTS, the route; then the backends
 * (seam.h) answer, and the core answers what none took.
 */
#ifndef VC_FRONT_HANDLER_H
#define VC_FRONT_HANDLER_H

#include "front.h"

/* Registers the handler on pathconf. */
void handler_register(front_t *f, h2o_pathconf_t *pathconf);
/* The front's own error answer, with the site's page for status if it
 * has one (s may be NULL). Returns 0. */
int front_send_error(front_t *f, site_rt_t *s, h2o_req_t *req, int status, const char *body);
/* The same, keeping the headers req->res already has if keep is set. */
int front_send_error_keeping(front_t *f, site_rt_t *s, h2o_req_t *req, int status, const char *body, int keep);
/* The host part of an authority, without its port. */
h2o_iovec_t front_host_only(h2o_iovec_t authority);

#endif
