/*
 * The Pusher protocol, version 7, on a WebSocket at /app/KEY: what
 * pusher-js and Laravel Echo speak to Pusher, Soketi or Reverb.
 *
 *   -> pusher:connection_established  {socket_id, activity_timeout}
 *   <- pusher:subscribe {channel, auth?, channel_data?}
 *   -> pusher_internal:subscription_succeeded (presence: the members)
 *      or pusher:subscription_error {type, error, status}
 *   <- pusher:unsubscribe, pusher:ping (-> pusher:pong), client-* events
 *   -> the channel's events; on presence channels member_added/_removed
 *
 * private- and presence- channels need the app's authorisation: the
 * client asks the PHP app's auth endpoint, which signs socket id and
 * channel (and the member's channel_data) with the app secret; we check
 * that signature. Client events go only to private and presence
 * channels the connection is in, never back to their sender, at most
 * front.realtime_client_events a second. A quiet connection is pinged
 * after the activity timeout and closed (4201) if it does not answer.
 */
#include "realtime.h"
#include "pusher_sign.h"
#include "rooms.h"
#include "vc_log.h"
#include "vc_util.h"
#include "ws_conn.h"

#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

/* A server's ping unanswered this long closes the connection (4201): 30 s
 * as Pusher recommends, or the activity timeout if that is shorter. */
#define PONG_TIMEOUT_MS 30000
/* Members a presence channel may have (Pusher's limit). */
#define MAX_MEMBERS 100

typedef struct pusher_conn pusher_conn_t;

typedef struct chan_sub {
    rt_sub_t sub; /* first: rooms hands it back */
    pusher_conn_t *conn;
    char *channel;
    char *user_id; /* a presence channel's member, else NULL */
    /* A presence subscriber's members, as it was told them
     * (subscription_succeeded, then member_added and _removed): {USER_ID:
     * true}. A join reaches the room through vc-bus, so a connection that
     * subscribed meanwhile has the member in its list already, and the
     * member_added that follows is dropped for it (pusher-js would tell
     * the application of the join twice). */
    json_t *told;
} chan_sub_t;

struct pusher_conn {
    ws_conn_t *ws;
    front_t *f;
    const vc_rt_app_t *app; /* NULL: the key named no app (4001 on open) */
    int refuse_code;        /* sent on open, then closed */
    const char *refuse_why;
    char socket_id[32];
    chan_sub_t **subs;
    size_t nsubs;
    uint64_t ping_sent_ms; /* a ping of ours waits for its pong */
    uint64_t window_ms;    /* client events: this second's start and count */
    unsigned window_events;
    pusher_conn_t *prev, *next;
};

static pusher_conn_t *conns;
static uint32_t socket_prefix;
static uint64_t socket_seq;

static void send_json(pusher_conn_t *c, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (text) {
        ws_send_text(c->ws, text, strlen(text));
        free(text);
    }
}

static void send_error(pusher_conn_t *c, int code, const char *message)
{
    json_t *data = code ? json_pack("{s:i, s:s}", "code", code, "message", message)
                        : json_pack("{s:n, s:s}", "code", "message", message);
    send_json(c, json_pack("{s:s, s:o}", "event", "pusher:error", "data", data));
}

static void subscription_error(pusher_conn_t *c, const char *channel, const char *type, const char *error, int status)
{
    rt_stats.subscribe_refused++;
    send_json(c, json_pack("{s:s, s:s, s:{s:s, s:s, s:i}}", "event", "pusher:subscription_error", "channel", channel,
                           "data", "type", type, "error", error, "status", status));
}

/* Whether m is news to a presence subscriber: not a member_added for a
 * member it was told of. Keeps cs->told. */
static int news_for(chan_sub_t *cs, const Vc__RoomMessage *m)
{
    int added = strcmp(m->event, "pusher_internal:member_added") == 0;
    if (!added && strcmp(m->event, "pusher_internal:member_removed") != 0)
        return 1;
    json_t *d = json_loadb((const char *)m->data.data, m->data.len, 0, NULL);
    const char *id = json_string_value(json_object_get(d, "user_id"));
    int news = 1;
    if (id && added) {
        news = json_object_get(cs->told, id) == NULL;
        json_object_set_new(cs->told, id, json_true());
    } else if (id) {
        json_object_del(cs->told, id);
    }
    json_decref(d);
    return news;
}

/* rooms' delivery: the frame is the same for every Pusher subscriber of
 * the room, made by the first. */
static void deliver(rt_sub_t *s, const Vc__RoomMessage *m, ws_out_t **frame)
{
    chan_sub_t *cs = (chan_sub_t *)s;
    if (cs->told && !news_for(cs, m))
        return;
    if (frame == NULL || *frame == NULL) {
        json_t *data = json_stringn((const char *)m->data.data, m->data.len);
        if (data == NULL)
            return; /* not UTF-8: publishers check, so never */
        json_t *msg = json_pack("{s:s, s:s, s:o}", "event", m->event, "channel", cs->channel, "data", data);
        if (m->user_id[0])
            json_object_set_new(msg, "user_id", json_string(m->user_id));
        char *text = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        if (text == NULL)
            return;
        ws_out_t *o = ws_out_new(VC_WS_OP_TEXT, text, strlen(text));
        free(text);
        if (frame == NULL) {
            ws_send(cs->conn->ws, o);
            ws_out_unref(o);
            return;
        }
        *frame = o;
    }
    ws_send(cs->conn->ws, *frame);
}

static const rt_sub_ops_t pusher_ops = {.deliver = deliver};

static chan_sub_t *find_sub(pusher_conn_t *c, const char *channel)
{
    for (size_t i = 0; i < c->nsubs; i++)
        if (strcmp(c->subs[i]->channel, channel) == 0)
            return c->subs[i];
    return NULL;
}

static int is_private(const char *channel)
{
    return strncmp(channel, "private-", 8) == 0;
}

static int is_presence(const char *channel)
{
    return strncmp(channel, "presence-", 9) == 0;
}

static void room_name(const pusher_conn_t *c, const char *channel, char *out, size_t n)
{
    snprintf(out, n, "%s:%s", c->app->id, channel);
}

/* Leaves a channel: the room, and for a presence member, the members (vc-bus
 * tells the room if that was the user's last connection on the node). */
static void leave(pusher_conn_t *c, chan_sub_t *cs)
{
    (void)c;
    if (cs->user_id && cs->sub.room) {
        rooms_member_remove(cs->sub.room, cs->user_id);
        rooms_member_change(rooms_name(cs->sub.room), cs->user_id, NULL, 0, NULL);
    }
    rooms_leave(&cs->sub);
    for (size_t i = 0; i < c->nsubs; i++)
        if (c->subs[i] == cs) {
            c->subs[i] = c->subs[--c->nsubs];
            break;
        }
    free(cs->channel);
    free(cs->user_id);
    json_decref(cs->told);
    free(cs);
}

/* The node's members of a presence room, as vc-bus last wrote them, and
 * those of this process (vc-bus may not have counted the newest yet):
 * {USER_ID: user_info}. */
static json_t *node_members(front_t *f, const rt_room_t *r)
{
    char *text = rooms_presence_read(f, rooms_name(r));
    json_t *hash = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!json_is_object(hash)) {
        json_decref(hash);
        hash = json_object();
    }
    size_t n;
    const rt_member_t *m = rooms_members(r, &n);
    for (size_t i = 0; i < n; i++) {
        json_t *info = m[i].info ? json_loads(m[i].info, JSON_DECODE_ANY, NULL) : NULL;
        json_object_set_new(hash, m[i].user_id, info ? info : json_null());
    }
    return hash;
}

/* The presence data subscription_succeeded carries: {"presence":{ids,
 * hash, count}}, as a JSON string; the ids in *told ({USER_ID: true}). */
static char *presence_data(front_t *f, const rt_room_t *r, json_t **told)
{
    json_t *ids = json_array(), *hash = node_members(f, r);
    const char *user;
    json_t *info;
    *told = json_object();
    json_object_foreach(hash, user, info)
    {
        json_array_append_new(ids, json_string(user));
        json_object_set_new(*told, user, json_true());
    }
    size_t n = json_object_size(hash);
    json_t *d = json_pack("{s:{s:o, s:o, s:i}}", "presence", "ids", ids, "hash", hash, "count", (json_int_t)n);
    char *text = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    return text;
}

/* channel_data of a presence subscription: {"user_id": string or number,
 * "user_info": anything}. 0 with the id and the info's JSON text. */
static int parse_member(const char *channel_data, char **user_id, char **info)
{
    json_t *cd = json_loads(channel_data, 0, NULL);
    json_t *uid = cd ? json_object_get(cd, "user_id") : NULL;
    char num[32];
    const char *id = NULL;
    if (json_is_string(uid))
        id = json_string_value(uid);
    else if (json_is_integer(uid) && snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(uid)) > 0)
        id = num;
    if (id == NULL || *id == '\0' || strlen(id) > 128) {
        json_decref(cd);
        return -1;
    }
    *user_id = vc_strdup(id);
    json_t *ui = json_object_get(cd, "user_info");
    *info = ui ? json_dumps(ui, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(cd);
    return 0;
}

static void subscribe(pusher_conn_t *c, json_t *data)
{
    const char *channel = json_string_value(json_object_get(data, "channel"));
    if (channel == NULL || !rt_channel_name_ok(channel, strlen(channel))) {
        rt_stats.subscribe_refused++;
        send_error(c, 0, "pusher:subscribe needs a channel name of 1 to 164 of A-Z a-z 0-9 _ - = @ , . ;");
        return;
    }
    if (find_sub(c, channel)) { /* again: it is in */
        send_json(c, json_pack("{s:s, s:s, s:s}", "event", "pusher_internal:subscription_succeeded", "channel", channel,
                               "data", "{}"));
        return;
    }
    if ((int64_t)c->nsubs >= c->f->settings->realtime_max_channels) {
        subscription_error(c, channel, "LimitReached", "too many channels on one connection", 403);
        return;
    }
    const char *auth = json_string_value(json_object_get(data, "auth"));
    const char *channel_data = json_string_value(json_object_get(data, "channel_data"));
    char *user_id = NULL, *info = NULL;
    if (is_private(channel) && !pusher_channel_auth_ok(c->app, c->socket_id, channel, NULL, auth)) {
        subscription_error(c, channel, "AuthError", "the channel's authorisation is not valid for this connection",
                           401);
        return;
    }
    if (is_presence(channel)) {
        if (channel_data == NULL || !pusher_channel_auth_ok(c->app, c->socket_id, channel, channel_data, auth)) {
            subscription_error(c, channel, "AuthError", "the channel's authorisation is not valid for this connection",
                               401);
            return;
        }
        if (parse_member(channel_data, &user_id, &info) < 0) {
            subscription_error(c, channel, "AuthError", "channel_data has no user_id", 400);
            return;
        }
    }
    char room[512];
    room_name(c, channel, room, sizeof(room));
    rt_room_t *existing = rooms_find(room);
    if (user_id) {
        json_t *members = existing ? node_members(c->f, existing) : NULL;
        if (members == NULL) { /* no one here: vc-bus's list alone */
            char *text = rooms_presence_read(c->f, room);
            members = text ? json_loads(text, 0, NULL) : NULL;
            free(text);
        }
        int over = json_is_object(members) && json_object_get(members, user_id) == NULL &&
                   json_object_size(members) >= MAX_MEMBERS;
        json_decref(members);
        if (over) {
            subscription_error(c, channel, "LimitReached", "the presence channel has 100 members", 403);
            free(user_id);
            free(info);
            return;
        }
    }
    chan_sub_t *cs = vc_calloc(1, sizeof(*cs));
    cs->sub.ops = &pusher_ops;
    cs->sub.socket_id = c->socket_id;
    cs->conn = c;
    cs->channel = vc_strdup(channel);
    cs->user_id = user_id;
    c->subs = vc_realloc(c->subs, (c->nsubs + 1) * sizeof(*c->subs));
    c->subs[c->nsubs++] = cs;
    rooms_join(room, &cs->sub);
    if (user_id == NULL) {
        send_json(c, json_pack("{s:s, s:s, s:s}", "event", "pusher_internal:subscription_succeeded", "channel", channel,
                               "data", "{}"));
        return;
    }
    rooms_member_add(cs->sub.room, user_id, info);
    char *pd = presence_data(c->f, cs->sub.room, &cs->told);
    send_json(c, json_pack("{s:s, s:s, s:s}", "event", "pusher_internal:subscription_succeeded", "channel", channel,
                           "data", pd));
    free(pd);
    /* vc-bus sends member_added if this is the user's first connection on
     * the node, to everyone but this connection. */
    rooms_member_change(room, user_id, info, 1, c->socket_id);
    free(info);
}

static void client_event(pusher_conn_t *c, const char *event, json_t *msg)
{
    const char *channel = json_string_value(json_object_get(msg, "channel"));
    chan_sub_t *cs = channel ? find_sub(c, channel) : NULL;
    if (cs == NULL || (!is_private(channel) && !is_presence(channel))) {
        rt_stats.client_events_refused++;
        send_error(c, 0, "client events go only to private and presence channels the connection is subscribed to");
        return;
    }
    uint64_t now = vc_mono_ms();
    if (now - c->window_ms >= 1000) {
        c->window_ms = now;
        c->window_events = 0;
    }
    if ((int64_t)++c->window_events > c->f->settings->realtime_client_events) {
        rt_stats.client_events_refused++;
        send_error(c, 4301, "client event rejected: over the rate limit");
        return;
    }
    json_t *data = json_object_get(msg, "data");
    char *text = json_is_string(data) ? vc_strdup(json_string_value(data))
                                      : json_dumps(data ? data : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    if (text) {
        rt_stats.client_events++;
        rt_publish(c->app, channel, event, text, strlen(text), c->socket_id, cs->user_id);
        free(text);
    }
}

static int on_message(ws_conn_t *ws, const vc_ws_message_t *m)
{
    pusher_conn_t *c = ws_data(ws);
    if (m->opcode != VC_WS_OP_TEXT) {
        ws_close(ws, VC_WS_CLOSE_UNSUPPORTED, "the Pusher protocol is text");
        return 1;
    }
    json_error_t jerr;
    json_t *msg = json_loadb((const char *)m->data, m->len, 0, &jerr);
    const char *event = msg ? json_string_value(json_object_get(msg, "event")) : NULL;
    if (event == NULL) {
        send_error(c, 0, "a message is a JSON object with an \"event\"");
    } else if (strcmp(event, "pusher:ping") == 0) {
        send_json(c, json_pack("{s:s, s:{}}", "event", "pusher:pong", "data"));
    } else if (strcmp(event, "pusher:pong") == 0) {
        /* its arrival is what counts */
    } else if (strcmp(event, "pusher:subscribe") == 0) {
        json_t *data = json_object_get(msg, "data");
        if (json_is_string(data)) { /* some clients send it encoded */
            json_t *d = json_loads(json_string_value(data), 0, NULL);
            subscribe(c, d ? d : data);
            json_decref(d);
        } else {
            subscribe(c, data);
        }
    } else if (strcmp(event, "pusher:unsubscribe") == 0) {
        const char *channel = json_string_value(json_object_get(json_object_get(msg, "data"), "channel"));
        chan_sub_t *cs = channel ? find_sub(c, channel) : NULL;
        if (cs)
            leave(c, cs);
    } else if (strncmp(event, "client-", 7) == 0) {
        client_event(c, event, msg);
    } /* anything else (pusher:signin, ...) is not ours to answer */
    json_decref(msg);
    return 0;
}

static void on_open(ws_conn_t *ws)
{
    pusher_conn_t *c = ws_data(ws);
    if (c->refuse_code) {
        send_error(c, c->refuse_code, c->refuse_why);
        ws_close(ws, (uint16_t)c->refuse_code, c->refuse_why);
        return;
    }
    char data[128];
    snprintf(data, sizeof(data), "{\"socket_id\":\"%s\",\"activity_timeout\":%lld}", c->socket_id,
             (long long)(c->f->settings->realtime_activity_timeout_ms / 1000));
    send_json(c, json_pack("{s:s, s:s}", "event", "pusher:connection_established", "data", data));
}

static void on_closed(ws_conn_t *ws)
{
    pusher_conn_t *c = ws_data(ws);
    while (c->nsubs)
        leave(c, c->subs[c->nsubs - 1]);
    free(c->subs);
    if (c->prev)
        c->prev->next = c->next;
    else
        conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    rt_stats.connections--;
    if (ws_was_cut(ws))
        rt_stats.connections_cut++;
    free(c);
}

static const ws_callbacks_t callbacks = {.on_message = on_message, .on_closed = on_closed, .on_open = on_open};

/* pusher-js sends ?protocol=7&client=js&version=8.4.0&flash=false. */
static int protocol_of(h2o_req_t *req)
{
    if (req->query_at == SIZE_MAX)
        return -1;
    h2o_iovec_t q = h2o_iovec_init(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1);
    for (size_t at = 0; at < q.len;) {
        const char *amp = memchr(q.base + at, '&', q.len - at);
        size_t end = amp ? (size_t)(amp - q.base) : q.len;
        if (end - at > 9 && memcmp(q.base + at, "protocol=", 9) == 0) {
            int v = 0;
            for (size_t i = at + 9; i < end; i++) {
                if (q.base[i] < '0' || q.base[i] > '9' || v > 1000)
                    return 0;
                v = v * 10 + (q.base[i] - '0');
            }
            return v;
        }
        at = end + 1;
    }
    return -1;
}

int pusher_take(front_t *f, rt_site_t *rs, h2o_req_t *req, h2o_iovec_t key)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    pusher_conn_t *c = vc_calloc(1, sizeof(*c));
    c->f = f;
    c->app = rt_app_by_key(rs, key.base, key.len);
    int protocol = protocol_of(req);
    if (c->app == NULL) {
        c->refuse_code = 4001;
        c->refuse_why = "no app has this key";
    } else if (protocol == -1) {
        c->refuse_code = 4008;
        c->refuse_why = "no protocol version given";
    } else if (protocol < 5 || protocol > 7) {
        c->refuse_code = 4007;
        c->refuse_why = "this protocol version is not supported (7 is)";
    }
    if (socket_prefix == 0)
        socket_prefix = randombytes_uniform(900000000) + 100000000;
    snprintf(c->socket_id, sizeof(c->socket_id), "%u.%llu", socket_prefix, (unsigned long long)++socket_seq);
    ws_options_t opt = {
        .limits = {.max_frame = (size_t)f->settings->realtime_max_message,
                   .max_message = (size_t)f->settings->realtime_max_message},
        .max_queue = (size_t)f->settings->realtime_max_queue,
    };
    int status;
    const char *why;
    c->ws = ws_upgrade(f, req, &callbacks, &opt, c, &status, &why);
    if (c->ws == NULL) {
        free(c);
        /* By hand: h2o_send_error_generic() drops the headers set, and a
         * 426 names the version we speak. */
        req->res.status = status;
        req->res.reason = status == 426 ? "Upgrade Required" : "Bad Request";
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                       H2O_STRLIT("text/plain; charset=utf-8"));
        h2o_iovec_t body = h2o_concat(&req->pool, h2o_iovec_init(why, strlen(why)), h2o_iovec_init("\n", 1));
        h2o_send_inline(req, body.base, body.len);
        return 1;
    }
    c->next = conns;
    if (conns)
        conns->prev = c;
    conns = c;
    rt_stats.connections++;
    rt_stats.connections_total++;
    return 1;
}

void pusher_tick(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    uint64_t now = vc_mono_ms(), quiet = (uint64_t)f->settings->realtime_activity_timeout_ms;
    uint64_t pong_wait = quiet < PONG_TIMEOUT_MS ? quiet : PONG_TIMEOUT_MS;
    for (pusher_conn_t *c = conns; c; c = c->next) {
        if (ws_closing(c->ws))
            continue;
        uint64_t last = ws_last_read_ms(c->ws);
        /* Read in the millisecond of the ping counts: a ping goes only to
         * a connection quiet for the activity timeout, so that read came
         * after it (a quick client's pong, on loopback). */
        if (c->ping_sent_ms && last >= c->ping_sent_ms)
            c->ping_sent_ms = 0;
        if (c->ping_sent_ms == 0 && now - last >= quiet) {
            send_json(c, json_pack("{s:s, s:{}}", "event", "pusher:ping", "data"));
            c->ping_sent_ms = now;
        } else if (c->ping_sent_ms && now - c->ping_sent_ms >= pong_wait) {
            rt_stats.connections_cut++;
            send_error(c, 4201, "pong reply not received");
            ws_close(c->ws, 4201, "pong reply not received");
        }
    }
}

void pusher_going_away(void)
{
    for (pusher_conn_t *c = conns; c; c = c->next)
        ws_close(c->ws, VC_WS_CLOSE_GOING_AWAY, "the server is restarting");
}
