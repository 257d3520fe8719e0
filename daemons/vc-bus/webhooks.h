/*
 * The apps' webhooks, as Pusher sends them: the app's server hears when a
 * channel becomes occupied or vacated, when a presence member comes or
 * goes, and of client events. Each POST carries {"time_ms", "events": [..]}
 * signed with the app's secret (X-Pusher-Key, X-Pusher-Signature: the
 * HMAC-SHA256 of the body in hex), so Laravel's and Pusher's libraries
 * check it as they would Pusher's.
 *
 * vc-bus sends them because it is where the node's rooms are counted. A
 * thread of their own posts them, so a slow app never slows the relay.
 * Each webhook (app and URL) has its queue, in order: events that came
 * while one was on its way go in the next POST (up to 100 in one). An
 * answer other than 2xx, or none in 5 s, is tried again after 1 s,
 * doubling to a minute, for 5 minutes; then those events are dropped and
 * logged. A queue holds at most 10,000 events; more are dropped, counted
 * and logged. Queued events are lost with the bus.
 */
#ifndef VC_BUS_WEBHOOKS_H
#define VC_BUS_WEBHOOKS_H

#include "vc_config.h"

#include <jansson.h>
#include <stdint.h>

typedef struct webhooks webhooks_t;

/* The webhooks of cfg's sites (site.realtime_webhooks, for each app of the
 * site); starts the thread that posts them. */
webhooks_t *webhooks_new(const vc_config_t *cfg);
/* Stops the thread (a POST on its way is abandoned); drops what waits. */
void webhooks_destroy(webhooks_t **w);
/* A reload: the webhooks of the new configuration. A webhook that stays
 * (same app, same URL) keeps its queue. */
void webhooks_configure(webhooks_t *w, const vc_config_t *cfg);

/* An event of room "APP_ID:CHANNEL" for the app's webhooks that want it:
 * name is a webhook event's ("channel_occupied"), fields the event's own
 * (user_id...; NULL: none), taken. */
void webhooks_event(webhooks_t *w, const char *room, const char *name, json_t *fields);

typedef struct webhooks_counts {
    uint64_t posted;  /* POSTs answered 2xx */
    uint64_t failed;  /* POSTs that were not (each tried again) */
    uint64_t dropped; /* events given up on, or over a full queue */
    uint64_t queued;  /* events waiting now */
} webhooks_counts_t;
void webhooks_counts(webhooks_t *w, webhooks_counts_t *c);

#endif
