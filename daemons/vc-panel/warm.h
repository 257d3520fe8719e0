/* warm: the cache's warm-up from the panel (warm.c). */
#ifndef VC_PANEL_WARM_H
#define VC_PANEL_WARM_H

#include "event.pb-c.h"
#include "panel.h"

/* A cache.warm.* event from the bus (live.c subscribes to them). */
void warm_heard(const Vc__Envelope *e);
/* Once a second: the command reaped once it ends. */
void warm_tick(void);

#endif
