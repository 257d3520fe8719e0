/*
 * A Mercure hub at /.well-known/mercure, so that Symfony's and API
 * Platform's Mercure clients work with the suite alone:
 *
 *   GET  ?topic=SELECTOR[&topic=...]   an SSE stream of the updates whose
 *                                      topics match (Last-Event-ID, or
 *                                      ?lastEventID=, replays what was
 *                                      missed; "earliest": everything kept)
 *   POST topic=T[&topic=...]&data=D[&private=on][&id=I][&type=E][&retry=N]
 *                                      publishes; answers the update's id
 *
 * Publishing needs a JWT (HS256, the site's publisher key) whose
 * mercure.publish selectors match every topic of the update. Subscribing
 * needs none for public updates; a private update goes only to
 * subscribers whose JWT (the subscriber key) has a mercure.subscribe
 * selector matching one of its topics. The JWT comes in Authorization:
 * Bearer, or the mercureAuthorization cookie.
 *
 * A site's hub is one room, "~mercure:SITE" ('~' is in no app id):
 * updates go through vc-bus like every room message, kept in the room's
 * history for replay, and each subscriber picks what its selectors match.
 */
#include "jwt.h"
#include "mercure_match.h"
#include "realtime.h"
#include "rooms.h"
#include "rt_form.h"
#include "vc_log.h"
#include "vc_realtime.h"
#include "vc_util.h"
#include "vc_ws.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define MAX_TOPIC 2048
#define MAX_FORM_PAIRS 256

typedef struct sse_sub {
    rt_sub_t sub; /* first: rooms hands it back */
    h2o_generator_t gen;
    h2o_req_t *req;
    front_t *f;
    char **sel; /* the topics asked for */
    size_t nsel;
    char **allow; /* the JWT's mercure.subscribe */
    size_t nallow;
    char *buf; /* what waits to be sent */
    size_t len, cap;
    char *inflight; /* what h2o sends now */
    int sending, cut, done;
    uint64_t last_send_ms;
    uint64_t replayed_upto; /* history's id: live copies of these are skipped */
    struct sse_sub *prev, *next;
} sse_sub_t;

static sse_sub_t *subs;

/* An update published and not yet confirmed: its answer waits until the
 * update comes back from vc-bus, which has then kept it in the history,
 * so that a subscriber told its id can replay from it at once. In the
 * request's pool: gone with the request if its client leaves. */
#define CONFIRM_TIMEOUT_MS 5000

typedef struct pending {
    h2o_req_t *req; /* NULL once answered */
    char id[128];
    uint64_t deadline_ms;
    struct pending *prev, *next;
} pending_t;

static pending_t *pendings;

static void pending_unlink(pending_t *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else if (pendings == p)
        pendings = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
}

static void on_pending_dispose(void *arg)
{
    pending_unlink(arg);
}

static void hub_room(const rt_site_t *rs, char *out, size_t n)
{
    snprintf(out, n, "~mercure:%s", rs->site->conf->name);
}

static int answer(h2o_req_t *req, int status, const char *reason, const char *body)
{
    rt_stats.api_refused += status >= 400;
    req->res.status = status;
    req->res.reason = reason;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("text/plain; charset=utf-8"));
    h2o_send_inline(req, body, strlen(body));
    return 1;
}

/* The JWT a request carries, or {NULL, 0}. */
static h2o_iovec_t token_of(h2o_req_t *req)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    if (i != -1) {
        h2o_iovec_t v = req->headers.entries[i].value;
        if (v.len > 7 && h2o_lcstris(v.base, 7, H2O_STRLIT("bearer ")))
            return h2o_iovec_init(v.base + 7, v.len - 7);
    }
    for (i = -1; (i = h2o_find_header(&req->headers, H2O_TOKEN_COOKIE, i)) != -1;) {
        h2o_iovec_t v = req->headers.entries[i].value;
        const char *p = memmem(v.base, v.len, "mercureAuthorization=", 21);
        if (p && (p == v.base || p[-1] == ' ' || p[-1] == ';')) {
            p += 21;
            const char *end = memchr(p, ';', (size_t)(v.base + v.len - p));
            return h2o_iovec_init(p, end ? (size_t)(end - p) : (size_t)(v.base + v.len - p));
        }
    }
    return h2o_iovec_init(NULL, 0);
}

/* The claim's selectors (mercure.publish or mercure.subscribe), copied. */
static char **selectors_of(json_t *claims, const char *which, size_t *n)
{
    json_t *list = json_object_get(json_object_get(claims, "mercure"), which);
    *n = 0;
    if (!json_is_array(list))
        return NULL;
    char **out = vc_calloc(json_array_size(list) + 1, sizeof(*out));
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *s = json_string_value(json_array_get(list, i));
        if (s)
            out[(*n)++] = vc_strdup(s);
    }
    return out;
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

static int any_match(char *const *sel, size_t nsel, const Vc__RoomMessage *m)
{
    for (size_t i = 0; i < nsel; i++)
        for (size_t t = 0; t < m->n_topics; t++)
            if (mercure_match(sel[i], m->topics[t]))
                return 1;
    return 0;
}

/* ---- the stream ------------------------------------------------------------ */

static void sub_free(sse_sub_t *s)
{
    rooms_leave(&s->sub);
    if (s->prev)
        s->prev->next = s->next;
    else
        subs = s->next;
    if (s->next)
        s->next->prev = s->prev;
    rt_stats.connections--;
    free_list(s->sel, s->nsel);
    free_list(s->allow, s->nallow);
    free(s->buf);
    free(s->inflight);
    free(s);
}

static void kick(sse_sub_t *s)
{
    if (s->sending || s->done)
        return;
    if (s->cut) {
        /* Ends the answer: the client reconnects, with its last id. */
        s->done = 1;
        h2o_send(s->req, NULL, 0, H2O_SEND_STATE_ERROR);
        sub_free(s);
        return;
    }
    if (s->len == 0)
        return;
    free(s->inflight);
    s->inflight = s->buf;
    h2o_iovec_t v = h2o_iovec_init(s->buf, s->len);
    s->buf = NULL;
    s->len = s->cap = 0;
    s->sending = 1;
    s->last_send_ms = vc_mono_ms();
    h2o_send(s->req, &v, 1, H2O_SEND_STATE_IN_PROGRESS);
}

static void on_proceed(h2o_generator_t *gen, h2o_req_t *req)
{
    sse_sub_t *s = H2O_STRUCT_FROM_MEMBER(sse_sub_t, gen, gen);
    s->sending = 0;
    kick(s);
}

static void on_stop(h2o_generator_t *gen, h2o_req_t *req)
{
    sse_sub_t *s = H2O_STRUCT_FROM_MEMBER(sse_sub_t, gen, gen);
    s->done = 1;
    sub_free(s);
}

static void append(sse_sub_t *s, const char *p, size_t n)
{
    if (s->cut || s->done)
        return;
    if (s->len + n > (size_t)s->f->settings->realtime_max_queue) {
        /* A subscriber that does not read: what waits is dropped and the
         * stream ends once h2o has sent what it holds. */
        vc_log(VC_LOG_NOTICE, "realtime", "ending an SSE subscription whose client does not read");
        s->cut = 1;
        rt_stats.connections_cut++;
        free(s->buf);
        s->buf = NULL;
        s->len = s->cap = 0;
        return;
    }
    if (s->len + n > s->cap) {
        s->cap = (s->len + n) * 2;
        s->buf = vc_realloc(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

/* One update as SSE: id, event, retry, then data line by line. */
static void append_update(sse_sub_t *s, const Vc__RoomMessage *m)
{
    char head[512];
    int n = snprintf(head, sizeof(head), "id: %s\n", m->event_id[0] ? m->event_id : "-");
    append(s, head, (size_t)n);
    if (m->event[0]) {
        n = snprintf(head, sizeof(head), "event: %s\n", m->event);
        append(s, head, (size_t)n);
    }
    if (m->retry) {
        n = snprintf(head, sizeof(head), "retry: %u\n", m->retry);
        append(s, head, (size_t)n);
    }
    const char *p = (const char *)m->data.data, *end = p + m->data.len;
    do {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t line = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (line && p[line - 1] == '\r')
            line--;
        append(s, "data: ", 6);
        append(s, p, line);
        append(s, "\n", 1);
        p = nl ? nl + 1 : end;
    } while (p < end);
    append(s, "\n", 1);
}

static int wanted(const sse_sub_t *s, const Vc__RoomMessage *m)
{
    return any_match(s->sel, s->nsel, m) && (!m->private_ || any_match(s->allow, s->nallow, m));
}

static void deliver(rt_sub_t *rs, const Vc__RoomMessage *m, ws_out_t **frame)
{
    (void)frame;
    sse_sub_t *s = (sse_sub_t *)rs;
    if (m->id <= s->replayed_upto || !wanted(s, m))
        return;
    append_update(s, m);
    kick(s);
}

static const rt_sub_ops_t sse_ops = {.deliver = deliver};

typedef struct replay {
    sse_sub_t *s;
    const char *after; /* the client's last id; NULL: all */
    int found;
    char last[128]; /* the newest id in history */
} replay_t;

static int replay_one(const Vc__RoomMessage *m, void *arg)
{
    replay_t *r = arg;
    snprintf(r->last, sizeof(r->last), "%s", m->event_id);
    r->s->replayed_upto = m->id;
    if (r->found && wanted(r->s, m))
        append_update(r->s, m);
    if (!r->found && r->after && strcmp(m->event_id, r->after) == 0)
        r->found = 1;
    return 0;
}

static int subscribe(front_t *f, rt_site_t *rs, h2o_req_t *req, const rt_form_t *q)
{
    size_t nsel = 0;
    for (size_t at = 0; rt_form_next(q, "topic", &at);)
        nsel++;
    if (nsel == 0)
        return answer(req, 400, "Bad Request", "Missing \"topic\" parameter\n");
    if ((int64_t)nsel > f->settings->realtime_max_channels)
        return answer(req, 400, "Bad Request", "Too many \"topic\" parameters (front.realtime_max_channels)\n");
    json_t *claims = NULL;
    h2o_iovec_t tok = token_of(req);
    if (tok.base) {
        const char *why;
        const char *key = rs->mercure_subscriber_key;
        claims = jwt_hs256_verify(tok.base, tok.len, key, strlen(key), vc_wall_ms() / 1000, &why);
        if (claims == NULL) {
            vc_log(VC_LOG_NOTICE, "realtime", "401 for a Mercure subscription: %s", why);
            return answer(req, 401, "Unauthorized", "The subscriber's JWT is not valid\n");
        }
    }
    sse_sub_t *s = vc_calloc(1, sizeof(*s));
    s->f = f;
    s->req = req;
    s->sub.ops = &sse_ops;
    s->sel = vc_calloc(nsel, sizeof(*s->sel));
    for (size_t at = 0; s->nsel < nsel;)
        s->sel[s->nsel++] = vc_strdup(rt_form_next(q, "topic", &at));
    s->allow = selectors_of(claims, "subscribe", &s->nallow);
    json_decref(claims);
    s->gen.proceed = on_proceed;
    s->gen.stop = on_stop;
    s->next = subs;
    if (subs)
        subs->prev = s;
    subs = s;
    rt_stats.connections++;
    rt_stats.connections_total++;

    char room[300];
    hub_room(rs, room, sizeof(room));
    rooms_join(room, &s->sub);
    /* Joined first, then the history read: nothing falls between. */
    const char *after = rt_form_get(q, "lastEventID");
    ssize_t li = h2o_find_header_by_str(&req->headers, H2O_STRLIT("last-event-id"), -1);
    char *from_header =
        li != -1 ? h2o_strdup(&req->pool, req->headers.entries[li].value.base, req->headers.entries[li].value.len).base
                 : NULL;
    if (from_header)
        after = from_header;
    replay_t r = {.s = s, .after = after, .found = after && strcmp(after, "earliest") == 0};
    rooms_history(f, room, 0, replay_one, &r); /* for the newest id, if nothing else */
    if (after && !r.found) {
        /* Older than anything kept: everything kept, rather than less. */
        r.found = 1;
        s->replayed_upto = 0;
        rooms_history(f, room, 0, replay_one, &r);
    }
    req->res.status = 200;
    req->res.reason = "OK";
    req->pathconf = rs->streams; /* no compression: each update goes as it comes */
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/event-stream"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-cache"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-accel-buffering"), 0, NULL, H2O_STRLIT("no"));
    const char *last = r.last[0] ? r.last : "earliest";
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("last-event-id"), 0, NULL,
                          h2o_strdup(&req->pool, last, SIZE_MAX).base, strlen(last));
    h2o_start_response(req, &s->gen);
    if (s->len == 0)
        append(s, ":\n", 2); /* the head leaves now, not with the first update */
    kick(s);
    return 1;
}

/* ---- publishing ------------------------------------------------------------ */

static int publish(front_t *f, rt_site_t *rs, h2o_req_t *req)
{
    h2o_iovec_t tok = token_of(req);
    const char *why = "no JWT (Authorization: Bearer, or the mercureAuthorization cookie)";
    const char *key = rs->mercure_publisher_key;
    json_t *claims = tok.base ? jwt_hs256_verify(tok.base, tok.len, key, strlen(key), vc_wall_ms() / 1000, &why) : NULL;
    if (claims == NULL) {
        vc_log(VC_LOG_NOTICE, "realtime", "401 for a Mercure update: %s", why);
        return answer(req, 401, "Unauthorized", "The publisher's JWT is missing or not valid\n");
    }
    size_t nallow;
    char **allow = selectors_of(claims, "publish", &nallow);
    json_decref(claims);
    rt_form_t form;
    if (rt_form_parse(&form, req->entity.base ? req->entity.base : "", req->entity.len, MAX_FORM_PAIRS) < 0) {
        free_list(allow, nallow);
        return answer(req, 400, "Bad Request", "The body is not application/x-www-form-urlencoded\n");
    }
    Vc__RoomMessage m = VC__ROOM_MESSAGE__INIT;
    size_t ntopics = 0;
    for (size_t at = 0; rt_form_next(&form, "topic", &at);)
        ntopics++;
    char **topics = vc_calloc(ntopics + 1, sizeof(*topics));
    const char *bad = ntopics == 0 ? "Missing \"topic\" parameter\n" : NULL;
    for (size_t at = 0, i = 0; i < ntopics; i++) {
        topics[i] = (char *)rt_form_next(&form, "topic", &at);
        int ok = 0;
        for (size_t k = 0; k < nallow && !ok; k++)
            ok = mercure_match(allow[k], topics[i]);
        if (strlen(topics[i]) > MAX_TOPIC)
            bad = "A topic is over 2048 bytes\n";
        else if (!ok && bad == NULL)
            bad = "forbidden";
    }
    const char *data = rt_form_get(&form, "data"), *id = rt_form_get(&form, "id"), *type = rt_form_get(&form, "type"),
               *retry = rt_form_get(&form, "retry");
    if (data == NULL)
        data = "";
    if (id && (id[0] == '#' || strlen(id) > 100 || strchr(id, '\n') || strchr(id, '\r')))
        bad = "The \"id\" is over 100 bytes, has a line break, or starts with '#'\n";
    if (type && (strlen(type) > 200 || strchr(type, '\n') || strchr(type, '\r')))
        bad = "The \"type\" is over 200 bytes or has a line break\n";
    if (strlen(data) > (size_t)f->settings->realtime_max_message)
        bad = "The data is over front.realtime_max_message\n";
    int rc;
    if (bad && strcmp(bad, "forbidden") == 0) {
        rc = answer(req, 403, "Forbidden", "The JWT's mercure.publish does not cover every topic of the update\n");
    } else if (bad) {
        rc = answer(req, 400, "Bad Request", bad);
    } else {
        char uuid[VC_URN_UUID_LEN + 1];
        if (id == NULL) {
            vc_urn_uuid(uuid);
            id = uuid;
        }
        char room[300];
        hub_room(rs, room, sizeof(room));
        m.room = room;
        m.event = (char *)(type ? type : "");
        m.data.data = (uint8_t *)data;
        m.data.len = strlen(data);
        m.except = "";
        m.user_id = "";
        m.topics = topics;
        m.n_topics = ntopics;
        m.private_ = rt_form_get(&form, "private") != NULL;
        m.event_id = (char *)id;
        m.retry = retry ? (uint32_t)strtoul(retry, NULL, 10) : 0;
        m.keep = 1;
        m.time_ms = vc_wall_ms();
        if (rooms_publish(&m) < 0) {
            rt_stats.publish_dropped++;
            rc = answer(req, 503, "Service Unavailable", "The event bus is not taking updates\n");
        } else {
            rt_stats.published++;
            pending_t *p = h2o_mem_alloc_shared(&req->pool, sizeof(*p), on_pending_dispose);
            memset(p, 0, sizeof(*p));
            p->req = req;
            snprintf(p->id, sizeof(p->id), "%s", id);
            p->deadline_ms = vc_mono_ms() + CONFIRM_TIMEOUT_MS;
            p->next = pendings;
            if (pendings)
                pendings->prev = p;
            pendings = p;
            rc = 1;
        }
    }
    free(topics);
    rt_form_free(&form);
    free_list(allow, nallow);
    return rc;
}

void mercure_php_publish(rt_site_t *rs, const Vc__Publish *p)
{
    const char *why = NULL;
    if (rs->mercure_publisher_key == NULL)
        why = "the site has no Mercure hub (no realtime app, no mercure_publisher_key)";
    else if (p->n_topics > 100)
        why = "over 100 topics";
    else if (vc_ws_utf8_feed(0, p->data.data, p->data.len) != 0)
        why = "the data is not UTF-8";
    for (size_t i = 0; why == NULL && i < p->n_topics; i++)
        if (strlen(p->topics[i]) > MAX_TOPIC)
            why = "a topic is over 2048 bytes";
    if (why == NULL && (strlen(p->event_id) > 100 || strpbrk(p->event_id, "\r\n") || strpbrk(p->type, "\r\n")))
        why = "the id or type is over its length or has a line break";
    if (why) {
        /* The worker checked all this: only native code sends such a thing. */
        vc_log(VC_LOG_NOTICE, "realtime", "vc_mercure_publish() dropped: %s", why);
        return;
    }
    char room[300];
    hub_room(rs, room, sizeof(room));
    Vc__RoomMessage m = VC__ROOM_MESSAGE__INIT;
    m.room = room;
    m.event = p->type;
    m.data = p->data;
    m.except = "";
    m.user_id = "";
    m.topics = p->topics;
    m.n_topics = p->n_topics;
    m.private_ = p->private_;
    m.event_id = p->event_id;
    m.keep = 1;
    m.time_ms = vc_wall_ms();
    if (rooms_publish(&m) < 0) {
        rt_stats.publish_dropped++;
        return;
    }
    rt_stats.published++;
    rt_stats.php_published++;
}

int mercure_take(front_t *f, rt_site_t *rs, h2o_req_t *req)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    if (rs->mercure_publisher_key == NULL)
        return 0;
    rt_stats.api_calls++;
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST")))
        return publish(f, rs, req);
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")))
        return answer(req, 405, "Method Not Allowed", "A Mercure hub takes GET (subscribe) and POST (publish)\n");
    rt_form_t q = {0};
    if (req->query_at != SIZE_MAX &&
        rt_form_parse(&q, req->path.base + req->query_at + 1, req->path.len - req->query_at - 1, MAX_FORM_PAIRS) < 0)
        return answer(req, 400, "Bad Request", "The query is not well formed\n");
    int rc = subscribe(f, rs, req, &q);
    rt_form_free(&q);
    return rc;
}

/* rooms' on_kept: an update of ours is back from the bus, and kept. */
static void on_kept(const Vc__RoomMessage *m)
{
    if (strncmp(m->room, "~mercure:", 9) != 0)
        return;
    for (pending_t *p = pendings; p; p = p->next)
        if (strcmp(p->id, m->event_id) == 0) {
            pending_unlink(p);
            answer(p->req, 200, "OK", p->id);
            return;
        }
}

void mercure_start(void)
{
    rooms_on_kept(on_kept);
}

void mercure_tick(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    uint64_t t = vc_mono_ms();
    for (pending_t *p = pendings, *next; p; p = next) {
        next = p->next;
        if (t >= p->deadline_ms) {
            pending_unlink(p);
            answer(p->req, 503, "Service Unavailable",
                   "vc-bus did not confirm the update in 5 s: it may still be delivered\n");
        }
    }
    uint64_t now = vc_mono_ms(), every = (uint64_t)f->settings->mercure_heartbeat_ms;
    for (sse_sub_t *s = subs, *next; s; s = next) {
        next = s->next;
        if (!s->sending && now - s->last_send_ms >= every) {
            append(s, ":\n", 2);
            kick(s); /* may free s */
        }
    }
}

void mercure_going_away(void)
{
    for (sse_sub_t *s = subs, *next; s; s = next) {
        next = s->next;
        s->cut = 1; /* the stream ends; EventSource reconnects to the next front */
        kick(s);
    }
}
