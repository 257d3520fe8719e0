/* libFuzzer: HTTP/1.1 as a worker serving a lent connection speaks it
 * (libcommon/vc_http1.c), against the front's own: libh2o 2.2.5 with the
 * front's framing (libcommon/vc_framing.c), in this process, on a socket
 * pair. The same bytes go to both; every byte each writes back must be
 * the same, but for the Date lines' values.
 *
 * The handler answers each request with what it saw of it (method, path,
 * Host, version, persistence, headers, body), so a request read otherwise
 * gives another answer. The worker side does what a lent worker does: a
 * request for "/back..." (standing for what is not its PHP: a static
 * file, a cache hit) or with an Upgrade goes back to the front with every
 * byte from its head on, taken back into h2o as vc-front takes one back
 * (daemons/vc-front/core/conn_pass.c: the bytes read already, then the
 * socket), and from there h2o answers.
 */
#include "../daemons/vc-front/core/conn_pass.h"
#include "vc_http1.h"

#include <h2o.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_BODY 2048 /* small, so that refusals for size are reached */
#define OUT_CAP (1 << 20)

static h2o_globalconf_t gc;
static h2o_context_t ctx;
static h2o_accept_ctx_t actx;

typedef struct out {
    char *p;
    size_t n;
} out_t;

static void put(out_t *o, const void *p, size_t n)
{
    if (o->n + n > OUT_CAP)
        abort(); /* an answer larger than anything the input could ask */
    memcpy(o->p + o->n, p, n);
    o->n += n;
}

static void put_text(out_t *o, const char *label, const char *p, size_t n)
{
    put(o, label, strlen(label));
    if (p)
        put(o, p, n);
    else
        put(o, "(none)", 6);
    put(o, "\n", 1);
}

static int is_back(const char *path, size_t n)
{
    return n >= 5 && memcmp(path, "/back", 5) == 0;
}

/* The front's side: h2o's request, described. */
static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    static char body[OUT_CAP];
    out_t o = {body, 0};
    if (is_back(req->input.path.base, req->input.path.len)) {
        put(&o, "front\n", 6);
    } else {
        put_text(&o, "method ", req->input.method.base, req->input.method.len);
        put_text(&o, "path ", req->input.path.base, req->input.path.len);
        put_text(&o, "host ", req->input.authority.base, req->input.authority.len);
        put(&o, req->version == 0x101 ? "1.1 " : "1.0 ", 4);
        put(&o, req->http1_is_persistent ? "keep\n" : "close\n", req->http1_is_persistent ? 5 : 6);
        for (size_t i = 0; i < req->headers.size; i++) {
            put_text(&o, "", req->headers.entries[i].name->base, req->headers.entries[i].name->len);
            put_text(&o, ": ", req->headers.entries[i].value.base, req->headers.entries[i].value.len);
        }
        put_text(&o, "body ", req->entity.base ? req->entity.base : "", req->entity.len);
    }
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = o.n;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/plain"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_VARY, "Vary", H2O_STRLIT("Accept-Encoding"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_SERVER, "Server", H2O_STRLIT("Velocity"));
    h2o_send_inline(req, body, o.n);
    return 0;
}

static void setup(void)
{
    h2o_config_init(&gc);
    gc.server_name = h2o_iovec_init(H2O_STRLIT("")); /* as the front */
    gc.max_request_entity_size = MAX_BODY;
    h2o_hostconf_t *host = h2o_config_register_host(&gc, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_create_handler(path, sizeof(h2o_handler_t))->on_req = on_req;
    h2o_context_init(&ctx, h2o_evloop_create(), &gc);
    static h2o_hostconf_t *hosts[2];
    hosts[0] = host;
    actx = (h2o_accept_ctx_t){.ctx = &ctx, .hosts = hosts};
}

/* What h2o writes on a connection it was given, until it closes it. */
static void read_until_closed(int client, out_t *o)
{
    for (int turns = 0; turns < 10000; turns++) {
        h2o_evloop_run(ctx.loop, 0);
        char chunk[65536];
        ssize_t r;
        while ((r = recv(client, chunk, sizeof(chunk), MSG_DONTWAIT)) > 0)
            put(o, chunk, (size_t)r);
        if (r == 0) {
            close(client);
            return;
        }
    }
    abort(); /* h2o never closed: a connection left hanging */
}

/* h2o serves bytes as a connection just accepted, to their end. */
static void front_serves(const char *in, size_t n, out_t *o)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        abort();
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    if (n && write(sv[1], in, n) != (ssize_t)n) /* the input is small: it fits */
        abort();
    shutdown(sv[1], SHUT_WR);
    h2o_accept(&actx, h2o_evloop_socket_create(ctx.loop, sv[0], 0));
    read_until_closed(sv[1], o);
}

/* The front takes a connection back from a worker, with the bytes the
 * worker read and did not serve, as vc-front does (core/conn_pass.c). */
static void front_takes_back(const char *in, size_t n, out_t *o)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        abort();
    shutdown(sv[1], SHUT_WR); /* the client sent it all: the worker read it */
    conn_passed_t p = {.fd = sv[0], .bytes = malloc(n ? n : 1), .len = n};
    memcpy(p.bytes, in, n);
    h2o_accept(&actx, conn_take_back(ctx.loop, &p));
    read_until_closed(sv[1], o);
}

static const char DATE[] = "Thu, 01 Jan 1970 00:00:00 GMT";

/* The worker's side, handing back what the front must serve. */
static void worker_serves(const uint8_t *data, size_t size, out_t *o)
{
    char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    size_t len = size;
    static vc_http1_t c;
    vc_http1_init(&c, MAX_BODY);
    static char answer[OUT_CAP];
    for (;;) {
        vc_http1_step_t s = vc_http1_read(&c, buf, &len);
        if (s == VC_HTTP1_HEAD) {
            if (is_back(c.r.path.base, c.r.path.len) || c.r.upgrade.base)
                s = VC_HTTP1_HAND_BACK;
            else
                continue;
        }
        if (s == VC_HTTP1_HAND_BACK) {
            vc_http1_unread(&c, buf);
            front_takes_back(buf, len, o);
            break;
        }
        if (s == VC_HTTP1_CONTINUE) {
            put(o, VC_HTTP1_CONTINUE_ANSWER, sizeof(VC_HTTP1_CONTINUE_ANSWER) - 1);
            continue;
        }
        if (s == VC_HTTP1_REFUSE) {
            size_t n = vc_http1_refusal(&c, DATE, answer, sizeof(answer));
            if (n == 0)
                abort();
            put(o, answer, n);
            break;
        }
        if (s != VC_HTTP1_REQUEST)
            break; /* more is needed and no more comes, or a close without a word */
        const vc_http1_request_t *r = &c.r;
        out_t b = {answer, 0};
        put_text(&b, "method ", r->method.base, r->method.len);
        put_text(&b, "path ", r->path.base, r->path.len);
        if (r->authority.base)
            put_text(&b, "host ", r->authority.base, r->authority.len);
        else /* h2o's handler sees its default host's name */
            put_text(&b, "host ", "default", 7);
        put(&b, r->minor_version ? "1.1 " : "1.0 ", 4);
        put(&b, r->persistent ? "keep\n" : "close\n", r->persistent ? 5 : 6);
        for (size_t i = 0; i < r->nheaders; i++) {
            put_text(&b, "", r->headers[i].name.base, r->headers[i].name.len);
            put_text(&b, ": ", r->headers[i].value.base, r->headers[i].value.len);
        }
        put_text(&b, "body ", r->body.base, r->body.len);
        const vc_http1_field_t fields[] = {
            {{"content-type", 12}, {"text/plain", 10}},
            {{"Vary", 4}, {"Accept-Encoding", 15}},
            {{"Server", 6}, {"Velocity", 8}},
        };
        static char head[4096];
        size_t hn = vc_http1_head(head, 200, "OK", DATE, r->persistent, b.n, fields, 3, r->msie);
        put(o, head, hn);
        if (!(r->method.len == 4 && memcmp(r->method.base, "HEAD", 4) == 0))
            put(o, answer, b.n);
        if (!r->persistent)
            break;
        vc_http1_next(&c, buf, &len);
    }
    free(buf);
}

/* Every "Date: " value the same: h2o's is the clock's. */
static void undate(out_t *o)
{
    for (char *p = o->p; (p = memmem(p, (size_t)(o->p + o->n - p), "\r\nDate: ", 8)) != NULL; p += 8)
        if ((size_t)(o->p + o->n - p) >= 8 + sizeof(DATE) - 1)
            memcpy(p + 8, DATE, sizeof(DATE) - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    if (ctx.loop == NULL)
        setup();
    static char a[OUT_CAP], b[OUT_CAP];
    out_t front = {a, 0}, worker = {b, 0};
    front_serves((const char *)data, size, &front);
    worker_serves(data, size, &worker);
    undate(&front);
    undate(&worker);
    if (front.n != worker.n || memcmp(front.p, worker.p, front.n) != 0) {
        fprintf(stderr, "front wrote %zu bytes:\n%.*s\n---\nworker wrote %zu bytes:\n%.*s\n", front.n, (int)front.n,
                front.p, worker.n, (int)worker.n, worker.p);
        abort();
    }
    return 0;
}
