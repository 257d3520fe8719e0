/*
 * Prometheus metrics of the daemons that serve no HTTP of their own
 * (vc-mesh): each writes its text, whole, to RUN/metrics/DAEMON.prom
 * (a rename, so a reader never sees half), and the front that serves
 * /metrics appends every such file that is fresh. A daemon that stopped
 * writing (it died) drops out after VC_METRICS_STALE_S.
 */
#ifndef VC_METRICS_H
#define VC_METRICS_H

#include "vc_config.h"

#include <stdio.h>

#define VC_METRICS_STALE_S 10

/* Writes daemon's metrics: 0, or -errno. */
int vc_metrics_publish(const vc_config_t *cfg, const char *daemon, const char *text, size_t len);
/* The same, of what write() prints (given arg). */
int vc_metrics_publish_from(const vc_config_t *cfg, const char *daemon, void (*write)(FILE *out, const void *arg),
                            const void *arg);
/* Appends to out every daemon's fresh metrics. */
void vc_metrics_gather(const vc_config_t *cfg, FILE *out);

#endif
