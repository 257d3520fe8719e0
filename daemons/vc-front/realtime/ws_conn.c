#include "ws_conn.h"
#include "core/conn.h"
#include "vc_log.h"
#include "vc_util.h"

#include <h2o/http1.h>
#include <string.h>

/* Frames handed to one write: enough that a burst goes in one writev. */
#define WRITE_BATCH 32

struct ws_conn {
    front_t *f;
    h2o_socket_t *sock; /* NULL once closed */
    vc_ws_reader_t reader;
    const ws_callbacks_t *cb;
    ws_options_t opt;
    void *data;
    ws_out_t **q; /* a ring: what is queued, the head in flight */
    size_t qhead, qlen, qcap, qbytes;
    size_t writing; /* frames at the head handed to h2o */
    h2o_iovec_t iov[WRITE_BATCH];
    int close_sent, close_received;
    int finish; /* close the socket once the queue is written */
    int cut;    /* over its queue's bound */
    int in_callback, doomed;
    uint64_t last_read_ms;
    h2o_timeout_entry_t close_wait; /* our close sent: the client's answer, or not */
};

ws_out_t *ws_out_new(int opcode, const void *payload, size_t len)
{
    uint8_t h[VC_WS_HEADER_MAX];
    size_t hl = vc_ws_frame_header(h, opcode, len);
    ws_out_t *o = vc_malloc(sizeof(*o) + hl + len);
    o->refs = 1;
    o->len = (uint32_t)(hl + len);
    memcpy(o->data, h, hl);
    if (len)
        memcpy(o->data + hl, payload, len);
    return o;
}

void ws_out_unref(ws_out_t *o)
{
    if (o && --o->refs == 0)
        free(o);
}

const uint8_t *ws_out_payload(const ws_out_t *o, size_t *len)
{
    size_t head = 2, n = o->data[1] & 0x7f;
    head += n == 126 ? 2 : n == 127 ? 8 : 0;
    *len = o->len - head;
    return o->data + head;
}

void *ws_data(const ws_conn_t *c)
{
    return c->data;
}

uint64_t ws_last_read_ms(const ws_conn_t *c)
{
    return c->last_read_ms;
}

int ws_closing(const ws_conn_t *c)
{
    return c->close_sent || c->finish || c->doomed || c->sock == NULL;
}

int ws_was_cut(const ws_conn_t *c)
{
    return c->cut;
}

/* The socket goes and the connection with it; inside a callback of ours,
 * once it returns. */
static void teardown(ws_conn_t *c)
{
    if (c->in_callback) {
        c->doomed = 1;
        return;
    }
    if (h2o_timeout_is_linked(&c->close_wait))
        h2o_timeout_unlink(&c->close_wait);
    if (c->sock) {
        c->sock->data = NULL;
        h2o_socket_close(c->sock);
        c->sock = NULL;
    }
    c->cb->on_closed(c);
    for (size_t i = 0; i < c->qlen; i++)
        ws_out_unref(c->q[(c->qhead + i) % c->qcap]);
    free(c->q);
    vc_ws_reader_free(&c->reader);
    free(c);
}

static void on_written(h2o_socket_t *sock, const char *err);

static void flush(ws_conn_t *c)
{
    if (c->writing || c->sock == NULL)
        return;
    if (c->qlen == 0) {
        if (c->finish)
            teardown(c);
        return;
    }
    size_t n = c->qlen < WRITE_BATCH ? c->qlen : WRITE_BATCH;
    for (size_t i = 0; i < n; i++) {
        ws_out_t *o = c->q[(c->qhead + i) % c->qcap];
        c->iov[i] = h2o_iovec_init(o->data, o->len);
    }
    c->writing = n;
    h2o_socket_write(c->sock, c->iov, n, on_written);
}

static void on_written(h2o_socket_t *sock, const char *err)
{
    ws_conn_t *c = sock->data;
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->writing; i++) {
        ws_out_t *o = c->q[c->qhead];
        c->qbytes -= o->len;
        ws_out_unref(o);
        c->qhead = (c->qhead + 1) % c->qcap;
        c->qlen--;
    }
    c->writing = 0;
    if (err) {
        teardown(c);
        return;
    }
    flush(c);
}

static void push(ws_conn_t *c, ws_out_t *o)
{
    if (c->qlen == c->qcap) {
        size_t cap = c->qcap ? c->qcap * 2 : 4;
        ws_out_t **q = vc_malloc(cap * sizeof(*q));
        for (size_t i = 0; i < c->qlen; i++)
            q[i] = c->q[(c->qhead + i) % c->qcap];
        free(c->q);
        c->q = q;
        c->qhead = 0;
        c->qcap = cap;
    }
    o->refs++;
    c->q[(c->qhead + c->qlen) % c->qcap] = o;
    c->qlen++;
    c->qbytes += o->len;
}

static void send_close(ws_conn_t *c, uint16_t code, const char *reason)
{
    uint8_t payload[125];
    size_t n = code == VC_WS_CLOSE_NO_STATUS ? 0 : vc_ws_close_payload(payload, code, reason);
    ws_out_t *o = ws_out_new(VC_WS_OP_CLOSE, payload, n);
    push(c, o);
    ws_out_unref(o);
    c->close_sent = 1;
}

/* Closes once what is queued is written, or in a second at most: a client
 * that does not read would hold the socket for ever otherwise. */
static void finish_soon(ws_conn_t *c)
{
    c->finish = 1;
    if (!h2o_timeout_is_linked(&c->close_wait))
        h2o_timeout_link(c->f->ctx.loop, &c->f->ctx.one_sec_timeout, &c->close_wait);
    flush(c);
}

/* 1 if n more bytes would pass the queue's bound; then the connection is
 * being cut: what is queued goes, but what is being written, and a close
 * goes after it. */
static int over_bound(ws_conn_t *c, size_t n)
{
    if (c->qbytes + n <= c->opt.max_queue)
        return 0;
    vc_log(VC_LOG_NOTICE, "realtime", "closing a WebSocket whose client does not read (%zu bytes queued)", c->qbytes);
    while (c->qlen > c->writing) {
        size_t last = (c->qhead + c->qlen - 1) % c->qcap;
        c->qbytes -= c->q[last]->len;
        ws_out_unref(c->q[last]);
        c->qlen--;
    }
    if (!c->close_sent)
        send_close(c, VC_WS_CLOSE_POLICY, "the client does not read what it is sent");
    c->cut = 1;
    finish_soon(c);
    return 1;
}

int ws_send(ws_conn_t *c, ws_out_t *o)
{
    if (ws_closing(c) || over_bound(c, o->len))
        return -1;
    push(c, o);
    flush(c);
    return 0;
}

int ws_send_text(ws_conn_t *c, const char *text, size_t len)
{
    ws_out_t *o = ws_out_new(VC_WS_OP_TEXT, text, len);
    int rc = ws_send(c, o);
    ws_out_unref(o);
    return rc;
}

static void on_close_wait(h2o_timeout_entry_t *entry)
{
    ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, close_wait, entry);
    teardown(c);
}

void ws_close(ws_conn_t *c, uint16_t code, const char *reason)
{
    if (ws_closing(c))
        return;
    send_close(c, code, reason);
    /* The client answers with its own close, then we close the socket;
     * one that does not is given a second. */
    h2o_timeout_link(c->f->ctx.loop, &c->f->ctx.one_sec_timeout, &c->close_wait);
    flush(c);
}

static int on_frame(void *arg, const vc_ws_message_t *m)
{
    ws_conn_t *c = arg;
    switch (m->opcode) {
    case VC_WS_OP_TEXT:
    case VC_WS_OP_BINARY:
        if (c->close_sent)
            return 0; /* the client's close is what we wait for */
        return c->cb->on_message(c, m);
    case VC_WS_OP_PING:
        if (!c->close_sent && !over_bound(c, m->len + 2)) {
            ws_out_t *o = ws_out_new(VC_WS_OP_PONG, m->data, m->len);
            push(c, o);
            ws_out_unref(o);
            flush(c);
        }
        return c->cut;
    case VC_WS_OP_CLOSE:
        c->close_received = 1;
        if (!c->close_sent) /* echoed (RFC 6455 5.5.1) */
            send_close(c, m->code, NULL);
        finish_soon(c);
        return 1;
    default: return 0; /* a pong: its arrival is all it says */
    }
}

/* A protocol error: a close with its code, then the socket, without
 * waiting for the client (RFC 6455 7.1.7, "fail the connection"). */
static void fail(ws_conn_t *c, const vc_ws_error_t *err)
{
    vc_log(VC_LOG_INFO, "realtime", "closing a WebSocket with %u: %s", err->code, err->why);
    if (!c->close_sent)
        send_close(c, err->code, err->why);
    finish_soon(c);
}

static void on_read(h2o_socket_t *sock, const char *err)
{
    ws_conn_t *c = sock->data;
    if (c == NULL)
        return;
    if (err) {
        teardown(c);
        return;
    }
    c->last_read_ms = vc_mono_ms();
    c->in_callback = 1;
    h2o_buffer_t *in = sock->input;
    vc_ws_error_t e;
    ssize_t n = vc_ws_read(&c->reader, (uint8_t *)in->bytes, in->size, &c->opt.limits, on_frame, c, &e);
    if (n < 0) {
        fail(c, &e);
        h2o_buffer_consume(&sock->input, sock->input->size);
    } else {
        h2o_buffer_consume(&sock->input, (size_t)n);
    }
    if (c->close_received || c->finish)
        h2o_socket_read_stop(sock);
    if (sock->input->size == 0 && sock->input->capacity > 0) {
        /* An idle connection keeps no read buffer: thousands of them are
         * thousands of buffers otherwise (h2o recycles them). */
        h2o_buffer_dispose(&sock->input);
        h2o_buffer_init(&sock->input, &h2o_socket_buffer_prototype);
    }
    c->in_callback = 0;
    if (c->doomed)
        teardown(c);
}

static void on_upgraded(void *data, h2o_socket_t *sock, size_t reqsize)
{
    ws_conn_t *c = data;
    if (sock == NULL) { /* the 101 could not be written */
        c->cb->on_closed(c);
        free(c);
        return;
    }
    c->sock = sock;
    sock->data = c;
    c->last_read_ms = vc_mono_ms();
    conn_state_t *cs = conn_state_of(sock);
    if (cs)
        cs->upgraded = 1;
    h2o_buffer_consume(&sock->input, reqsize);
    c->in_callback = 1;
    if (c->cb->on_open)
        c->cb->on_open(c);
    c->in_callback = 0;
    if (c->doomed) {
        teardown(c);
        return;
    }
    h2o_socket_read_start(sock, on_read);
    if (sock->input->size > 0) /* frames that came with the handshake */
        on_read(sock, NULL);
}

int ws_is_upgrade(h2o_req_t *req)
{
    return req->upgrade.base != NULL && h2o_lcstris(req->upgrade.base, req->upgrade.len, H2O_STRLIT("websocket"));
}

static int key_well_formed(h2o_iovec_t k)
{
    /* base64 of 16 bytes: 22 characters and "==" (RFC 6455 4.2.1). */
    if (k.len != 24 || k.base[22] != '=' || k.base[23] != '=')
        return 0;
    for (size_t i = 0; i < 22; i++) {
        char ch = k.base[i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '+' ||
              ch == '/'))
            return 0;
    }
    return 1;
}

ws_conn_t *ws_upgrade(front_t *f, h2o_req_t *req, const ws_callbacks_t *cb, const ws_options_t *opt, void *data,
                      int *status, const char **why)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    *status = 400;
    if (req->version < 0x101 || req->version >= 0x200) {
        *why = "a WebSocket needs HTTP/1.1";
        return NULL;
    }
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"))) {
        *why = "a WebSocket handshake is a GET";
        return NULL;
    }
    if (!ws_is_upgrade(req)) {
        *why = "no \"Upgrade: websocket\" with \"Connection: Upgrade\"";
        return NULL;
    }
    ssize_t vi = h2o_find_header_by_str(&req->headers, H2O_STRLIT("sec-websocket-version"), -1);
    if (vi == -1 || !h2o_memis(req->headers.entries[vi].value.base, req->headers.entries[vi].value.len, "13", 2)) {
        *status = 426;
        *why = "Sec-WebSocket-Version is not 13";
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("sec-websocket-version"), 0, NULL,
                              H2O_STRLIT("13"));
        return NULL;
    }
    ssize_t ki = h2o_find_header_by_str(&req->headers, H2O_STRLIT("sec-websocket-key"), -1);
    if (ki == -1 || !key_well_formed(req->headers.entries[ki].value) ||
        h2o_find_header_by_str(&req->headers, H2O_STRLIT("sec-websocket-key"), ki) != -1) {
        *why = "no Sec-WebSocket-Key, or not one of 16 bytes in base64";
        return NULL;
    }
    char accept[29];
    vc_ws_accept_key(accept, req->headers.entries[ki].value.base, req->headers.entries[ki].value.len);
    ws_conn_t *c = vc_calloc(1, sizeof(*c));
    c->f = f;
    c->cb = cb;
    c->opt = *opt;
    c->data = data;
    c->close_wait.cb = on_close_wait;
    req->res.status = 101;
    req->res.reason = "Switching Protocols";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_UPGRADE, NULL, H2O_STRLIT("websocket"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("sec-websocket-accept"), 0, NULL,
                          h2o_strdup(&req->pool, accept, 28).base, 28);
    h2o_http1_upgrade(req, NULL, 0, on_upgraded, c);
    return c;
}
