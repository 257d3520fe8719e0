/*
 * vc_bus: publishing events to vc-bus, and reading them back.
 *
 * On the wire an event is two frames: the topic (so subscribers filter by
 * prefix) and an Envelope (proto/event.proto). Per-request facts are never
 * sent one by one; daemons aggregate them per second.
 */
#ifndef VC_BUS_H
#define VC_BUS_H

#include <stdint.h>

#include "event.pb-c.h"

typedef struct vc_bus vc_bus_t;

/* The one-frame message bus-out sends a subscriber that subscribed to it,
 * once its link is up (ZeroMQ's XPUB welcome): no event is a topic of one
 * frame, so it is never taken for one. */
#define VC_BUS_WELCOME "vc.bus.welcome"

/* Connects to the bus input endpoint "bus-in". It is a PUSH socket, not a
 * PUB: a PUB (or XPUB) drops whatever it sends before the bus's
 * subscription reaches it, and libzmq 4.3.4's XSUB does not reliably replay
 * its subscription to a publisher that joins late, so a daemon's "started"
 * event was lost. PUSH queues while the bus is away, even across a bus
 * restart. */
vc_bus_t *vc_bus_new(void *zctx, const char *endpoint, const char *source);
void vc_bus_destroy(vc_bus_t **bus);

/* Publishes topic with key/value string pairs, ended by NULL:
 *   vc_bus_publish(bus, "php.worker.exited", VC__SEVERITY__INFO,
 *                  "pid", "123", "status", "0", NULL);
 * Never blocks: with a full queue (the bus gone for long), it is dropped.
 * Returns 0 when handed to ZeroMQ. */
int vc_bus_publish(vc_bus_t *bus, const char *topic, Vc__Severity sev, ...) __attribute__((sentinel));
/* The same with the key, value pairs in an array ending with NULL. */
int vc_bus_publishv(vc_bus_t *bus, const char *topic, Vc__Severity sev, const char *const *kv);
/* Fields an event carries at most; more are left out. */
#define VC_BUS_FIELDS_MAX 16

const char *vc_bus_severity_name(Vc__Severity s);

#endif
