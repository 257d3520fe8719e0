/*
 * The seam between the front's core and what answers a request.
 *
 * The core (handler.c) resolves a request once: its site, the checks every
 * request passes (budgets, header limits, 421), the site's redirects, and
 * its route. Backends answer it: static files, the PHP pool, and next the
 * cache, realtime, the panel and ACME challenges. A backend is one file
 * that describes itself in a seam_backend_t and registers it with
 * SEAM_BACKEND(); the core never names one.
 *
 * Two stages ask backends, each in their order:
 *   SEAM_EARLY    before the site's redirects (ACME's HTTP-01 answers must
 *                 not be sent to HTTPS), with no route yet;
 *   SEAM_ROUTED   once the path is resolved (static file, PHP script, ...).
 * The first backend that takes a request answers it. A routed request that
 * none takes gets the core's answer for its route (404, 403, 400, or the
 * directory redirect).
 */
#ifndef VC_FRONT_SEAM_H
#define VC_FRONT_SEAM_H

#include "front.h"
#include "route.h"

typedef enum seam_stage {
    SEAM_EARLY,
    SEAM_ROUTED,
} seam_stage_t;

/* A request as the core resolved it; borrowed by a backend for the call. */
typedef struct seam_request {
    front_t *f;
    site_rt_t *site;
    h2o_req_t *req;
    int https;
    route_kind_t kind;    /* SEAM_ROUTED only */
    const route_t *route; /* SEAM_ROUTED only; valid during the call */
} seam_request_t;

typedef struct seam_backend {
    const char *name; /* for logs */
    seam_stage_t stage;
    int order; /* within its stage: lower is asked first */
    /* At start, for each site: what the backend keeps for it (returned to
     * take), or NULL. May be NULL. Returns -1 to refuse the start (logged
     * by the backend). */
    int (*site_init)(front_t *f, site_rt_t *s, void **state);
    /* 1 if it took the request (it has answered, or will), 0 if not its. */
    int (*take)(const seam_request_t *r, void *state);
} seam_backend_t;

/* Backends a build may hold; registering more is a build error caught at
 * start (abort with a message). */
#define SEAM_MAX_BACKENDS 16

void seam_register(const seam_backend_t *b);
#define SEAM_BACKEND(var)                                                                                              \
    __attribute__((constructor)) static void var##_register(void)                                                      \
    {                                                                                                                  \
        seam_register(&var);                                                                                           \
    }

/* What backend b keeps for site s (its site_init's state), or NULL. */
void *seam_state(const site_rt_t *s, const seam_backend_t *b);

/* Each backend's site_init for every site. 0, or -1. */
int seam_init_sites(front_t *f);
/* Asks the backends of stage in order: 1 once one took r, else 0. */
int seam_dispatch(seam_stage_t stage, const seam_request_t *r);
/* The same, asking only the backends after `after` (one that took r and
 * hands it on later: the cache, once a request it held waits no more). */
int seam_dispatch_after(seam_stage_t stage, const seam_request_t *r, const seam_backend_t *after);

#endif
