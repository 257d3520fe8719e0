/*
 * Pool size: how many workers the pool wants now.
 *
 *   workers = N                  N, always (until `vc scale`)
 *   min_workers, max_workers     grow by one each tick while requests wait
 *                                with no idle worker, shrink by one after
 *                                10 s with idle workers, between the two
 *   workers = "auto"             like min/max, with max from the memory
 *                                available and the measured PSS of a worker
 */
#ifndef VC_PHP_POOL_H
#define VC_PHP_POOL_H

#include <stdint.h>

#include "vc_config.h"

typedef struct pool_size {
    int64_t target, min, max;
    int dynamic, automatic;
    /* Set by `vc scale` (pool_size_set): kept across a reload that leaves
     * the configuration's sizing (php.workers, min_ and max_workers) as it
     * was; the sizing it was set under. */
    int scaled;
    int64_t scaled_under[3];
    uint64_t pressure_since_ms, idle_since_ms;
    long pss_kib; /* the last sample, for auto */
} pool_size_t;

void pool_size_init(pool_size_t *p, const vc_config_t *cfg);
/* A new generation's configuration: as pool_size_init, but a size `vc
 * scale` set stays while cfg's sizing is the one it was set under. 1 if
 * it stayed. */
int pool_size_reconfigure(pool_size_t *p, const vc_config_t *cfg);
/* A fixed size from `vc scale N`. */
void pool_size_set(pool_size_t *p, int64_t n);
/* Called each tick with the pool's state; returns the change of target
 * (+1, -1 or 0). pss_kib: a worker's PSS if sampled this tick, else 0. */
int pool_size_tick(pool_size_t *p, int idle, int busy, size_t queued, long pss_kib, uint64_t now_ms);

/* MemAvailable from /proc/meminfo, KiB. */
long pool_mem_available_kib(void);

#endif
