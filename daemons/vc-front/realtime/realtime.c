/*
 * The realtime backend: takes a site's WebSocket upgrades at /app/KEY
 * (the Pusher protocol, pusher.c) and calls to /apps/ID/... for an id of
 * one of the site's apps (the HTTP API, pusher_api.c), before the site's
 * redirects, so that an HTTP-to-HTTPS redirect never breaks a client
 * configured for ws://. Anything else under those paths is the
 * application's, as it was.
 */
#include "core/sites.h"
#include "realtime.h"
#include "vc_events.h"
#include "core/handler.h"
#include "rooms.h"
#include "sio_handler.h"
#include "sio_rooms.h"
#include "core/seam.h"
#include "vc_bus.h"
#include "vc_ctl.h"
#include "vc_log.h"
#include "vc_util.h"
#include "ws_conn.h"
#include "vc_ws.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

rt_stats_t rt_stats;

static const seam_backend_t realtime;

static rt_site_t **sites; /* every site's, for vc_publish() by site name */
static size_t nsites;
static int started; /* front.realtime: vc_publish() is taken only then */

const vc_rt_app_t *rt_app_by_key(const rt_site_t *rs, const char *key, size_t len)
{
    for (size_t i = 0; i < rs->napps; i++)
        if (strlen(rs->apps[i].key) == len && memcmp(rs->apps[i].key, key, len) == 0)
            return &rs->apps[i];
    return NULL;
}

const vc_rt_app_t *rt_app_by_id(const rt_site_t *rs, const char *id, size_t len)
{
    for (size_t i = 0; i < rs->napps; i++)
        if (strlen(rs->apps[i].id) == len && memcmp(rs->apps[i].id, id, len) == 0)
            return &rs->apps[i];
    return NULL;
}

int rt_channel_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > 164)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("_-=@,.;", c)) ||
            c == '\0')
            return 0;
    }
    return 1;
}

int rt_publish(const vc_rt_app_t *app, const char *channel, const char *event, const char *data, size_t data_len,
               const char *except, const char *user_id)
{
    char room[512];
    snprintf(room, sizeof(room), "%s:%s", app->id, channel);
    Vc__RoomMessage m = VC__ROOM_MESSAGE__INIT;
    m.room = room;
    m.event = (char *)event;
    m.data.data = (uint8_t *)data;
    m.data.len = data_len;
    m.except = (char *)(except ? except : "");
    m.user_id = (char *)(user_id ? user_id : "");
    m.time_ms = vc_wall_ms();
    if (rooms_publish(&m) < 0) {
        if (rt_stats.publish_dropped++ % 1000 == 0)
            vc_log(VC_LOG_WARN, "realtime", "a room message was dropped: vc-bus's rooms-in is not taking them");
        return -1;
    }
    rt_stats.published++;
    return 0;
}

static void php_publish(const char *site, const Vc__Publish *p)
{
    if (!started)
        return; /* publishing is off */
    rt_site_t *rs = NULL;
    for (size_t i = 0; site && i < nsites && rs == NULL; i++)
        if (strcmp(sites[i]->site->conf->name, site) == 0)
            rs = sites[i];
    if (rs && p->sio) { /* vc_socketio_*() */
        socketio_php_publish(rs, p->sio);
        return;
    }
    if (rs && p->n_topics > 0) { /* vc_mercure_publish() */
        mercure_php_publish(rs, p);
        return;
    }
    const char *why = NULL;
    if (rs == NULL)
        why = "its request is no longer known here";
    else if (rs->napps == 0)
        why = "the site has no realtime app";
    else if (!rt_channel_name_ok(p->channel, strlen(p->channel)))
        why = "the channel name is not one of 1 to 164 of A-Z a-z 0-9 _ - = @ , . ;";
    else if (*p->event == '\0' || strlen(p->event) > 200)
        why = "the event name is empty or over 200 characters";
    else if (vc_ws_utf8_feed(0, p->data.data, p->data.len) != 0)
        why = "the data is not UTF-8";
    if (why) {
        vc_log(VC_LOG_NOTICE, "realtime", "vc_publish() to \"%s\" dropped: %s", p->channel, why);
        return;
    }
    if (rt_publish(&rs->apps[0], p->channel, p->event, (const char *)p->data.data, p->data.len, NULL, NULL) == 0)
        rt_stats.php_published++;
}

/* The site's first app as PHP parameters, VC_REALTIME_APP_ID, _KEY and
 * _SECRET (an app's own code signs its channels with the secret). */
static size_t php_params(const site_rt_t *s, Vc__Header *h, Vc__Header **hp, size_t room)
{
    const rt_site_t *rs = seam_state(s, &realtime);
    if (rs == NULL || rs->napps == 0 || room < 3)
        return 0;
    static const char *const names[] = {"VC_REALTIME_APP_ID", "VC_REALTIME_APP_KEY", "VC_REALTIME_APP_SECRET"};
    const char *values[] = {rs->apps[0].id, rs->apps[0].key, rs->apps[0].secret};
    for (size_t i = 0; i < 3; i++) {
        vc__header__init(&h[i]);
        h[i].name = (char *)names[i];
        h[i].value.data = (uint8_t *)values[i];
        h[i].value.len = strlen(values[i]);
        hp[i] = &h[i];
    }
    return 3;
}

static int site_init(front_t *f, site_rt_t *s, void **state)
{
    rt_site_t *rs = vc_calloc(1, sizeof(*rs));
    rs->site = s;
    const vc_site_t *conf = s->conf;
    char why[512];
    for (size_t i = 0; i < conf->nrealtime_apps; i++) {
        rs->apps = vc_realloc(rs->apps, (rs->napps + 1) * sizeof(*rs->apps));
        if (vc_rt_app_parse(conf->realtime_apps[i], &rs->apps[rs->napps], why, sizeof(why)) == 0)
            rs->napps++;
    }
    if (rs->napps == 0 && conf->is_default && f->settings->realtime) {
        rs->apps = vc_realloc(rs->apps, sizeof(*rs->apps));
        if (vc_rt_default_app(f->d.cfg->state_dir, &rs->apps[0], why, sizeof(why)) < 0) {
            vc_log(VC_LOG_ERR, "realtime", "%s", why);
            return -1;
        }
        rs->napps = 1;
    }
    rs->mercure_publisher_key = conf->mercure_publisher_key ? conf->mercure_publisher_key
                                : rs->napps                 ? rs->apps[0].secret
                                                            : NULL;
    rs->mercure_subscriber_key = conf->mercure_subscriber_key ? conf->mercure_subscriber_key
                                 : rs->napps                  ? rs->apps[0].secret
                                                              : rs->mercure_publisher_key;
    rs->streams = front_site_path(s, "/.streams");
    server_header_register(rs->streams);
    if (f->access_log)
        h2o_access_log_register(rs->streams, f->access_log);
    sites = vc_realloc(sites, (nsites + 1) * sizeof(*sites));
    sites[nsites++] = rs;
    *state = rs;
    return 0;
}

/* The host of "scheme://host[:port]" (brackets kept for IPv6), or len 0. */
static h2o_iovec_t origin_host(h2o_iovec_t o)
{
    const char *p = memmem(o.base, o.len, "://", 3);
    if (p == NULL)
        return h2o_iovec_init(NULL, 0);
    const char *h = p + 3, *end = o.base + o.len;
    const char *colon = *h == '[' ? memchr(h, ']', (size_t)(end - h)) : h;
    colon = colon ? memchr(colon, ':', (size_t)(end - colon)) : NULL;
    return h2o_iovec_init(h, (size_t)((colon ? colon : end) - h));
}

/* Which pages may open a WebSocket: the site's realtime_origins if it
 * lists any ("*": any), else its own (an Origin whose host is one of the
 * site's names, or the Host this request came for): a page elsewhere must
 * not use a visitor's cookies to join a channel for them (cross-site
 * WebSocket hijacking). A client that sends no Origin is not a browser,
 * and is let in unless the site lists origins. */
static int origin_allowed(const vc_site_t *conf, h2o_req_t *req)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1);
    if (i == -1)
        return conf->nrealtime_origins == 0;
    h2o_iovec_t o = req->headers.entries[i].value;
    for (size_t k = 0; k < conf->nrealtime_origins; k++) {
        const char *a = conf->realtime_origins[k];
        if (strcmp(a, "*") == 0 || (strlen(a) == o.len && strncasecmp(a, o.base, o.len) == 0))
            return 1;
    }
    if (conf->nrealtime_origins)
        return 0;
    h2o_iovec_t host = origin_host(o);
    if (host.len == 0)
        return 0; /* "null": a sandboxed or local page */
    for (size_t k = 0; k < conf->nhosts; k++)
        if (vc_host_match(conf->hosts[k], host.base, host.len))
            return 1;
    h2o_iovec_t own = req->authority;
    if (own.len == 0)
        return 0;
    const char *colon = own.len && own.base[0] == '[' ? memchr(own.base, ']', own.len) : own.base;
    colon = colon ? memchr(colon, ':', own.len - (size_t)(colon - own.base)) : NULL;
    if (colon)
        own.len = (size_t)(colon - own.base);
    return own.len == host.len && strncasecmp(own.base, host.base, host.len) == 0;
}

static int take(const seam_request_t *r, void *state)
{
    rt_site_t *rs = state;
    h2o_req_t *req = r->req;
    h2o_iovec_t path = req->path_normalized;
    if (!r->f->settings->realtime || path.len < 6)
        return 0;
    if (h2o_memis(path.base, path.len, H2O_STRLIT("/.well-known/mercure")))
        return mercure_take(r->f, rs, req);
    /* Everything under the path is engine.io's, as the reference has it. */
    const char *sio = rs->site->conf->socketio_path;
    if (sio && path.len >= strlen(sio) && memcmp(path.base, sio, strlen(sio)) == 0)
        return socketio_take(r->f, rs, req, origin_allowed(rs->site->conf, req));
    if (rs->napps == 0)
        return 0;
    if (memcmp(path.base, "/app/", 5) == 0 && ws_is_upgrade(req)) {
        h2o_iovec_t key = h2o_iovec_init(path.base + 5, path.len - 5);
        if (memchr(key.base, '/', key.len))
            return 0;
        if (!origin_allowed(rs->site->conf, req)) {
            vc_log(VC_LOG_NOTICE, "realtime",
                   "403 for a WebSocket from another site's page (its Origin is not the site's own, nor in "
                   "site.realtime_origins)");
            front_send_error(r->f, r->site, req, 403, "this page's origin may not connect\n");
            return 1;
        }
        return pusher_take(r->f, rs, req, key);
    }
    if (path.len > 6 && memcmp(path.base, "/apps/", 6) == 0) {
        const char *id = path.base + 6, *end = memchr(id, '/', path.len - 6);
        if (end == NULL)
            return 0;
        const vc_rt_app_t *app = rt_app_by_id(rs, id, (size_t)(end - id));
        if (app == NULL)
            return 0;
        return pusher_api_take(r->f, rs, req, app, h2o_iovec_init(end, (size_t)(path.base + path.len - end)));
    }
    return 0;
}

/* Once the loop is made: the link to the bus's rooms, and vc_publish(). */
static int start(front_t *f)
{
    if (!f->settings->realtime)
        return 0;
    if (rooms_start(f) < 0)
        return -1;
    started = 1;
    mercure_start();
    return 0;
}

/* Once a second, if anything moved: realtime.metrics on the bus (live
 * subscribers only, never journaled). */
static void publish_metrics(front_t *f)
{
    static rt_stats_t last;
    static uint64_t last_delivered;
    uint64_t bad, delivered = rooms_delivered(&bad);
    if (f->d.bus == NULL ||
        (delivered == last_delivered && rt_stats.published == last.published &&
         rt_stats.connections_total == last.connections_total && rt_stats.connections == last.connections))
        return;
    char conns[24], opened[24], pub[24], del[24], subs[24];
    size_t nsubs;
    rooms_count(&nsubs);
    snprintf(conns, sizeof(conns), "%llu", (unsigned long long)rt_stats.connections);
    snprintf(opened, sizeof(opened), "%llu", (unsigned long long)(rt_stats.connections_total - last.connections_total));
    snprintf(pub, sizeof(pub), "%llu", (unsigned long long)(rt_stats.published - last.published));
    snprintf(del, sizeof(del), "%llu", (unsigned long long)(delivered - last_delivered));
    snprintf(subs, sizeof(subs), "%zu", nsubs);
    vc_bus_publish(f->d.bus, VC_EVENT(REALTIME_METRICS), VC__SEVERITY__DEBUG, "connections", conns, "opened", opened,
                   "published", pub, "delivered", del, "subscriptions", subs, NULL);
    last = rt_stats;
    last_delivered = delivered;
}

static void tick(front_t *f)
{
    if (!f->settings->realtime)
        return;
    rooms_tick();
    pusher_tick(f);
    mercure_tick(f);
    socketio_tick();
    publish_metrics(f);
}

/* WebSockets: 1001, going away. */
static void stop(front_t *f)
{
    if (f->settings->realtime) {
        pusher_going_away();
        mercure_going_away();
        socketio_going_away();
    }
}

/* Rooms in a reply: at most this many, the rest counted. */
#define ROOMS_LISTED 10000

static int add_room(rt_room_t *r, void *arg)
{
    Vc__Reply *reply = arg;
    if (reply->n_records >= ROOMS_LISTED)
        return 1;
    if (strncmp(rooms_name(r), "~sio:", 5) == 0)
        return 0; /* a Socket.IO namespace's carrier: `socketio` lists its rooms */
    size_t members;
    rooms_members(r, &members);
    Vc__Record *rec = vc_reply_record(reply);
    vc_record_field(rec, "room", "%s", rooms_name(r));
    vc_record_field(rec, "subscribers", "%zu", rooms_subscribers(r));
    vc_record_field(rec, "members", "%zu", members);
    return 0;
}

/* `rooms ROOM`: a presence room's members here, a record each. */
static void list_members(const char *name, Vc__Reply *reply)
{
    rt_room_t *r = rooms_find(name);
    size_t n = 0;
    const rt_member_t *m = r ? rooms_members(r, &n) : NULL;
    vc_reply_ok(reply, "%zu members", n);
    for (size_t i = 0; i < n && i < ROOMS_LISTED; i++) {
        Vc__Record *rec = vc_reply_record(reply);
        vc_record_field(rec, "user_id", "%s", m[i].user_id);
        vc_record_field(rec, "info", "%s", m[i].info ? m[i].info : "");
        vc_record_field(rec, "connections", "%u", m[i].conns);
    }
}

/* `vc rooms`: the rooms here; with a room's name, its members. */
static void on_rooms(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)arg;
    if (cmd->n_args == 1) {
        list_members(cmd->args[0], reply);
        return;
    }
    size_t subs, n = rooms_count(&subs);
    vc_reply_ok(reply, "%zu rooms, %zu subscriptions", n, subs);
    rooms_each(add_room, reply);
}

static int add_sio_room(const char *site, const char *nsp, const char *room, size_t sockets, void *arg)
{
    Vc__Reply *reply = arg;
    if (reply->n_records >= ROOMS_LISTED)
        return 1;
    Vc__Record *rec = vc_reply_record(reply);
    vc_record_field(rec, "site", "%s", site);
    vc_record_field(rec, "namespace", "%s", nsp);
    vc_record_field(rec, "room", "%s", room);
    vc_record_field(rec, "sockets", "%zu", sockets);
    return 0;
}

/* `vc rooms`: Socket.IO's namespaces here (room "") and their rooms. */
static void on_socketio(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)arg;
    (void)cmd;
    size_t rooms, sockets = sio_rooms_sockets(&rooms);
    vc_reply_ok(reply, "%zu sockets", sockets);
    sio_rooms_each(add_sio_room, reply);
}

static const vc_verb_t verbs[] = {
    {"rooms", "[ROOM]", "this front's rooms and their subscribers, or one room's presence members", on_rooms},
    {"socketio", "", "this front's Socket.IO namespaces and rooms, with their sockets", on_socketio},
};

static uint64_t rooms_now(void)
{
    size_t subs;
    return rooms_count(&subs);
}

static uint64_t subscriptions_now(void)
{
    size_t subs;
    rooms_count(&subs);
    return subs;
}

static uint64_t delivered_now(void)
{
    uint64_t bad;
    return rooms_delivered(&bad);
}

static uint64_t refused_now(void)
{
    return rt_stats.subscribe_refused + rt_stats.client_events_refused + rt_stats.api_refused;
}

static uint64_t sio_sockets_now(void)
{
    size_t rooms;
    return sio_rooms_sockets(&rooms);
}

static uint64_t sio_rooms_now(void)
{
    size_t rooms;
    sio_rooms_sockets(&rooms);
    return rooms;
}

static uint64_t sio_calls_now(void)
{
    uint64_t calls, failed;
    sio_handler_counts(&calls, &failed);
    return calls;
}

static uint64_t sio_failed_now(void)
{
    uint64_t calls, failed;
    sio_handler_counts(&calls, &failed);
    return failed;
}

static const seam_counter_t counters[] = {
    {"vc_front_realtime_connections", "realtime_connections", "WebSocket (Pusher protocol) connections open now.", 1, 0,
     &rt_stats.connections, NULL, 0},
    {"vc_front_realtime_connections_total", "realtime_connections_total", "WebSocket connections opened.", 0, 0,
     &rt_stats.connections_total, NULL, 0},
    {"vc_front_realtime_rooms", "realtime_rooms", "Rooms with a subscriber in this front.", 1, 0, NULL, rooms_now, 0},
    {"vc_front_realtime_subscriptions", "realtime_subscriptions", "Channel subscriptions of this front's connections.",
     1, 0, NULL, subscriptions_now, 0},
    {"vc_front_realtime_connections_cut_total", NULL,
     "Connections closed for not reading what they were sent, or not answering pings.", 0, 0, &rt_stats.connections_cut,
     NULL, 0},
    {"vc_front_realtime_published_total", "realtime_published", "Room messages sent to the bus from this front.", 0, 0,
     &rt_stats.published, NULL, 0},
    {"vc_front_realtime_publish_dropped_total", "realtime_publish_dropped",
     "Room messages dropped: the bus was not taking them.", 0, 0, &rt_stats.publish_dropped, NULL, 0},
    {NULL, "realtime_php_published", NULL, 0, 0, &rt_stats.php_published, NULL, 0},
    {"vc_front_realtime_delivered_total", "realtime_delivered",
     "Room messages from the bus handed to this front's rooms.", 0, 0, NULL, delivered_now, 0},
    {NULL, "realtime_client_events", NULL, 0, 0, &rt_stats.client_events, NULL, 0},
    {"vc_front_realtime_refused_total", "realtime_refused",
     "Subscriptions, client events and API calls refused (authorisation, limits, signatures).", 0, 0, NULL, refused_now,
     0},
    {NULL, "realtime_api_calls", NULL, 0, 0, &rt_stats.api_calls, NULL, 0},
    {"vc_front_socketio_sockets", "socketio_sockets", "Socket.IO sockets (a connection's namespaces) open now.", 1, 0,
     NULL, sio_sockets_now, 0},
    {"vc_front_socketio_rooms", "socketio_rooms", "Socket.IO rooms with a socket in this front (its id's included).", 1,
     0, NULL, sio_rooms_now, 0},
    {"vc_front_socketio_operations_total", "socketio_operations",
     "Socket.IO operations (emit, join, leave, disconnect) applied to this front's sockets.", 0, 0, NULL,
     sio_rooms_applied, 0},
    {"vc_front_socketio_handler_calls_total", "socketio_handler_calls",
     "Socket.IO handler calls (connect, event, disconnect) made to PHP.", 0, 0, NULL, sio_calls_now, 0},
    {"vc_front_socketio_handler_failed_total", "socketio_handler_failed",
     "Socket.IO handler calls PHP did not answer with a 2xx.", 0, 0, NULL, sio_failed_now, 0},
};

static const seam_backend_t realtime = {
    .name = "realtime",
    .stage = SEAM_EARLY,
    .order = 20,
    .site_init = site_init,
    .take = take,
    .start = start,
    .tick = tick,
    .stop = stop,
    .verbs = verbs,
    .nverbs = VC_ARRAY_SIZE(verbs),
    .counters = counters,
    .ncounters = VC_ARRAY_SIZE(counters),
    .php_params = php_params,
    .php_publish = php_publish,
};
SEAM_BACKEND(realtime)
