/*
 * Socket.IO at a site's socketio.path (docs/socketio.md): Engine.IO v4
 * sessions over WebSocket or HTTP long-polling (sio_polling.h), and the
 * upgrade from polling to WebSocket, with Socket.IO v5's namespaces on
 * them, as socket.io 4.8 answers: a CONNECT to a namespace the site lists
 * is accepted with the socket's id (or, with a handler, as the handler
 * says: sio_handler.h), to another refused with "Invalid namespace"; the
 * server pings each pingInterval and ends a session whose pong does not
 * come within pingTimeout; a packet the reference would not read, or one
 * in a state it does not accept (an event on a namespace not joined, text
 * while a binary packet's attachments are awaited), ends the session as
 * it does.
 *
 * Each socket (a session's namespace) is in rooms (sio_rooms.h), which
 * PHP's vc_socketio_*() reach on every front and node. A session lives in
 * the front process that opened it.
 */
#include "sio_http.h"
#include "sio_session.h"
#include "vc_log.h"
#include "vc_names.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* With no namespace joined this long, the reference closes (its
 * connectTimeout). */
#define CONNECT_TIMEOUT_MS 45000

static sio_conn_t *conns;

/* h2o's timeouts have one duration each: one per ping interval and ping
 * timeout the sites use, made as first needed. */
typedef struct ms_timeout {
    uint64_t ms;
    h2o_timeout_t t;
    struct ms_timeout *next;
} ms_timeout_t;
static ms_timeout_t *timeouts;

static h2o_timeout_t *timeout_of(h2o_loop_t *loop, uint64_t ms)
{
    for (ms_timeout_t *t = timeouts; t; t = t->next)
        if (t->ms == ms)
            return &t->t;
    ms_timeout_t *t = vc_calloc(1, sizeof(*t));
    t->ms = ms;
    h2o_timeout_init(loop, &t->t, ms);
    t->next = timeouts;
    timeouts = t;
    return &t->t;
}

/* Sessions by their id: a polling request, or the WebSocket that takes
 * over from polling, names its session. */
typedef struct sid_entry {
    vc_named_t named;
    sio_conn_t *c;
} sid_entry_t;
static vc_names_t by_sid;
#define SID_BUCKETS 4096

static sio_conn_t *session_find(const char *sid)
{
    if (by_sid.keys.buckets == NULL)
        return NULL;
    sid_entry_t *e = vc_names_find(&by_sid, sid);
    return e && !e->c->ended ? e->c : NULL;
}

static int session_end(sio_conn_t *c, const char *reason, uint16_t code, const char *why);

/* One Engine.IO packet's text to the client, by whichever transport
 * carries the session now. */
static void out_text(sio_conn_t *c, const char *text, size_t len)
{
    if (c->ended)
        return;
    if (c->ws) {
        ws_send_text(c->ws, text, len);
    } else if (c->poll && sio_poll_push(c->poll, text, len) != 0) {
        rt_stats.connections_cut++;
        session_end(c, "transport error", VC_WS_CLOSE_NORMAL, "a polling client's queue passed its bound");
    }
}

/* A frame made once for many sockets (sio_rooms.h). */
static void out_frame(sio_conn_t *c, ws_out_t *frame)
{
    if (c->ws && !c->ended) {
        ws_send(c->ws, frame);
    } else {
        size_t len;
        const uint8_t *text = ws_out_payload(frame, &len);
        out_text(c, (const char *)text, len);
    }
}

/* base64id's form, as engine.io and socket.io make ids: 15 random bytes,
 * base64 with "-" and "_". */
static void new_id(char out[24])
{
    unsigned char raw[15];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(out, 24, raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE);
}

void sio_send_packet(sio_conn_t *c, int eio_type, const char *data, size_t len)
{
    char *text = vc_malloc(len + 1);
    text[0] = (char)('0' + eio_type);
    memcpy(text + 1, data, len);
    out_text(c, text, len + 1);
    free(text);
}

void sio_send_sio(sio_conn_t *c, int type, const char *nsp, const char *json)
{
    size_t len;
    char *text = sio_encode(type, 0, nsp, 0, 0, json, json ? strlen(json) : 0, &len);
    sio_send_packet(c, EIO_MESSAGE, text, len);
    free(text);
}

int sio_nsp_listed(const vc_site_t *s, const char *nsp)
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

sio_nsp_t *sio_by_id(sio_conn_t *c, const char *id)
{
    for (size_t i = 0; i < c->nnsps; i++)
        if (strcmp(c->nsps[i].sock->id, id) == 0)
            return &c->nsps[i];
    return NULL;
}

/* What the reference closes the whole connection for; reason as socket.io
 * tells a disconnect handler. */
int sio_close_as(sio_conn_t *c, const char *reason, const char *why)
{
    return session_end(c, reason, VC_WS_CLOSE_NORMAL, why);
}

int sio_close_for(sio_conn_t *c, const char *why)
{
    return sio_close_as(c, "parse error", why);
}

/* The CONNECT that lets n's socket in: its id, and its private id when
 * the site has recovery. */
void sio_send_connect(sio_conn_t *c, const sio_nsp_t *n)
{
    char json[96];
    if (n->sock->pid[0])
        snprintf(json, sizeof(json), "{\"sid\":\"%s\",\"pid\":\"%s\"}", n->sock->id, n->sock->pid);
    else
        snprintf(json, sizeof(json), "{\"sid\":\"%s\"}", n->sock->id);
    sio_send_sio(c, SIO_CONNECT, n->name, json);
}

/* The socket leaves the namespace: out of its rooms, and out of c; its
 * disconnect handler runs (reason NULL: it never connected). */
void sio_nsp_leave(sio_conn_t *c, sio_nsp_t *n, const char *reason)
{
    json_t *bye = reason && c->hs && !n->pending ? sio_disconnect_json(n, reason) : NULL;
    char id[24];
    snprintf(id, sizeof(id), "%s", n->sock->id);
    sio_socket_free(n->sock);
    free(n->name);
    *n = c->nsps[--c->nnsps];
    /* Queued once n is gone: a handler may answer at once, and its answer
     * may move the other namespaces in c->nsps. */
    if (bye)
        sio_job_add(c, JOB_DISCONNECT, id, bye, NULL);
}

static int on_sio(sio_conn_t *c, const char *text, size_t len)
{
    sio_packet_t p;
    char why[64];
    if (sio_decode(text, len, &p, why, sizeof(why)) != 0)
        return sio_close_for(c, why);
    sio_nsp_t *n = joined(c, p.nsp);
    int rc = 0;
    if (n == NULL && p.type == SIO_CONNECT) {
        if (!sio_nsp_listed(c->conf, p.nsp)) {
            sio_send_sio(c, SIO_CONNECT_ERROR, p.nsp, "{\"message\":\"Invalid namespace\"}");
        } else if (c->nnsps == MAX_NSPS) {
            sio_send_sio(c, SIO_CONNECT_ERROR, p.nsp, "{\"message\":\"Too many namespaces on one connection\"}");
        } else {
            VC_GROW(c->nsps, c->capnsps, c->nnsps + 1, 1);
            n = &c->nsps[c->nnsps++];
            n->name = vc_strdup(p.nsp);
            /* A client back within the recovery window gets its socket
             * again (its id, its rooms) and what it missed, and no
             * connect handler runs: socket.io's skipMiddlewares. */
            json_t *pid = json_object_get(p.data, "pid"), *offset = json_object_get(p.data, "offset");
            n->sock =
                c->conf->socketio_recovery_ms > 0 && json_is_string(pid) && json_is_string(offset)
                    ? sio_socket_restore(c->conf->name, p.nsp, json_string_value(pid), json_string_value(offset), c)
                    : NULL;
            if (n->sock) {
                n->pending = 0;
                sio_send_connect(c, n);
                sio_socket_replay(n->sock, json_string_value(offset));
                sio_packet_clear(&p);
                return 0;
            }
            char id[24];
            new_id(id);
            /* In its rooms from now: the connect handler may join it to
             * others, and what they carry reaches it (the client keeps
             * it until the CONNECT, as socket.io's does). */
            n->sock = sio_socket_new(c->conf->name, p.nsp, id, c, c->conf->socketio_recovery_ms);
            n->pending = c->hs != NULL;
            if (n->pending) {
                sio_job_add(c, JOB_CONNECT, id,
                            json_pack("{s:s, s:s, s:s, s:O?}", "type", "connect", "socket", id, "namespace", p.nsp,
                                      "auth", p.data),
                            NULL);
            } else {
                sio_send_connect(c, n);
            }
        }
    } else if (n && !n->pending && p.type == SIO_DISCONNECT) {
        sio_nsp_leave(c, n, "client namespace disconnect");
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
            rc = sio_job_add(c, JOB_EVENT, n->sock->id,
                             json_pack("{s:s, s:s, s:s, s:O, s:o, s:b}", "type", "event", "socket", n->sock->id,
                                       "namespace", p.nsp, "event", json_array_get(p.data, 0), "args", args, "ack",
                                       p.has_id),
                             &p) != 0;
        }
    } else {
        rc = sio_close_for(c, "a packet this state does not take");
    }
    sio_packet_clear(&p);
    return rc;
}

/* An attachment of a binary packet: from a WebSocket binary frame, or a
 * polling "b" packet. */
static int on_binary(sio_conn_t *c)
{
    if (c->awaiting == 0)
        return sio_close_for(c, "binary data with no binary packet awaiting it");
    c->awaiting--;
    return 0;
}

/* One Engine.IO packet from the transport that carries the session.
 * Non-zero if it ended the session. */
static int on_eio(sio_conn_t *c, const char *data, size_t len)
{
    eio_packet_t p;
    uint8_t *buf = len > 1 && data[0] == 'b' ? vc_malloc(len) : NULL;
    if (eio_decode(data, len, &p, buf, buf ? len : 0) != 0) {
        free(buf);
        return sio_close_for(c, "not an Engine.IO packet");
    }
    free(buf);
    if (p.binary)
        return on_binary(c);
    switch (p.type) {
    case EIO_PONG:
        if (c->ping_out) { /* the next ping a whole interval on, as engine.io's */
            c->ping_out = 0;
            h2o_timeout_unlink(&c->ping);
            h2o_timeout_link(c->loop, timeout_of(c->loop, (uint64_t)c->conf->socketio_ping_interval_ms), &c->ping);
        }
        return 0;
    case EIO_PING: /* a client's probe ("2probe") is answered in kind */
        sio_send_packet(c, EIO_PONG, p.data, p.len);
        return 0;
    case EIO_MESSAGE:
        if (c->awaiting)
            return sio_close_for(c, "text while a binary packet's attachments are awaited");
        return on_sio(c, p.data, p.len);
    case EIO_CLOSE: return sio_close_as(c, "transport close", "the client closed");
    case EIO_OPEN: return sio_close_for(c, "an open packet from a client");
    default: return 0; /* upgrade and noop: nothing to do here */
    }
}

/* The probe's "5": the WebSocket carries the session from now. What was
 * queued for polling goes to it, each packet a frame; a GET still held is
 * answered with a noop, as engine.io discards a transport. */
static void upgraded(sio_conn_t *c)
{
    c->ws = c->probe;
    c->probe = NULL;
    size_t len = 0;
    char *queued = sio_poll_take(c->poll, &len);
    for (size_t at = 0; queued && at < len;) {
        const char *end = memchr(queued + at, '\x1e', len - at);
        size_t n = end ? (size_t)(end - queued) - at : len - at;
        if (queued[at] == 'b') {
            uint8_t *bin = vc_malloc(n);
            eio_packet_t p;
            if (eio_decode(queued + at, n, &p, bin, n) == 0) {
                ws_out_t *o = ws_out_new(VC_WS_OP_BINARY, p.data, p.len);
                ws_send(c->ws, o);
                ws_out_unref(o);
            }
            free(bin);
        } else {
            ws_send_text(c->ws, queued + at, n);
        }
        at += n + 1;
    }
    free(queued);
    if (sio_poll_holding(c->poll))
        sio_poll_push(c->poll, "6", 1);
    sio_poll_free(c->poll);
    c->poll = NULL;
}

/* A WebSocket that would take over from polling: "2probe" is answered
 * "3probe" on it and a noop on polling (the client's held GET returns and
 * it stops polling), then "5" completes the upgrade. Anything else
 * closes the probe; the session goes on polling. */
static int on_probe(sio_conn_t *c, const vc_ws_message_t *m)
{
    int text = m->opcode == VC_WS_OP_TEXT;
    if (text && m->len == 6 && memcmp(m->data, "2probe", 6) == 0) {
        ws_send_text(c->probe, "3probe", 6);
        if (c->poll)
            sio_poll_push(c->poll, "6", 1);
        return 0;
    }
    if (text && m->len == 1 && m->data[0] == '5' && c->poll) {
        upgraded(c);
        return 0;
    }
    vc_log(VC_LOG_DEBUG, "socketio", "%s: an invalid upgrade packet: the probe is closed", c->sid);
    ws_close(c->probe, VC_WS_CLOSE_NORMAL, "");
    return 1;
}

static int on_message(ws_conn_t *ws, const vc_ws_message_t *m)
{
    sio_conn_t *c = ws_data(ws);
    if (ws == c->probe)
        return on_probe(c, m);
    if (m->opcode == VC_WS_OP_BINARY)
        return on_binary(c);
    return on_eio(c, (const char *)m->data, m->len);
}

/* The open packet: the session's id, the transports it may move to
 * (from polling, WebSocket), and its timings and bound. */
static void send_open(sio_conn_t *c, int polling)
{
    char open[256];
    int n =
        snprintf(open, sizeof(open),
                 "{\"sid\":\"%s\",\"upgrades\":[%s],\"pingInterval\":%lld,\"pingTimeout\":%lld,\"maxPayload\":%lld}",
                 c->sid, polling ? "\"websocket\"" : "", (long long)c->conf->socketio_ping_interval_ms,
                 (long long)c->conf->socketio_ping_timeout_ms, (long long)c->conf->socketio_max_payload);
    sio_send_packet(c, EIO_OPEN, open, (size_t)n);
    c->opened_ms = vc_mono_ms();
    h2o_timeout_link(c->loop, timeout_of(c->loop, (uint64_t)c->conf->socketio_ping_interval_ms), &c->ping);
}

/* At each ping interval a ping; a pong not back within the ping timeout
 * ends the session. On their own timers, to the millisecond: a client
 * gives up on a server whose ping is later than interval and timeout. */
static void on_ping_timer(h2o_timeout_entry_t *entry)
{
    sio_conn_t *c = H2O_STRUCT_FROM_MEMBER(sio_conn_t, ping, entry);
    if (c->ended)
        return;
    if (c->ping_out) {
        rt_stats.connections_cut++;
        sio_close_as(c, "ping timeout", "ping timeout");
        return;
    }
    sio_send_packet(c, EIO_PING, "", 0);
    c->ping_out = 1;
    h2o_timeout_link(c->loop, timeout_of(c->loop, (uint64_t)c->conf->socketio_ping_timeout_ms), &c->ping);
}

static void on_open(ws_conn_t *ws)
{
    sio_conn_t *c = ws_data(ws);
    if (ws == c->ws) /* a probe sends nothing until it is spoken to */
        send_open(c, 0);
}

/* Ends the session: its WebSockets are closed (code for the one that
 * carries it), a client polling gets the close packet, and it is freed
 * once no WebSocket of it is left (session_free). Returns 1. */
static int session_end(sio_conn_t *c, const char *reason, uint16_t code, const char *why)
{
    if (c->reason == NULL)
        c->reason = reason;
    if (c->ended)
        return 1;
    vc_log(VC_LOG_DEBUG, "socketio", "closing %s: %s", c->sid, why);
    c->ended = 1;
    /* socket.io keeps a socket for recovery when its connection was lost,
     * not when it broke the protocol (nor when a namespace was left on
     * purpose: that is no end of the session). Kept now, not when the
     * session is freed (a polling one at the next tick): its client may
     * be back before. */
    if (c->conf->socketio_recovery_ms > 0 && strcmp(c->reason, "parse error") != 0)
        for (size_t i = 0; i < c->nnsps; i++)
            if (!c->nsps[i].pending)
                sio_socket_keep(c->nsps[i].sock, vc_mono_ms() + (uint64_t)c->conf->socketio_recovery_ms);
    if (c->poll)
        sio_poll_push(c->poll, "1", 1);
    if (c->ws)
        ws_close(c->ws, code, code == VC_WS_CLOSE_GOING_AWAY ? "the server is restarting" : "");
    if (c->probe)
        ws_close(c->probe, code, "");
    return 1;
}

static void session_free(sio_conn_t *c)
{
    /* What waited for a handler goes on without the connection, then
     * each namespace's disconnect, in that order of sending. */
    if (c->hs)
        sio_jobs_after_close(c);
    const char *reason = c->reason ? c->reason : "transport close";
    while (c->nnsps) {
        sio_nsp_t *n = &c->nsps[c->nnsps - 1];
        if (c->hs && !n->pending)
            sio_call(c->hs, "disconnect", sio_disconnect_body(n, reason), NULL, NULL, NULL);
        sio_nsp_leave(c, n, NULL);
    }
    free(c->nsps);
    sio_handshake_unref(c->hs);
    sio_poll_free(c->poll);
    if (h2o_timeout_is_linked(&c->ping))
        h2o_timeout_unlink(&c->ping);
    if (c->entry)
        vc_names_remove(&by_sid, c->entry);
    if (c->prev)
        c->prev->next = c->next;
    else
        conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c);
}

static void on_closed(ws_conn_t *ws)
{
    sio_conn_t *c = ws_data(ws);
    if (ws == c->probe) {
        c->probe = NULL; /* the upgrade did not happen: polling goes on */
    } else {
        c->ws = NULL; /* the transport is gone: so is the session */
        session_end(c, "transport close", VC_WS_CLOSE_NORMAL, "its WebSocket closed");
    }
    if (c->ended && c->ws == NULL && c->probe == NULL)
        session_free(c);
}

/* What an operation from the bus does (sio_rooms.h). */
static void sock_send(sio_socket_t *s, ws_out_t *frame)
{
    out_frame(s->owner, frame);
}

static void sock_disconnect(sio_socket_t *s, int close)
{
    sio_conn_t *c = s->owner;
    for (size_t i = 0; i < c->nnsps; i++)
        if (c->nsps[i].sock == s) {
            /* As socket.disconnect(close): the client reads "io server
             * disconnect" for that namespace. */
            sio_send_sio(c, SIO_DISCONNECT, c->nsps[i].name, NULL);
            sio_nsp_leave(c, &c->nsps[i], close ? NULL : "server namespace disconnect");
            break;
        }
    if (close)
        sio_close_as(c, "forced server close", "disconnected with close by the application");
}

static const sio_socket_ops_t sock_ops = {.send = sock_send, .disconnect = sock_disconnect};

static const ws_callbacks_t callbacks = {.on_message = on_message, .on_closed = on_closed, .on_open = on_open};

/* A new session of the site, for req's handshake. */
static sio_conn_t *session_new(const vc_site_t *s, h2o_req_t *req)
{
    sio_conn_t *c = vc_calloc(1, sizeof(*c));
    c->conf = s;
    c->loop = req->conn->ctx->loop;
    c->ping.cb = on_ping_timer;
    new_id(c->sid);
    if (s->socketio_handler) {
        char path[256];
        snprintf(path, sizeof(path), "%s%s", s->socketio_handler[0] == '/' ? "" : "/", s->socketio_handler);
        c->hs = sio_handshake_keep(req, path);
    }
    if (by_sid.keys.buckets == NULL)
        vc_names_init(&by_sid, SID_BUCKETS);
    int made;
    c->entry = vc_names_get(&by_sid, c->sid, sizeof(*c->entry), &made);
    c->entry->c = c;
    c->next = conns;
    if (conns)
        conns->prev = c;
    conns = c;
    return c;
}

static ws_options_t ws_options(front_t *f, const vc_site_t *s)
{
    ws_options_t opt = {
        .limits = {.max_frame = (size_t)s->socketio_max_payload, .max_message = (size_t)s->socketio_max_payload},
        .max_queue = (size_t)f->settings->realtime_max_queue,
    };
    return opt;
}

/* A polling request for session c: a GET takes what is queued (or waits
 * for it), a POST brings packets. */
static int polling(sio_conn_t *c, h2o_req_t *req)
{
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"))) {
        if (sio_poll_get(c->poll, req) != 0) { /* engine.io's "overlap from client" */
            session_end(c, "transport error", VC_WS_CLOSE_NORMAL, "a second GET while one was held");
            return sio_answer(req, 400, NULL, "", 0);
        }
        return 1;
    }
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST")))
        return sio_answer(req, 500, NULL, "", 0); /* as engine.io answers any other method */
    if (req->entity.len > (size_t)c->conf->socketio_max_payload) {
        session_end(c, "transport error", VC_WS_CLOSE_NORMAL, "a polling body over max_payload");
        return sio_answer(req, 413, NULL, "", 0);
    }
    const char *body = req->entity.base;
    for (size_t at = 0, len = req->entity.len; body && at <= len && !c->ended;) {
        const char *end = memchr(body + at, '\x1e', len - at);
        size_t n = end ? (size_t)(end - body) - at : len - at;
        on_eio(c, body + at, n);
        at += n + 1;
    }
    return sio_answer(req, 200, "text/html", "ok", 2);
}

int socketio_take(front_t *f, rt_site_t *rs, h2o_req_t *req, int origin_ok)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    sio_rooms_init(&sock_ops);
    const vc_site_t *s = rs->site->conf;
    char transport[16], eio[8], sid[32];
    int upgrade = ws_is_upgrade(req);
    /* In the reference's order (engine.io's verify, then its handshake). */
    const char *t = sio_query_param(req, "transport", transport, sizeof(transport));
    int ws = t && strcmp(t, "websocket") == 0;
    if (t == NULL || (!ws && strcmp(t, "polling") != 0))
        return sio_refuse(req, upgrade, SIO_E_TRANSPORT);
    if (sio_query_param(req, "sid", sid, sizeof(sid)) && sid[0]) {
        /* A session's request: held by this process, or unknown here (a
         * session of another front process is too: docs/socketio.md). */
        sio_conn_t *c = session_find(sid);
        if (c == NULL)
            return sio_refuse(req, upgrade, SIO_E_SID);
        if (!ws && c->poll && !upgrade)
            return polling(c, req);
        if (!ws || !upgrade || c->poll == NULL || c->probe)
            return sio_refuse(req, upgrade, SIO_E_BAD);
        ws_options_t opt = ws_options(f, s);
        int status;
        const char *why;
        c->probe = ws_upgrade(f, req, &callbacks, &opt, c, &status, &why);
        return c->probe ? 1 : sio_refuse(req, 1, SIO_E_BAD);
    }
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")))
        return sio_refuse(req, upgrade, SIO_E_METHOD);
    if (ws != upgrade) /* a WebSocket's transport without its upgrade, or polling with one */
        return sio_refuse(req, upgrade, SIO_E_BAD);
    if (!origin_ok)
        return sio_refuse(req, upgrade, SIO_E_FORBIDDEN);
    const char *v = sio_query_param(req, "EIO", eio, sizeof(eio));
    if (v == NULL || strcmp(v, "4") != 0)
        return sio_refuse(req, upgrade, SIO_E_PROTOCOL);
    if (!ws) { /* polling's handshake: the open packet is its answer */
        sio_conn_t *c = session_new(s, req);
        c->poll = sio_poll_new((size_t)f->settings->realtime_max_queue);
        send_open(c, 1);
        sio_poll_get(c->poll, req);
        return 1;
    }
    sio_conn_t *c = session_new(s, req);
    ws_options_t opt = ws_options(f, s);
    int status;
    const char *why;
    c->ws = ws_upgrade(f, req, &callbacks, &opt, c, &status, &why);
    if (c->ws == NULL) {
        c->ended = 1;
        session_free(c);
        return sio_refuse(req, 1, SIO_E_BAD);
    }
    return 1;
}

void socketio_tick(void)
{
    sio_rooms_tick();
    uint64_t now = vc_mono_ms();
    for (sio_conn_t *c = conns, *next; c; c = next) {
        next = c->next;
        if (c->ended) {
            if (c->ws == NULL && c->probe == NULL) /* a polling session's end */
                session_free(c);
            continue;
        }
        if (c->opened_ms == 0)
            continue;
        if (c->nnsps == 0 && now - c->opened_ms >= CONNECT_TIMEOUT_MS)
            sio_close_for(c, "no namespace joined within the connect timeout");
    }
}

void socketio_going_away(void)
{
    for (sio_conn_t *c = conns; c; c = c->next)
        session_end(c, "server shutting down", VC_WS_CLOSE_GOING_AWAY, "the server is restarting");
}
