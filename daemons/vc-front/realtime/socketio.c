/*
 * Socket.IO at a site's socketio.path (docs/socketio.md): Engine.IO v4 over
 * WebSocket, and Socket.IO v5's namespaces on it, as socket.io 4.8 answers
 * a client that has no event handler: a CONNECT to a namespace the site
 * lists is accepted with the socket's id, to another refused with
 * "Invalid namespace"; the server pings each pingInterval and closes a
 * connection whose pong does not come within pingTimeout; a packet the
 * reference would not read, or one in a state it does not accept (an
 * event on a namespace not joined, text while a binary packet's
 * attachments are awaited), closes the connection as it does.
 *
 * Each socket (a connection's namespace) is in rooms (sio_rooms.h), which
 * PHP's vc_socketio_*() reach on every front and node.
 *
 * Long-polling, the upgrade from it and handlers in PHP are not here yet:
 * a polling request is answered as the reference answers it when
 * configured with transports: ["websocket"] (400, "Transport unknown"),
 * so a client must be given that option.
 */
#include "realtime.h"
#include "sio_handler.h"
#include "sio_rooms.h"
#include "sio_wire.h"
#include "vc_log.h"
#include "vc_util.h"
#include "ws_conn.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* With no namespace joined this long, the reference closes (its
 * connectTimeout). */
#define CONNECT_TIMEOUT_MS 45000
/* Namespaces one connection may join. */
#define MAX_NSPS 32
/* Handler calls one connection may have waiting: a client that sends
 * faster than its handler answers is closed, not queued without end. */
#define MAX_JOBS 64

typedef struct sio_nsp {
    char name[SIO_NSP_MAX + 1];
    sio_socket_t *sock; /* its id and rooms */
    int pending;        /* its connect handler has not answered yet */
} sio_nsp_t;

enum { JOB_CONNECT, JOB_EVENT, JOB_DISCONNECT };
static const char *const job_kinds[] = {"connect", "event", "disconnect"};

/* A handler call waiting its turn: one runs at a time per connection, so
 * a socket's events reach PHP in the order they were sent. */
typedef struct sio_job {
    int kind;
    char id[24]; /* the socket's: found again by it when answered */
    char *body;  /* the handler's JSON */
    int has_ack;
    uint64_t ack;
    struct sio_job *next;
} sio_job_t;

typedef struct sio_conn sio_conn_t;
struct sio_conn {
    ws_conn_t *ws;
    const vc_site_t *conf;
    char sid[24];
    uint64_t opened_ms, ping_sent_ms, next_ping_ms; /* monotonic; ping_sent_ms 0: none out */
    sio_nsp_t nsps[MAX_NSPS];
    size_t nnsps;
    unsigned awaiting;   /* attachments of a binary packet still to come */
    sio_handshake_t *hs; /* NULL: the site has no handler */
    sio_job_t *jobs, *jobs_tail, *running;
    size_t njobs;
    sio_call_t *call;   /* running's */
    const char *reason; /* why it closes, as socket.io says it to a disconnect handler */
    sio_conn_t *prev, *next;
};

static sio_conn_t *conns;

/* base64id's form, as engine.io and socket.io make ids: 15 random bytes,
 * base64 with "-" and "_". */
static void new_id(char out[24])
{
    unsigned char raw[15];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(out, 24, raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE);
}

static void send_packet(sio_conn_t *c, int eio_type, const char *data, size_t len)
{
    char *text = vc_malloc(len + 1);
    text[0] = (char)('0' + eio_type);
    memcpy(text + 1, data, len);
    ws_send_text(c->ws, text, len + 1);
    free(text);
}

static void send_sio(sio_conn_t *c, int type, const char *nsp, const char *json)
{
    size_t len;
    char *text = sio_encode(type, 0, nsp, 0, 0, json, json ? strlen(json) : 0, &len);
    send_packet(c, EIO_MESSAGE, text, len);
    free(text);
}

static int nsp_listed(const vc_site_t *s, const char *nsp)
{
    if (s->nsocketio_namespaces == 0)
        return strcmp(nsp, "/") == 0;
    for (size_t i = 0; i < s->nsocketio_namespaces; i++)
        if (strcmp(s->socketio_namespaces[i], nsp) == 0)
            return 1;
    return 0;
}

static sio_nsp_t *joined(sio_conn_t *c, const char *nsp)
{
    for (size_t i = 0; i < c->nnsps; i++)
        if (strcmp(c->nsps[i].name, nsp) == 0)
            return &c->nsps[i];
    return NULL;
}

static sio_nsp_t *by_id(sio_conn_t *c, const char *id)
{
    for (size_t i = 0; i < c->nnsps; i++)
        if (strcmp(c->nsps[i].sock->id, id) == 0)
            return &c->nsps[i];
    return NULL;
}

/* What the reference closes the whole connection for; reason as socket.io
 * tells a disconnect handler. */
static int close_as(sio_conn_t *c, const char *reason, const char *why)
{
    vc_log(VC_LOG_DEBUG, "socketio", "closing %s: %s", c->sid, why);
    if (c->reason == NULL)
        c->reason = reason;
    ws_close(c->ws, VC_WS_CLOSE_NORMAL, "");
    return 1;
}

static int close_for(sio_conn_t *c, const char *why)
{
    return close_as(c, "parse error", why);
}

static void run_next(sio_conn_t *c);

static void job_free(sio_job_t *j)
{
    if (j) {
        free(j->body);
        free(j);
    }
}

/* Queues a handler call (body taken); 0, or -1 (and the connection
 * closed) if too many wait. */
static int job_add(sio_conn_t *c, int kind, const char *id, json_t *body, const sio_packet_t *p)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(body);
    if (c->njobs == MAX_JOBS || text == NULL) {
        free(text);
        close_as(c, "forced server close", "its handler calls are too far behind");
        return -1;
    }
    sio_job_t *j = vc_calloc(1, sizeof(*j));
    j->kind = kind;
    snprintf(j->id, sizeof(j->id), "%s", id);
    j->body = text;
    if (p && p->has_id) {
        j->has_ack = 1;
        j->ack = p->id_nan ? SIO_ID_NAN : p->id;
    }
    if (c->jobs_tail)
        c->jobs_tail->next = j;
    else
        c->jobs = j;
    c->jobs_tail = j;
    c->njobs++;
    run_next(c);
    return 0;
}

static json_t *disconnect_json(const sio_nsp_t *n, const char *reason)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "type", "disconnect", "socket", n->sock->id, "namespace", n->name,
                     "reason", reason);
}

static char *disconnect_body(const sio_nsp_t *n, const char *reason)
{
    json_t *j = disconnect_json(n, reason);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return text;
}

/* The socket leaves the namespace: out of its rooms, and out of c; its
 * disconnect handler runs (reason NULL: it never connected). */
static void nsp_leave(sio_conn_t *c, sio_nsp_t *n, const char *reason)
{
    json_t *bye = reason && c->hs && !n->pending ? disconnect_json(n, reason) : NULL;
    char id[24];
    snprintf(id, sizeof(id), "%s", n->sock->id);
    sio_socket_free(n->sock);
    *n = c->nsps[--c->nnsps];
    /* Queued once n is gone: a handler may answer at once, and its answer
     * may move the other namespaces in c->nsps. */
    if (bye)
        job_add(c, JOB_DISCONNECT, id, bye, NULL);
}

/* The connect handler's word: 2xx lets the socket in; anything else
 * refuses it with the handler's {"message", "data"}, as a socket.io
 * middleware's next(err) does. */
static void connect_answered(sio_conn_t *c, sio_nsp_t *n, int status, const char *body, size_t len)
{
    if (status >= 200 && status <= 299) {
        n->pending = 0;
        char json[48];
        snprintf(json, sizeof(json), "{\"sid\":\"%s\"}", n->sock->id);
        send_sio(c, SIO_CONNECT, n->name, json);
        return;
    }
    json_t *answer = json_loadb(body, len, 0, NULL), *err = json_object();
    json_t *msg = json_object_get(answer, "message");
    if (!json_is_string(msg) && status != 401 && status != 403)
        vc_log(VC_LOG_NOTICE, "socketio", "%s's handler answered %d to a connect: refused", c->conf->name, status);
    json_object_set_new(err, "message",
                        json_is_string(msg)              ? json_incref(msg)
                        : status == 401 || status == 403 ? json_string("Forbidden")
                                                         : json_string("Handler failed"));
    if (json_object_get(answer, "data"))
        json_object_set(err, "data", json_object_get(answer, "data"));
    char *text = json_dumps(err, JSON_COMPACT);
    send_sio(c, SIO_CONNECT_ERROR, n->name, text);
    free(text);
    json_decref(err);
    json_decref(answer);
    nsp_leave(c, n, NULL);
}

/* An event handler's answer is the ack's arguments: a JSON array as it
 * is, any other JSON value as the one argument, nothing as none. */
static void ack_answered(sio_conn_t *c, sio_nsp_t *n, const sio_job_t *j, int status, const char *body, size_t len)
{
    if (status < 200 || status > 299) {
        vc_log(VC_LOG_NOTICE, "socketio", "%s's handler answered %d to an event: no ack", c->conf->name, status);
        return;
    }
    size_t at = 0;
    while (at < len && strchr(" \t\r\n", body[at]))
        at++;
    json_error_t e;
    json_t *v = at < len ? json_loadb(body + at, len - at, JSON_DECODE_ANY, &e) : json_array();
    if (v == NULL) {
        vc_log(VC_LOG_NOTICE, "socketio", "%s's handler answered an event with no JSON: no ack", c->conf->name);
        return;
    }
    char *args;
    if (json_is_array(v)) {
        args = json_dumps(v, JSON_COMPACT);
    } else {
        json_t *one = json_pack("[O]", v);
        args = json_dumps(one, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(one);
    }
    json_decref(v);
    size_t plen;
    char *packet = sio_encode(SIO_ACK, 0, n->name, 1, j->ack, args, strlen(args), &plen);
    send_packet(c, EIO_MESSAGE, packet, plen);
    free(packet);
    free(args);
}

static void on_answer(void *owner, int status, const char *body, size_t len)
{
    sio_conn_t *c = owner;
    sio_job_t *j = c->running;
    c->running = NULL;
    sio_nsp_t *n = by_id(c, j->id);
    if (n && j->kind == JOB_CONNECT && n->pending)
        connect_answered(c, n, status, body, len);
    else if (n && j->kind == JOB_EVENT && j->has_ack && !n->pending)
        ack_answered(c, n, j, status, body, len);
    else if (j->kind == JOB_DISCONNECT && (status < 200 || status > 299))
        vc_log(VC_LOG_NOTICE, "socketio", "%s's handler answered %d to a disconnect", c->conf->name, status);
    job_free(j);
    run_next(c);
}

static void run_next(sio_conn_t *c)
{
    if (c->running || c->jobs == NULL || ws_closing(c->ws))
        return;
    sio_job_t *j = c->jobs;
    c->jobs = j->next;
    if (c->jobs == NULL)
        c->jobs_tail = NULL;
    c->njobs--;
    c->running = j;
    char *body = j->body;
    j->body = NULL;
    sio_call(c->hs, job_kinds[j->kind], body, on_answer, c, &c->call);
}

/* The connection is gone: what waited still reaches the handler, with no
 * one to answer (events, then each namespace's disconnect), each on its
 * own; the call running is let finish unheard. */
static void jobs_after_close(sio_conn_t *c)
{
    if (c->call)
        sio_call_forget(c->call);
    job_free(c->running);
    for (sio_job_t *j = c->jobs, *next; j; j = next) {
        next = j->next;
        if (j->kind != JOB_CONNECT) {
            sio_call(c->hs, job_kinds[j->kind], j->body, NULL, NULL, NULL);
            j->body = NULL;
        }
        job_free(j);
    }
    c->jobs = c->jobs_tail = c->running = NULL;
}

static int on_sio(sio_conn_t *c, const char *text, size_t len)
{
    sio_packet_t p;
    char why[64];
    if (sio_decode(text, len, &p, why, sizeof(why)) != 0)
        return close_for(c, why);
    sio_nsp_t *n = joined(c, p.nsp);
    int rc = 0;
    if (n == NULL && p.type == SIO_CONNECT) {
        if (!nsp_listed(c->conf, p.nsp)) {
            send_sio(c, SIO_CONNECT_ERROR, p.nsp, "{\"message\":\"Invalid namespace\"}");
        } else if (c->nnsps == MAX_NSPS) {
            send_sio(c, SIO_CONNECT_ERROR, p.nsp, "{\"message\":\"Too many namespaces on one connection\"}");
        } else {
            n = &c->nsps[c->nnsps++];
            snprintf(n->name, sizeof(n->name), "%s", p.nsp);
            char id[24];
            new_id(id);
            /* In its rooms from now: the connect handler may join it to
             * others, and what they carry reaches it (the client keeps
             * it until the CONNECT, as socket.io's does). */
            n->sock = sio_socket_new(c->conf->name, p.nsp, id, c);
            n->pending = c->hs != NULL;
            if (n->pending) {
                job_add(c, JOB_CONNECT, id,
                        json_pack("{s:s, s:s, s:s, s:O?}", "type", "connect", "socket", id, "namespace", p.nsp, "auth",
                                  p.data),
                        NULL);
            } else {
                char json[48];
                snprintf(json, sizeof(json), "{\"sid\":\"%s\"}", id);
                send_sio(c, SIO_CONNECT, p.nsp, json);
            }
        }
    } else if (n && !n->pending && p.type == SIO_DISCONNECT) {
        nsp_leave(c, n, "client namespace disconnect");
    } else if (n && !n->pending && p.type != SIO_CONNECT && p.type != SIO_CONNECT_ERROR) {
        /* A binary packet's attachments follow; binary events do not
         * reach PHP yet. An event goes to the handler (if there is one:
         * else, as the reference with no listener, nothing); an ack from
         * a client answers nothing the server asked. */
        if (p.type == SIO_BINARY_EVENT || p.type == SIO_BINARY_ACK) {
            c->awaiting = p.attachments;
        } else if (p.type == SIO_EVENT && c->hs) {
            json_t *args = json_array();
            for (size_t i = 1; i < json_array_size(p.data); i++)
                json_array_append(args, json_array_get(p.data, i));
            rc =
                job_add(c, JOB_EVENT, n->sock->id,
                        json_pack("{s:s, s:s, s:s, s:O, s:o, s:b}", "type", "event", "socket", n->sock->id, "namespace",
                                  p.nsp, "event", json_array_get(p.data, 0), "args", args, "ack", p.has_id),
                        &p) != 0;
        }
    } else {
        rc = close_for(c, "a packet this state does not take");
    }
    sio_packet_clear(&p);
    return rc;
}

static int on_message(ws_conn_t *ws, const vc_ws_message_t *m)
{
    sio_conn_t *c = ws_data(ws);
    if (m->opcode == VC_WS_OP_BINARY) { /* a binary packet's attachment */
        if (c->awaiting == 0)
            return close_for(c, "binary data with no binary packet awaiting it");
        c->awaiting--;
        return 0;
    }
    eio_packet_t p;
    uint8_t none[1];
    if (eio_decode((const char *)m->data, m->len, &p, none, 0) != 0 || p.binary)
        return close_for(c, "not an Engine.IO packet");
    switch (p.type) {
    case EIO_PONG:
        c->ping_sent_ms = 0;
        c->next_ping_ms = vc_mono_ms() + (uint64_t)c->conf->socketio_ping_interval_ms;
        return 0;
    case EIO_PING: /* a client's probe ("2probe") is answered in kind */
        send_packet(c, EIO_PONG, p.data, p.len);
        return 0;
    case EIO_MESSAGE:
        if (c->awaiting)
            return close_for(c, "text while a binary packet's attachments are awaited");
        return on_sio(c, p.data, p.len);
    case EIO_CLOSE: return close_as(c, "transport close", "the client closed");
    case EIO_OPEN: return close_for(c, "an open packet from a client");
    default: return 0; /* upgrade and noop: nothing to do on WebSocket */
    }
}

static void on_open(ws_conn_t *ws)
{
    sio_conn_t *c = ws_data(ws);
    char open[256];
    int n = snprintf(open, sizeof(open),
                     "{\"sid\":\"%s\",\"upgrades\":[],\"pingInterval\":%lld,\"pingTimeout\":%lld,\"maxPayload\":%lld}",
                     c->sid, (long long)c->conf->socketio_ping_interval_ms,
                     (long long)c->conf->socketio_ping_timeout_ms, (long long)c->conf->socketio_max_payload);
    send_packet(c, EIO_OPEN, open, (size_t)n);
    c->opened_ms = vc_mono_ms();
    c->next_ping_ms = c->opened_ms + (uint64_t)c->conf->socketio_ping_interval_ms;
}

static void on_closed(ws_conn_t *ws)
{
    sio_conn_t *c = ws_data(ws);
    /* What waited for a handler goes on without the connection, then
     * each namespace's disconnect, in that order of sending. */
    if (c->hs)
        jobs_after_close(c);
    const char *reason = c->reason ? c->reason : "transport close";
    while (c->nnsps) {
        sio_nsp_t *n = &c->nsps[c->nnsps - 1];
        if (c->hs && !n->pending)
            sio_call(c->hs, "disconnect", disconnect_body(n, reason), NULL, NULL, NULL);
        nsp_leave(c, n, NULL);
    }
    sio_handshake_unref(c->hs);
    if (c->prev)
        c->prev->next = c->next;
    else
        conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c);
}

/* What an operation from the bus does (sio_rooms.h). */
static void sock_send(sio_socket_t *s, ws_out_t *frame)
{
    sio_conn_t *c = s->owner;
    ws_send(c->ws, frame);
}

static void sock_disconnect(sio_socket_t *s, int close)
{
    sio_conn_t *c = s->owner;
    for (size_t i = 0; i < c->nnsps; i++)
        if (c->nsps[i].sock == s) {
            /* As socket.disconnect(close): the client reads "io server
             * disconnect" for that namespace. */
            send_sio(c, SIO_DISCONNECT, c->nsps[i].name, NULL);
            nsp_leave(c, &c->nsps[i], close ? NULL : "server namespace disconnect");
            break;
        }
    if (close)
        close_as(c, "forced server close", "disconnected with close by the application");
}

static const sio_socket_ops_t sock_ops = {.send = sock_send, .disconnect = sock_disconnect};

static const ws_callbacks_t callbacks = {.on_message = on_message, .on_closed = on_closed, .on_open = on_open};

/* The query parameter name's value (undecoded: these are short tokens),
 * or NULL. */
static const char *query_param(h2o_req_t *req, const char *name, char *buf, size_t cap)
{
    if (req->query_at == SIZE_MAX)
        return NULL;
    const char *q = req->path.base + req->query_at + 1, *end = req->path.base + req->path.len;
    size_t nl = strlen(name);
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q)), *stop = amp ? amp : end;
        if ((size_t)(stop - q) > nl && memcmp(q, name, nl) == 0 && q[nl] == '=') {
            size_t vl = (size_t)(stop - q) - nl - 1;
            if (vl >= cap)
                vl = cap - 1;
            memcpy(buf, q + nl + 1, vl);
            buf[vl] = '\0';
            return buf;
        }
        q = stop + 1;
    }
    return NULL;
}

/* engine.io's error codes and messages (its Server.errors). */
enum { E_TRANSPORT, E_SID, E_METHOD, E_BAD, E_FORBIDDEN, E_PROTOCOL };
static const char *const messages[] = {"Transport unknown", "Session ID unknown", "Bad handshake method",
                                       "Bad request",       "Forbidden",          "Unsupported protocol version"};

/* As the reference refuses: a WebSocket handshake with a plain 400 and the
 * message; any other request with JSON, 403 for Forbidden. */
static int refuse(h2o_req_t *req, int upgrade, int code)
{
    const char *msg = messages[code];
    if (upgrade) {
        req->res.status = 400;
        req->res.reason = "Bad Request";
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/html"));
        h2o_send_inline(req, msg, strlen(msg));
        return 1;
    }
    char body[96];
    int n = snprintf(body, sizeof(body), "{\"code\":%d,\"message\":\"%s\"}", code, msg);
    req->res.status = code == E_FORBIDDEN ? 403 : 400;
    req->res.reason = code == E_FORBIDDEN ? "Forbidden" : "Bad Request";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    h2o_send_inline(req, body, (size_t)n);
    return 1;
}

int socketio_take(front_t *f, rt_site_t *rs, h2o_req_t *req, int origin_ok)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    sio_rooms_init(&sock_ops);
    const vc_site_t *s = rs->site->conf;
    char transport[16], eio[8], sid[32];
    int upgrade = ws_is_upgrade(req);
    /* In the reference's order (engine.io's verify, then its handshake). */
    const char *t = query_param(req, "transport", transport, sizeof(transport));
    if (t == NULL || strcmp(t, "websocket") != 0)
        return refuse(req, upgrade, E_TRANSPORT); /* polling: not taken here yet */
    if (query_param(req, "sid", sid, sizeof(sid)) && sid[0])
        return refuse(req, upgrade, E_SID); /* no polling session to upgrade */
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")))
        return refuse(req, upgrade, E_METHOD);
    if (!upgrade)
        return refuse(req, upgrade, E_BAD);
    if (!origin_ok)
        return refuse(req, upgrade, E_FORBIDDEN);
    const char *v = query_param(req, "EIO", eio, sizeof(eio));
    if (v == NULL || strcmp(v, "4") != 0)
        return refuse(req, upgrade, E_PROTOCOL);
    sio_conn_t *c = vc_calloc(1, sizeof(*c));
    c->conf = s;
    new_id(c->sid);
    if (s->socketio_handler) {
        char path[256];
        snprintf(path, sizeof(path), "%s%s", s->socketio_handler[0] == '/' ? "" : "/", s->socketio_handler);
        c->hs = sio_handshake_keep(req, path);
    }
    ws_options_t opt = {
        .limits = {.max_frame = (size_t)s->socketio_max_payload, .max_message = (size_t)s->socketio_max_payload},
        .max_queue = (size_t)f->settings->realtime_max_queue,
    };
    int status;
    const char *why;
    c->ws = ws_upgrade(f, req, &callbacks, &opt, c, &status, &why);
    if (c->ws == NULL) {
        sio_handshake_unref(c->hs);
        free(c);
        return refuse(req, 1, E_BAD);
    }
    c->next = conns;
    if (conns)
        conns->prev = c;
    conns = c;
    return 1;
}

void socketio_tick(void)
{
    sio_rooms_tick();
    uint64_t now = vc_mono_ms();
    for (sio_conn_t *c = conns; c; c = c->next) {
        if (ws_closing(c->ws) || c->opened_ms == 0)
            continue;
        if (c->nnsps == 0 && now - c->opened_ms >= CONNECT_TIMEOUT_MS) {
            close_for(c, "no namespace joined within the connect timeout");
        } else if (c->ping_sent_ms && now - c->ping_sent_ms >= (uint64_t)c->conf->socketio_ping_timeout_ms) {
            rt_stats.connections_cut++;
            close_as(c, "ping timeout", "ping timeout");
        } else if (c->ping_sent_ms == 0 && now >= c->next_ping_ms) {
            send_packet(c, EIO_PING, "", 0);
            c->ping_sent_ms = now;
        }
    }
}

void socketio_going_away(void)
{
    for (sio_conn_t *c = conns; c; c = c->next)
        ws_close(c->ws, VC_WS_CLOSE_GOING_AWAY, "the server is restarting");
}

/* A room name as vc_socketio_*() checks it: the worker is the site's
 * own, but what it sends is read as outside input. */
static int rooms_ok(char **rooms, size_t n)
{
    if (n > 100)
        return 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(rooms[i]);
        if (len == 0 || len > 512 || vc_ws_utf8_feed(0, (const uint8_t *)rooms[i], len) != 0)
            return 0;
    }
    return 1;
}

void socketio_php_publish(rt_site_t *rs, const Vc__SioOp *op)
{
    const vc_site_t *s = rs->site->conf;
    const char *why = NULL;
    size_t plen = strlen(op->packet);
    if (s->socketio_path == NULL)
        why = "the site takes no Socket.IO clients (site.socketio)";
    else if (!nsp_listed(s, op->nsp))
        why = "the site serves no such namespace (site.socketio.namespaces)";
    else if (!rooms_ok(op->rooms, op->n_rooms) || !rooms_ok(op->except, op->n_except) ||
             !rooms_ok(op->join, op->n_join) || !rooms_ok(op->leave, op->n_leave))
        why = "a room's name is not 1 to 512 bytes of UTF-8, or more than 100 are named";
    else if (plen && (op->packet[0] != '[' || op->packet[plen - 1] != ']' ||
                      vc_ws_utf8_feed(0, (const uint8_t *)op->packet, plen) != 0))
        why = "the event is not a JSON array of UTF-8";
    if (why) {
        vc_log(VC_LOG_NOTICE, "socketio", "vc_socketio_*() for namespace \"%.256s\" dropped: %s", op->nsp, why);
        return;
    }
    Vc__SioOp out = *op;
    char *packet = NULL;
    if (plen) { /* [EVENT, ...ARGS] written as the namespace's EVENT packet */
        size_t len;
        packet = sio_encode(SIO_EVENT, 0, op->nsp, 0, 0, op->packet, plen, &len);
        out.packet = packet;
    }
    if (sio_rooms_publish(s->name, &out) == 0)
        rt_stats.php_published++;
    else
        rt_stats.publish_dropped++;
    free(packet);
}
