/*
 * The connection watchdog: once a second, cuts client connections that
 * make no progress (see watchdog.c for what counts).
 */
#ifndef VC_FRONT_WATCHDOG_H
#define VC_FRONT_WATCHDOG_H

#include "front.h"

/* Runs after backend_tick(), which marks the connections PHP works for. */
void watchdog_tick(front_t *f);

#endif
