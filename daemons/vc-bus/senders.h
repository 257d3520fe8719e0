/*
 * Who may speak on the bus. bus-in is open to every local user, since
 * each PHP pool publishes its own events as its own user; so the bus
 * believes an event only as far as its sender is trusted, by the
 * kernel's word on who connected (SO_PEERCRED):
 *   - the suite's own user, or root: any event;
 *   - a pool's user: only its pools' "php." facts, under the name of one
 *     of the pools that user runs;
 *   - anyone else: nothing (dropped and counted).
 * An event names no command, but some drive one: vc-acme orders a
 * certificate on "tls.on_demand.wanted", and `vc status` reads the
 * journal. A tcp:// bus-in is CurveZMQ's to guard (vc_curve.h).
 */
#ifndef VC_BUS_SENDERS_H
#define VC_BUS_SENDERS_H

#include "event.pb-c.h"
#include "vc_config.h"

#include <zmq.h>

typedef struct senders senders_t;

/* ipc: whether the socket is bound to ipc:// (else every sender is let
 * through: tcp:// peers were let in by CurveZMQ). */
senders_t *senders_new(const vc_config_t *cfg, int ipc);
/* The pools' users again, after a reload. */
void senders_configure(senders_t *s, const vc_config_t *cfg);
void senders_destroy(senders_t **s);

/* 1 if the event (first frame first, unpacked env) may pass, else 0 with
 * a log line now and then. */
int senders_allow(senders_t *s, zmq_msg_t *first, const Vc__Envelope *env);
/* Events refused so far. */
uint64_t senders_refused(const senders_t *s);

#endif
