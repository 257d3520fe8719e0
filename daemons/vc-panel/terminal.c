/*
 * The terminal (panel.terminal = true; docs/panel.md): a shell in the
 * page, over a WebSocket, from a pseudo-terminal.
 *
 * Opening one takes an admin's session and a fresh TOTP code: POST
 * /api/terminal/ticket {"code"} checks the code (once: the step is used
 * up, as at sign-in) and gives a ticket, good once, for 30 s, for this
 * session; GET /api/terminal?ticket=T, from the panel's own origin, is
 * the WebSocket. The shell comes from the supervisor's terminal starter
 * (cli/terminal.c) over VC_TERMINAL_FD, as panel.terminal_user: the panel
 * only says the window's size.
 *
 * On the socket: binary frames are the terminal's bytes both ways; a
 * text frame from the page is {"cols": N, "rows": M}, a new size. The
 * terminal closes when the shell exits, the page goes, or the session
 * ends (signed out, expired, the user removed or no longer an admin;
 * checked each second). Its opening and its end are panel.audit events,
 * with the bytes each way and how long it lasted.
 */
#include "forms.h"
#include "panel.h"
#include "sessions.h"
#include "terminal.h"
#include "users.h"
#include "vc_util.h"
#include "vc_ws.h"

#include <h2o/http1.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#define TICKETS 8
#define TICKET_MS 30000
#define TERMINALS_MAX 8
#define FRAME_MAX (64 * 1024)
#define TO_PAGE_HIGH (1024 * 1024) /* the pty is not read while this much waits for the page */
#define TO_SHELL_HIGH (64 * 1024)  /* nor the page while this much waits for the shell */

typedef struct ticket {
    char token[44]; /* base64url of 32 bytes; "" when free */
    char sid[65];
    uint64_t until_ms;
} ticket_t;

/* Bytes for one socket: what h2o is writing, and what waits behind it. */
typedef struct outq {
    h2o_socket_t *sock;
    char *writing, *queued;
    size_t nwriting, nqueued;
} outq_t;

typedef struct term term_t;
struct term {
    panel_t *p;
    outq_t page, shell; /* to the browser (WebSocket frames), to the pty */
    vc_ws_reader_t reader;
    int pid;
    char user[64], addr[64], sid[65];
    uint64_t opened_ms, bytes_in, bytes_out;
    uint64_t in_at_tick; /* bytes_in at the last tick: typing keeps the session alive */
    int closing;
    term_t *next;
};

static ticket_t tickets[TICKETS];
static term_t *terms;
static size_t nterms;

static void on_page_read(h2o_socket_t *sock, const char *err);
static void on_shell_read(h2o_socket_t *sock, const char *err);

static void term_end(term_t *t, const char *why)
{
    for (term_t **pp = &terms; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            nterms--;
            break;
        }
    char target[160], result[200];
    snprintf(target, sizeof(target), "pid %d", t->pid);
    snprintf(result, sizeof(result), "ok: %s after %llu s, %llu bytes in, %llu out", why,
             (unsigned long long)((vc_mono_ms() - t->opened_ms) / 1000), (unsigned long long)t->bytes_in,
             (unsigned long long)t->bytes_out);
    preq_t who = {.p = t->p};
    snprintf(who.user, sizeof(who.user), "%s", t->user);
    snprintf(who.addr, sizeof(who.addr), "%s", t->addr);
    audit_record(&who, "terminal.close", target, result);
    /* Closing the master hangs the shell's session up (SIGHUP). */
    outq_t *qs[] = {&t->page, &t->shell};
    for (size_t i = 0; i < 2; i++) {
        if (qs[i]->sock) {
            qs[i]->sock->data = NULL;
            h2o_socket_close(qs[i]->sock);
        }
        free(qs[i]->writing);
        free(qs[i]->queued);
    }
    vc_ws_reader_free(&t->reader);
    free(t);
}

static void flush(outq_t *q, h2o_socket_cb cb);

static void on_page_written(h2o_socket_t *sock, const char *err)
{
    term_t *t = sock->data;
    if (t == NULL)
        return;
    free(t->page.writing);
    t->page.writing = NULL;
    if (err) {
        term_end(t, "the page went");
        return;
    }
    if (t->closing && t->page.nqueued == 0) {
        term_end(t, "the shell exited");
        return;
    }
    flush(&t->page, on_page_written);
    if (t->shell.sock && !h2o_socket_is_reading(t->shell.sock) && t->page.nqueued < TO_PAGE_HIGH / 16)
        h2o_socket_read_start(t->shell.sock, on_shell_read);
}

static void on_shell_written(h2o_socket_t *sock, const char *err)
{
    term_t *t = sock->data;
    if (t == NULL)
        return;
    free(t->shell.writing);
    t->shell.writing = NULL;
    if (err) {
        term_end(t, "the terminal could not be written");
        return;
    }
    flush(&t->shell, on_shell_written);
    if (t->page.sock && !h2o_socket_is_reading(t->page.sock) && t->shell.nqueued < TO_SHELL_HIGH)
        h2o_socket_read_start(t->page.sock, on_page_read);
}

static void flush(outq_t *q, h2o_socket_cb cb)
{
    if (q->writing || q->nqueued == 0 || q->sock == NULL)
        return;
    q->writing = q->queued;
    q->nwriting = q->nqueued;
    q->queued = NULL;
    q->nqueued = 0;
    h2o_iovec_t buf = h2o_iovec_init(q->writing, q->nwriting);
    h2o_socket_write(q->sock, &buf, 1, cb);
}

static void push(outq_t *q, const void *a, size_t alen, const void *b, size_t blen)
{
    q->queued = vc_realloc(q->queued, q->nqueued + alen + blen);
    memcpy(q->queued + q->nqueued, a, alen);
    if (blen)
        memcpy(q->queued + q->nqueued + alen, b, blen);
    q->nqueued += alen + blen;
}

static void to_page(term_t *t, int opcode, const void *data, size_t len)
{
    uint8_t h[VC_WS_HEADER_MAX];
    push(&t->page, h, vc_ws_frame_header(h, opcode, len), data, len);
    flush(&t->page, on_page_written);
}

static void close_page(term_t *t, uint16_t code, const char *why)
{
    uint8_t payload[125];
    to_page(t, VC_WS_OP_CLOSE, payload, vc_ws_close_payload(payload, code, why));
    t->closing = 1;
    if (t->shell.sock) {
        t->shell.sock->data = NULL;
        h2o_socket_close(t->shell.sock);
        t->shell.sock = NULL;
    }
}

static void resize(term_t *t, const uint8_t *text, size_t len)
{
    json_error_t e;
    json_t *o = json_loadb((const char *)text, len, 0, &e);
    json_t *cols = json_object_get(o, "cols"), *rows = json_object_get(o, "rows");
    if (json_is_integer(cols) && json_is_integer(rows) && json_integer_value(cols) > 0 &&
        json_integer_value(cols) < 1000 && json_integer_value(rows) > 0 && json_integer_value(rows) < 1000 &&
        t->shell.sock) {
        struct winsize ws = {.ws_col = (unsigned short)json_integer_value(cols),
                             .ws_row = (unsigned short)json_integer_value(rows)};
        ioctl(h2o_socket_get_fd(t->shell.sock), TIOCSWINSZ, &ws);
    }
    json_decref(o);
}

static int on_message(void *arg, const vc_ws_message_t *m)
{
    term_t *t = arg;
    switch (m->opcode) {
    case VC_WS_OP_BINARY:
        t->bytes_in += m->len;
        push(&t->shell, m->data, m->len, NULL, 0);
        flush(&t->shell, on_shell_written);
        return 0;
    case VC_WS_OP_TEXT: resize(t, m->data, m->len); return 0;
    case VC_WS_OP_PING: to_page(t, VC_WS_OP_PONG, m->data, m->len); return 0;
    case VC_WS_OP_CLOSE: close_page(t, VC_WS_CLOSE_NORMAL, "bye"); return 1;
    default: return 0;
    }
}

static void on_page_read(h2o_socket_t *sock, const char *err)
{
    term_t *t = sock->data;
    if (t == NULL)
        return;
    if (err) {
        term_end(t, "the page went");
        return;
    }
    static const vc_ws_limits_t lim = {FRAME_MAX, FRAME_MAX};
    vc_ws_error_t werr;
    ssize_t n = vc_ws_read(&t->reader, (uint8_t *)sock->input->bytes, sock->input->size, &lim, on_message, t, &werr);
    if (n < 0) {
        close_page(t, werr.code, werr.why);
        h2o_socket_read_stop(sock);
        return;
    }
    h2o_buffer_consume(&sock->input, (size_t)n);
    if (t->closing || t->shell.nqueued >= TO_SHELL_HIGH)
        h2o_socket_read_stop(sock);
}

static void on_shell_read(h2o_socket_t *sock, const char *err)
{
    term_t *t = sock->data;
    if (t == NULL)
        return;
    if (err) { /* EIO: the shell and all it started are gone */
        close_page(t, VC_WS_CLOSE_NORMAL, "the shell exited");
        return;
    }
    while (sock->input->size > 0) {
        size_t n = sock->input->size < FRAME_MAX ? sock->input->size : FRAME_MAX;
        t->bytes_out += n;
        to_page(t, VC_WS_OP_BINARY, sock->input->bytes, n);
        h2o_buffer_consume(&sock->input, n);
    }
    if (t->page.nqueued >= TO_PAGE_HIGH)
        h2o_socket_read_stop(sock);
}

/* A shell from the starter: its pty's master and pid, or -1. */
static int shell_open(panel_t *p, int *pid)
{
    uint16_t size[2] = {80, 24};
    if (p->terminal_fd < 0 || send(p->terminal_fd, size, sizeof(size), MSG_NOSIGNAL) != sizeof(size))
        return -1;
    int32_t got = -1;
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = &got, .iov_len = sizeof(got)};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    if (recvmsg(p->terminal_fd, &msg, MSG_CMSG_CLOEXEC) != sizeof(got) || got <= 0)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(fd));
    *pid = got;
    return fd;
}

static void on_upgraded(void *data, h2o_socket_t *sock, size_t reqsize)
{
    term_t *t = data;
    if (sock == NULL) {
        term_end(t, "the answer to the page could not be written");
        return;
    }
    t->page.sock = sock;
    sock->data = t;
    h2o_buffer_consume(&sock->input, reqsize);
    t->next = terms;
    terms = t;
    nterms++;
    h2o_socket_read_start(sock, on_page_read);
    h2o_socket_read_start(t->shell.sock, on_shell_read);
    if (sock->input->size > 0)
        on_page_read(sock, NULL);
}

static ticket_t *ticket_take(const char *token, const char *sid)
{
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < TICKETS; i++) {
        ticket_t *k = &tickets[i];
        if (k->token[0] && now < k->until_ms && strlen(token) == strlen(k->token) &&
            sodium_memcmp(token, k->token, strlen(token)) == 0 && strcmp(k->sid, sid) == 0)
            return k;
    }
    return NULL;
}

/* GET /api/terminal?ticket=T: the WebSocket. */
static void open_terminal(preq_t *r)
{
    panel_t *p = r->p;
    char token[64] = "";
    form_query(r->query, strlen(r->query), "ticket", token, sizeof(token));
    ticket_t *k = ticket_take(token, r->sid);
    if (k == NULL) {
        http_error(r, 403, "a terminal needs a ticket of this session (POST /api/terminal/ticket)");
        return;
    }
    memset(k, 0, sizeof(*k)); /* good once */
    ssize_t o = h2o_find_header_by_str(&r->req->headers, H2O_STRLIT("origin"), -1);
    ssize_t key = h2o_find_header_by_str(&r->req->headers, H2O_STRLIT("sec-websocket-key"), -1);
    if (o < 0 || !http_same_origin(r) || key < 0 || r->req->version != 0x101 || r->req->upgrade.base == NULL) {
        http_error(r, 400, "a terminal is a WebSocket from the panel's own page");
        return;
    }
    if (nterms >= TERMINALS_MAX) {
        http_error(r, 503, "%d terminals are open already", TERMINALS_MAX);
        return;
    }
    int pid = 0, fd = shell_open(p, &pid);
    if (fd < 0) {
        audit_record(r, "terminal.open", "", "no shell from the terminal starter");
        http_error(r, 503, "no shell: the terminal starter did not answer (vc-panel's log says why)");
        return;
    }
    term_t *t = vc_calloc(1, sizeof(*t));
    t->p = p;
    t->pid = pid;
    t->opened_ms = vc_mono_ms();
    snprintf(t->user, sizeof(t->user), "%s", r->user);
    snprintf(t->addr, sizeof(t->addr), "%s", r->addr);
    snprintf(t->sid, sizeof(t->sid), "%s", r->sid);
    t->shell.sock = h2o_evloop_socket_create(p->ctx.loop, fd, 0);
    t->shell.sock->data = t;
    char target[32];
    snprintf(target, sizeof(target), "pid %d", pid);
    audit_record(r, "terminal.open", target, "ok");
    char accept[29];
    h2o_iovec_t kv = r->req->headers.entries[key].value;
    vc_ws_accept_key(accept, kv.base, kv.len);
    r->req->res.status = 101;
    r->req->res.reason = "Switching Protocols";
    h2o_add_header(&r->req->pool, &r->req->res.headers, H2O_TOKEN_UPGRADE, NULL, H2O_STRLIT("websocket"));
    h2o_add_header_by_str(&r->req->pool, &r->req->res.headers, H2O_STRLIT("sec-websocket-accept"), 0, NULL,
                          h2o_strdup(&r->req->pool, accept, 28).base, 28);
    h2o_http1_upgrade(r->req, NULL, 0, on_upgraded, t);
}

/* POST /api/terminal/ticket {"password", "code": a TOTP code}: a step-up
 * (http.c checked both; step_up.h), and an account with TOTP. */
static void ticket(preq_t *r)
{
    panel_t *p = r->p;
    if (!p->cfg->terminal || p->terminal_fd < 0) {
        http_error(r, 403, "the terminal is off (panel.terminal = true, then restart vc-panel)");
        return;
    }
    json_t *rec = users_get(p, r->user);
    int enrolled = rec && json_object_get(rec, "totp") != NULL;
    json_decref(rec);
    if (!enrolled) {
        http_error(r, 403, "a terminal needs two-factor sign-in: enrol it on the account page first");
        return;
    }
    ticket_t *k = &tickets[0];
    for (size_t i = 1; i < TICKETS; i++) /* a free one, or the oldest */
        if (tickets[i].until_ms < k->until_ms)
            k = &tickets[i];
    unsigned char raw[32];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(k->token, sizeof(k->token), raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    snprintf(k->sid, sizeof(k->sid), "%s", r->sid);
    k->until_ms = vc_mono_ms() + TICKET_MS;
    http_json(r, 200, json_pack("{s:s,s:i}", "ticket", k->token, "seconds", TICKET_MS / 1000));
}

void terminal_tick(panel_t *p)
{
    for (term_t *t = terms, *next; t; t = next) {
        next = t->next;
        int typed = t->bytes_in != t->in_at_tick;
        t->in_at_tick = t->bytes_in;
        if (!t->closing && !sessions_admin_alive(p, t->sid, typed))
            close_page(t, VC_WS_CLOSE_POLICY, "the session ended");
    }
}

size_t terminal_count(void)
{
    return nterms;
}

/* clang-format off */
const route_t terminal_routes[] = {
    {"POST", "/api/terminal/ticket", ACCESS_STEP_UP, ticket},
    {"GET", "/api/terminal", ACCESS_ADMIN, open_terminal},
};
/* clang-format on */
const size_t terminal_nroutes = VC_ARRAY_SIZE(terminal_routes);
