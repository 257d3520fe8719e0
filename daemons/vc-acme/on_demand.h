/*
 * On-demand TLS in vc-acme (vc_acme.h): the hosts fronts want, read from
 * the bus; the operator's ask URL, which says which of them may have a
 * certificate; and a rate limit on new ones. Without the ask URL anyone
 * could make the suite order certificates for names they choose, which is
 * why it is required.
 */
#ifndef VC_ACME_ON_DEMAND_H
#define VC_ACME_ON_DEMAND_H

#include "vc_bus.h"

#include <stddef.h>
#include <stdint.h>

typedef struct on_demand on_demand_t;

/* Subscribes to what the fronts publish on bus_out. */
on_demand_t *on_demand_new(void *zctx, const char *bus_out);
void on_demand_free(on_demand_t **od);
/* The subscription, to poll. */
void *on_demand_socket(on_demand_t *od);

/* Reads what arrived: each host a CA could issue for is queued once (up
 * to 64), unless refused in the last minute. */
void on_demand_read(on_demand_t *od);

/* The next queued host for which known() is 0 (malloc'd), if the rate
 * limit (per_hour new certificates an hour) has one left; NULL if none.
 * A host over the limit is refused (log line, acme.on_demand.refused). */
char *on_demand_next(on_demand_t *od, vc_bus_t *bus, int64_t per_hour, int (*known)(void *arg, const char *host),
                     void *arg);
/* The ask URL said yes to a new host: one of the rate limit's taken.
 * Hosts it refuses take none, so names an attacker makes up cannot spend
 * the limit of the hosts the operator wants. */
void on_demand_take(on_demand_t *od);

/* host was refused (why): a log line, acme.on_demand.refused, and no
 * question about it for a minute. */
void on_demand_refuse(on_demand_t *od, vc_bus_t *bus, const char *host, const char *why);

/* GET URL?domain=HOST (URL&domain= if it has a query), as Caddy asks: 1
 * if the answer is 200, 0 if another status (err says which), -1 if it
 * could not be asked (err says why). No redirect is followed; 5 s. */
int on_demand_ask(const char *url, const char *host, char *err, size_t errlen);

#endif
