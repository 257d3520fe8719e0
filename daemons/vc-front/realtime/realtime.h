/*
 * Realtime in the front: the Pusher protocol over WebSocket (pusher.c),
 * its HTTP API (pusher_api.c), and PHP's vc_publish() (a Publish on a
 * worker's link), on rooms shared by every front process (rooms.h).
 * realtime.c is the seam backend that hands them their requests.
 */
#ifndef VC_FRONT_REALTIME_H
#define VC_FRONT_REALTIME_H

#include "core/front.h"

#include <stdio.h>
#include "request.pb-c.h"
#include "vc_realtime.h"

/* What realtime keeps for a site. */
typedef struct rt_site {
    site_rt_t *site;
    vc_rt_app_t *apps; /* [0] is where vc_publish() goes */
    size_t napps;
    /* Mercure's JWT keys: the site's settings, else the first app's
     * secret; NULL: no hub on this site. */
    const char *mercure_publisher_key, *mercure_subscriber_key;
    h2o_pathconf_t *streams; /* answers that stream as they come: no compression */
} rt_site_t;

typedef struct rt_stats {
    uint64_t connections;       /* Pusher connections open now */
    uint64_t connections_total; /* opened since start */
    uint64_t connections_cut;   /* closed for not reading, or for silence */
    uint64_t subscribe_refused; /* bad authorisation, a bad name, over the limit */
    uint64_t client_events;     /* relayed from clients */
    uint64_t client_events_refused;
    uint64_t api_calls, api_refused; /* HTTP API */
    uint64_t published;              /* messages sent to the bus from here */
    uint64_t publish_dropped;        /* the bus's queue was full */
    uint64_t php_published;          /* of which vc_publish() */
} rt_stats_t;

extern rt_stats_t rt_stats;

const vc_rt_app_t *rt_app_by_key(const rt_site_t *rs, const char *key, size_t len);
const vc_rt_app_t *rt_app_by_id(const rt_site_t *rs, const char *id, size_t len);

/* A Pusher channel name: 1 to 164 of [A-Za-z0-9_-=@,.;] (Pusher's rule). */
int rt_channel_name_ok(const char *name, size_t len);

/* Publishes an event on app's channel: to the bus, and so to every
 * subscriber of every front. except: a socket id not to send it to, or
 * NULL. 0, or -1 if it was dropped. */
int rt_publish(const vc_rt_app_t *app, const char *channel, const char *event, const char *data, size_t data_len,
               const char *except, const char *user_id);

/* The WebSocket side (pusher.c). */
int pusher_take(front_t *f, rt_site_t *rs, h2o_req_t *req, h2o_iovec_t key);
void pusher_tick(front_t *f);
/* Closes every connection with 1001 (the front stops or is replaced). */
void pusher_going_away(void);

/* Mercure (mercure.c): the hub at /.well-known/mercure. */
int mercure_take(front_t *f, rt_site_t *rs, h2o_req_t *req);
void mercure_start(void);
/* vc_mercure_publish() from a request of the site (a Publish with topics). */
void mercure_php_publish(rt_site_t *rs, const Vc__Publish *p);
void mercure_tick(front_t *f);
void mercure_going_away(void);

/* Socket.IO (socketio.c): a request under the site's socketio.path;
 * origin_ok: whether its page may connect (as for the Pusher protocol). */
int socketio_take(front_t *f, rt_site_t *rs, h2o_req_t *req, int origin_ok);
void socketio_tick(void); /* pings, their timeouts, the connect timeout */
void socketio_going_away(void);
/* vc_socketio_*() from a request of the site: checked, then to the bus. */
void socketio_php_publish(rt_site_t *rs, const Vc__SioOp *op);

/* The HTTP API (pusher_api.c): rest is the path after "/apps/ID". */
int pusher_api_take(front_t *f, rt_site_t *rs, h2o_req_t *req, const vc_rt_app_t *app, h2o_iovec_t rest);

#endif
