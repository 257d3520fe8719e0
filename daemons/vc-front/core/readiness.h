/*
 * readiness: GET /ready and /ready/NAME on the admin listener, for
 * orchestrators (a pod's readinessProbe, a load balancer's check). A
 * thread asks each daemon the configuration runs for its status once a
 * second while probes come, every 10 s while none does (so a daemon
 * that hangs never holds the front's loop, and a suite nobody probes
 * pays next to nothing); the handler answers from what it found:
 *
 *   /ready/NAME  200 "NAME: ready", or 503 with why (not answering, no
 *                PHP worker ready, ...). NAME is a daemon's short name:
 *                front, bus, cache, php (the default pool), php.POOL,
 *                acme, mesh, nats, fed, panel.
 *   /ready       the suite: 200 when every one is ready, else 503 with
 *                a line for each that is not.
 */
#ifndef VC_FRONT_READINESS_H
#define VC_FRONT_READINESS_H

#include "vc_config.h"

#include <h2o.h>

typedef struct readiness readiness_t;

/* Starts the thread for the daemons cfg runs (cfg is read here only). */
readiness_t *readiness_start(const vc_config_t *cfg, void *zctx);
void readiness_stop(readiness_t **r);
/* Answers req if its path is /ready or /ready/...: 1, else 0. */
int readiness_answer(readiness_t *r, h2o_req_t *req);

#endif
