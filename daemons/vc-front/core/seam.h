/*
 * The seam between the front's core and its backends.
 *
 * The core (handler.c) resolves a request once: its site, the checks every
 * request passes (budgets, header limits, 421), the site's redirects, and
 * its route. Backends answer it: static files and ACME challenges (in the
 * core), the PHP pool (php/), the cache (cache/) and realtime (realtime/).
 * A backend describes its whole life in one seam_backend_t, registered
 * with SEAM_BACKEND(): how it takes requests, its start, tick, stop and
 * status, its counters, its control verbs. The core never names one, and
 * a new backend is its own folder and a line in CMake
 * (daemons/vc-front/CMakeLists.txt; ops/check_layers.py holds the rule).
 *
 * Two stages ask backends, each in their order:
 *   SEAM_EARLY    before the site's redirects (ACME's HTTP-01 answers must
 *                 not be sent to HTTPS), with no route yet;
 *   SEAM_ROUTED   once the path is resolved (static file, PHP script, ...).
 * The first backend that takes a request answers it. A routed request that
 * none takes gets the core's answer for its route (404, 403, 400, or the
 * directory redirect).
 *
 * Backends never call each other: what one offers another goes through
 * the core, by role (php_params, php_publish).
 */
#ifndef VC_FRONT_SEAM_H
#define VC_FRONT_SEAM_H

#include "front.h"
#include "htaccess_rewrite.h"
#include "request.pb-c.h"
#include "route.h"
#include "vc_ctl.h"

#include <stdio.h>

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
    /* SEAM_ROUTED only: what a .htaccess's rewrite rules made of it (the
     * route is the rewritten path's), or NULL. */
    const htaccess_rewritten_t *rewritten;
    /* SEAM_ROUTED only: the route is a .htaccess's ErrorDocument script,
     * run for the front's own error answer (never one to cache). */
    int error_document;
} seam_request_t;

/* A figure the core or a backend keeps, listed once: /metrics shows it
 * as `metric` with its help and kind, `vc status` as `field`, and the
 * front.metrics event (each second with traffic) carries its change when
 * `event` is set. The core's table is in metrics.c. */
typedef struct seam_counter {
    const char *metric; /* "vc_front_cache_hits_total", or NULL */
    const char *field;  /* "cache_hits", or NULL */
    const char *help;
    int gauge; /* a level now, not a count since start */
    int event;
    const uint64_t *value;  /* where it is counted, or */
    uint64_t (*read)(void); /* how it is worked out, or */
    size_t stat;            /* the core's: offsetof(front_stats_t, FIELD) + 1 */
} seam_counter_t;

/* Backend figures the front.metrics event carries, in all. */
#define SEAM_EVENT_FIELDS 8

/* PHP parameters the backends may add to one request, in all. */
#define SEAM_PHP_PARAMS 8

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

    /* Its life in the daemon. Each may be NULL. */
    int (*start)(front_t *f);                     /* the loop runs, the ports are open; -1 stops the front (logged) */
    void (*tick)(front_t *f);                     /* once a second */
    void (*stop)(front_t *f);                     /* SIGTERM, before what is in flight may finish */
    size_t (*inflight)(const front_t *f);         /* requests it still owes an answer: the stop waits for them */
    void (*status)(front_t *f, Vc__Reply *reply); /* `vc status` fields beyond its counters */
    /* Its control verbs (their ctx is the front_t): listed by the
     * front's `help` after the core's. */
    const vc_verb_t *verbs;
    size_t nverbs;
    void (*admin)(front_t *f, h2o_pathconf_t *pc); /* its handlers on the admin listener, before /metrics */
    const seam_counter_t *counters;
    size_t ncounters;

    /* Offered to the others, through the core. php_params: parameters
     * it adds to a request the PHP backend sends (room: how many more
     * fit); returns how many it wrote. php_publish: vc_publish() from a
     * PHP worker, with the site of its request (NULL if no longer known). */
    size_t (*php_params)(const site_rt_t *s, Vc__Header *h, Vc__Header **hp, size_t room);
    void (*php_publish)(const char *site, const Vc__Publish *p);
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

/* The registered backends, in stage and order: for the core's loops. */
const seam_backend_t *const *seam_backends(size_t *n);

/* Each backend's start in order: 0, or -1 once one refused. */
int seam_start(front_t *f);
void seam_tick(front_t *f);
void seam_stop(front_t *f);
/* Requests the backends still owe an answer, in all. */
size_t seam_inflight(const front_t *f);
/* The core's counters (core, ncore) with a field, then every backend's,
 * then the backends' own status fields. */
void seam_status(front_t *f, const seam_counter_t *core, size_t ncore, Vc__Reply *reply);
/* Runs cmd from one table: the core's verbs, then each backend's; `help`
 * lists them all. */
void seam_command(front_t *f, const vc_verb_t *core, size_t ncore, const Vc__Command *cmd, Vc__Reply *reply);
void seam_admin(front_t *f, h2o_pathconf_t *pc);
/* A counter's value now. */
uint64_t seam_counter_value(const front_t *f, const seam_counter_t *c);
/* What the backends add to a request for PHP: at most SEAM_PHP_PARAMS. */
size_t seam_php_params(const site_rt_t *s, Vc__Header *h, Vc__Header **hp);
/* vc_publish() from a worker, to the backends that take it. */
void seam_php_publish(const char *site, const Vc__Publish *p);

#endif
