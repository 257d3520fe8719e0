/*
 * The sites' background processes and schedule runs counted for
 * Prometheus (docs/background.md, "Metrics"): vc_background_events_total
 * and vc_schedule_runs_total, by site and entry, from the php.background.*
 * and php.schedule.* events their pools publish (a pool may not write the
 * metrics directory), written to RUN/metrics/vc-bus.prom once a second and
 * served by the front's /metrics with its own. Only the entries the
 * configuration names count, and only from the pool that runs them.
 */
#ifndef VC_BUS_WORK_METRICS_H
#define VC_BUS_WORK_METRICS_H

#include "event.pb-c.h"
#include "vc_config.h"

typedef struct work_metrics work_metrics_t;

work_metrics_t *work_metrics_new(void);
/* The entries of cfg (at start and at each reload; counts kept). */
void work_metrics_configure(work_metrics_t *w, const vc_config_t *cfg);
/* An event the bus let through (its sender checked). */
void work_metrics_count(work_metrics_t *w, const Vc__Envelope *env);
/* Writes the metrics, at most once a second. */
void work_metrics_tick(work_metrics_t *w, const vc_config_t *cfg);
void work_metrics_free(work_metrics_t **w);

#endif
