/*
 * latency: each answer's time to its head (from the request's first byte
 * to the response's start: what PHP, the cache or the disk made it wait,
 * never how long a download, a WebSocket or an event stream lasted) in a
 * log-scale histogram, and its status class; metrics_tick() takes the
 * second's p50, p99 and counts into front.metrics (the panel's dashboard).
 */
#ifndef VC_FRONT_LATENCY_H
#define VC_FRONT_LATENCY_H

#include <h2o.h>
#include <stdint.h>

typedef struct latency_second {
    double p50_ms, p99_ms; /* 0 with no answer */
    uint64_t status[6];    /* [2] 2xx ... [5] 5xx */
} latency_second_t;

/* Counts the answers of a site's path (front_path_filters). */
void latency_register(h2o_pathconf_t *pathconf);
/* The figures since the last call, and starts again. */
void latency_take(latency_second_t *out);

#endif
