/*
 * Metrics: the front's counters as Prometheus text on the admin listener
 * (127.0.0.1:8081 by default, /metrics), and once a second, when there was
 * traffic, a "front.metrics" event on the bus with that second's counts.
 */
#ifndef VC_FRONT_METRICS_H
#define VC_FRONT_METRICS_H

#include "front.h"

/* The admin host: /metrics. */
h2o_hostconf_t *metrics_register(front_t *f);
/* Called once a second. */
void metrics_tick(front_t *f);
/* The core's own counters, in a table as each backend's (seam.h); n: how
 * many. */
struct seam_counter;
const struct seam_counter *metrics_core_counters(size_t *n);

#endif
