/* live: the dashboard's samples, a second each, over SSE (live.c). */
#ifndef VC_PANEL_LIVE_H
#define VC_PANEL_LIVE_H

#include "panel.h"

/* Subscribes to the bus (p->sub) and watches it on p's loop. */
live_t *live_new(panel_t *p);
void live_destroy(live_t **l);
/* Once a second: a sample into the hour kept, and to every dashboard. */
void live_tick(live_t *l);
/* GET /api/live: the hour so far, then a sample a second, as SSE. */
void live_subscribe(preq_t *r);
/* The dashboards open now. */
size_t live_clients(const live_t *l);

#endif
