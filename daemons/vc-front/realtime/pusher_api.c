/*
 * The Pusher HTTP API at /apps/ID/..., so that Laravel's "pusher"
 * broadcaster (and every Pusher server library) works pointed at us:
 *
 *   POST /apps/ID/events         {name, data, channel | channels, socket_id?}
 *   POST /apps/ID/batch_events   {batch: [{name, data, channel, socket_id?}]}
 *   GET  /apps/ID/channels       [?filter_by_prefix=presence-]
 *   GET  /apps/ID/channels/NAME  {occupied, subscription_count}
 *   GET  /apps/ID/channels/NAME/users
 *
 * Every call is signed (pusher_sign.h): a bad signature, another app's
 * key or a body that is not the one signed is a 401, a timestamp more
 * than 600 s away a 401, and a call seen before (its signature, within
 * that window) a 401 too once its timestamp is over REPLAY_GRACE_S old, so
 * a captured call cannot be replayed. Within those seconds the same
 * signature passes again: an app that sends the same event twice in one
 * second signs both calls alike (the body and the second are the same).
 * The channel lists and counts are this front process's; the users of a
 * presence channel are the node's.
 */
#include "pusher_sign.h"
#include "realtime.h"
#include "rooms.h"
#include "vc_log.h"
#include "vc_util.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Pusher's limits on a call: channels of one event, events of a batch. */
#define MAX_CHANNELS 100
#define MAX_BATCH 10
#define MAX_NAME 200

/* Signatures seen within the window: an open-addressed table, its slots
 * the first 8 bytes of a signature and when it was seen. Full (a flood of
 * valid calls), the oldest slot of a probe is taken over. */
#define SEEN_SLOTS 16384
#define REPLAY_GRACE_S 2
#define SEEN_PROBE 16

static struct {
    uint64_t sig;
    int64_t at_s;
} seen[SEEN_SLOTS];

/* 1 if signature was seen in the window and its call's timestamp is older
 * than the grace; else it is now. */
static int replayed(const char hexsig[65], int64_t ts, int64_t now_s)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++)
        v = v << 4 | (uint64_t)(hexsig[i] <= '9' ? hexsig[i] - '0' : hexsig[i] - 'a' + 10);
    if (v == 0)
        v = 1;
    size_t at = (size_t)(v % SEEN_SLOTS), oldest = at;
    for (size_t i = 0; i < SEEN_PROBE; i++) {
        size_t k = (at + i) % SEEN_SLOTS;
        int live = seen[k].sig && seen[k].at_s >= now_s - 2 * PUSHER_API_WINDOW_S;
        if (live && seen[k].sig == v)
            return now_s - ts > REPLAY_GRACE_S;
        if (!live) {
            oldest = k;
            break;
        }
        if (seen[k].at_s < seen[oldest].at_s)
            oldest = k;
    }
    seen[oldest].sig = v;
    seen[oldest].at_s = now_s;
    return 0;
}

static int answer(h2o_req_t *req, int status, const char *reason, const char *body)
{
    if (status >= 400)
        rt_stats.api_refused++;
    req->res.status = status;
    req->res.reason = reason;
    const char *type = status < 400 ? "application/json" : "text/plain; charset=utf-8";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, type, strlen(type));
    h2o_send_inline(req, body, strlen(body));
    return 1;
}

static int answer_json(h2o_req_t *req, json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    h2o_iovec_t body = h2o_strdup(&req->pool, text ? text : "{}", SIZE_MAX);
    free(text);
    return answer(req, 200, "OK", body.base);
}

/* One event to its channels. NULL, or why it is refused (a 400). */
static const char *publish_event(front_t *f, const vc_rt_app_t *app, json_t *ev, int batch, int *status)
{
    const char *name = json_string_value(json_object_get(ev, "name"));
    json_t *data = json_object_get(ev, "data");
    json_t *channels = json_object_get(ev, "channels");
    json_t *channel = json_object_get(ev, "channel");
    const char *socket_id = json_string_value(json_object_get(ev, "socket_id"));
    *status = 400;
    if (name == NULL || *name == '\0' || strlen(name) > MAX_NAME)
        return "an event needs a \"name\" of 1 to 200 characters";
    if (!json_is_string(data))
        return "an event's \"data\" is a string (JSON-encode objects)";
    if (json_string_length(data) > (size_t)f->settings->realtime_max_message) {
        *status = 413;
        return "an event's data is over front.realtime_max_message";
    }
    json_t *list;
    if (json_is_array(channels) && !batch) {
        list = json_incref(channels);
    } else if (json_is_string(channel)) {
        list = json_array();
        json_array_append(list, channel);
    } else {
        return batch ? "a batch's event needs a \"channel\"" : "an event needs \"channels\" (a list) or \"channel\"";
    }
    const char *why = NULL;
    size_t n = json_array_size(list);
    if (n == 0 || n > MAX_CHANNELS)
        why = "an event goes to 1 to 100 channels";
    for (size_t i = 0; why == NULL && i < n; i++) {
        const char *c = json_string_value(json_array_get(list, i));
        if (c == NULL || !rt_channel_name_ok(c, strlen(c)))
            why = "a channel name is 1 to 164 of A-Z a-z 0-9 _ - = @ , . ;";
    }
    for (size_t i = 0; why == NULL && i < n; i++)
        if (rt_publish(app, json_string_value(json_array_get(list, i)), name, json_string_value(data),
                       json_string_length(data), socket_id, NULL) < 0) {
            *status = 503;
            why = "the event bus is away: the event was not sent";
        }
    json_decref(list);
    return why;
}

static int post(front_t *f, h2o_req_t *req, const vc_rt_app_t *app, int batch)
{
    json_error_t jerr;
    json_t *body = json_loadb(req->entity.base ? req->entity.base : "", req->entity.len, 0, &jerr);
    if (!json_is_object(body)) {
        json_decref(body);
        return answer(req, 400, "Bad Request", "the body is not a JSON object\n");
    }
    const char *why = NULL;
    int status = 400;
    if (batch) {
        json_t *list = json_object_get(body, "batch");
        size_t n = json_array_size(list);
        if (!json_is_array(list) || n == 0 || n > MAX_BATCH)
            why = "\"batch\" is a list of 1 to 10 events";
        for (size_t i = 0; why == NULL && i < n; i++)
            why = publish_event(f, app, json_array_get(list, i), 1, &status);
    } else {
        why = publish_event(f, app, body, 0, &status);
    }
    json_decref(body);
    if (why) {
        char *msg = vc_asprintf("%s\n", why);
        h2o_iovec_t m = h2o_strdup(&req->pool, msg, SIZE_MAX);
        free(msg);
        return answer(req, status,
                      status == 413   ? "Payload Too Large"
                      : status == 503 ? "Service Unavailable"
                                      : "Bad Request",
                      m.base);
    }
    return answer_json(req, batch ? json_pack("{s:[]}", "batch") : json_object());
}

typedef struct list_args {
    const vc_rt_app_t *app;
    const char *prefix;
    json_t *out;
} list_args_t;

static int list_one(rt_room_t *r, void *arg)
{
    list_args_t *a = arg;
    const char *name = rooms_name(r);
    size_t il = strlen(a->app->id);
    if (strncmp(name, a->app->id, il) != 0 || name[il] != ':')
        return 0;
    const char *channel = name + il + 1;
    if (a->prefix && strncmp(channel, a->prefix, strlen(a->prefix)) != 0)
        return 0;
    json_object_set_new(a->out, channel, json_object());
    return 0;
}

static int get(front_t *f, h2o_req_t *req, const vc_rt_app_t *app, h2o_iovec_t rest)
{
    if (h2o_memis(rest.base, rest.len, H2O_STRLIT("/channels"))) {
        list_args_t a = {.app = app, .out = json_object()};
        char prefix[MAX_NAME];
        if (req->query_at != SIZE_MAX) {
            const char *q = req->path.base + req->query_at + 1;
            size_t ql = req->path.len - req->query_at - 1;
            const char *p = memmem(q, ql, "filter_by_prefix=", 17);
            if (p) {
                size_t n = strcspn(p + 17, "&");
                if (p + 17 + n > q + ql)
                    n = (size_t)(q + ql - p - 17);
                if (n < sizeof(prefix)) {
                    memcpy(prefix, p + 17, n);
                    prefix[n] = '\0';
                    a.prefix = prefix;
                }
            }
        }
        rooms_each(list_one, &a);
        return answer_json(req, json_pack("{s:o}", "channels", a.out));
    }
    if (rest.len > 10 && memcmp(rest.base, "/channels/", 10) == 0) {
        char name[256];
        h2o_iovec_t c = h2o_iovec_init(rest.base + 10, rest.len - 10);
        int users = c.len > 6 && memcmp(c.base + c.len - 6, "/users", 6) == 0;
        if (users)
            c.len -= 6;
        if (!rt_channel_name_ok(c.base, c.len))
            return answer(req, 400, "Bad Request", "not a channel name\n");
        snprintf(name, sizeof(name), "%s:%.*s", app->id, (int)c.len, c.base);
        rt_room_t *r = rooms_find(name);
        if (users) { /* the node's, as vc-bus counts them */
            json_t *list = json_array();
            char *text = rooms_presence_read(f, name);
            json_t *members = text ? json_loads(text, 0, NULL) : NULL;
            free(text);
            const char *id;
            json_t *info;
            json_object_foreach(members, id, info) json_array_append_new(list, json_pack("{s:s}", "id", id));
            json_decref(members);
            return answer_json(req, json_pack("{s:o}", "users", list));
        }
        return answer_json(req, json_pack("{s:b, s:I}", "occupied", r != NULL, "subscription_count",
                                          (json_int_t)(r ? rooms_subscribers(r) : 0)));
    }
    return answer(req, 404, "Not Found", "no such call in the Pusher HTTP API\n");
}

int pusher_api_take(front_t *f, rt_site_t *rs, h2o_req_t *req, const vc_rt_app_t *app, h2o_iovec_t rest)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    (void)rs;
    rt_stats.api_calls++;
    size_t path_len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    h2o_iovec_t query = req->query_at != SIZE_MAX
                            ? h2o_iovec_init(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1)
                            : h2o_iovec_init("", 0);
    char method[16];
    if (req->method.len >= sizeof(method))
        return answer(req, 405, "Method Not Allowed", "the Pusher HTTP API takes GET and POST\n");
    memcpy(method, req->method.base, req->method.len);
    method[req->method.len] = '\0';
    int is_post = strcmp(method, "POST") == 0, is_get = strcmp(method, "GET") == 0;
    if (!is_post && !is_get)
        return answer(req, 405, "Method Not Allowed", "the Pusher HTTP API takes GET and POST\n");
    char sig[65];
    int64_t now_s = vc_wall_ms() / 1000, ts = 0;
    pusher_sign_result_t v = pusher_api_verify(app, method, req->path.base, path_len, query.base, query.len,
                                               req->entity.base ? req->entity.base : "",
                                               req->entity.base ? req->entity.len : 0, now_s, sig, &ts);
    if (v != PUSHER_SIGN_OK) {
        vc_log(VC_LOG_NOTICE, "realtime", "401 for a Pusher API call to app %s: %s", app->id, pusher_sign_why(v));
        char *msg = vc_asprintf("%s\n", pusher_sign_why(v));
        h2o_iovec_t m = h2o_strdup(&req->pool, msg, SIZE_MAX);
        free(msg);
        return answer(req, 401, "Unauthorized", m.base);
    }
    if (replayed(sig, ts, now_s)) {
        vc_log(VC_LOG_NOTICE, "realtime", "401 for a Pusher API call to app %s: its signature was used before",
               app->id);
        return answer(req, 401, "Unauthorized", "this signature was used before: a call is signed afresh\n");
    }
    if (is_post && h2o_memis(rest.base, rest.len, H2O_STRLIT("/events")))
        return post(f, req, app, 0);
    if (is_post && h2o_memis(rest.base, rest.len, H2O_STRLIT("/batch_events")))
        return post(f, req, app, 1);
    if (is_get)
        return get(f, req, app, rest);
    return answer(req, 404, "Not Found", "no such call in the Pusher HTTP API\n");
}
