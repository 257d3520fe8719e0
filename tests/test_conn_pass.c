/* vc-front's passed connections (daemons/vc-front/core/conn_pass.c) with
 * libh2o itself: a connection is passed out of h2o at a request for
 * "/pass", served on by a stand-in for a lent worker (libcommon/vc_http1.c
 * on the descriptor, answering "/pass" and "/w..." as the front does), and
 * taken back at the first request the worker does not answer. The client
 * must read the very bytes it reads when h2o answers everything, nothing
 * lost or answered twice; h2o writes nothing at the pass, leaves the
 * socket's on_close alone, and no descriptor is left open. */
#include "../daemons/vc-front/core/conn_pass.h"
#include "vc_http1.h"
#include "vc_test.h"

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>

static h2o_globalconf_t gc;
static h2o_context_t ctx;
static h2o_accept_ctx_t actx;
static int passing;             /* pass at "/pass" (else h2o answers all) */
static conn_passed_t passed;    /* out, waiting for the worker */
static int have_passed, passes; /* one waits; how many were made */
static int closes;              /* on_close calls for the client's socket */
static const char DATE[] = "Thu, 01 Jan 1970 00:00:00 GMT";

static int answered_by_worker(const char *p, size_t n)
{
    return (n == 5 && memcmp(p, "/pass", 5) == 0) || (n >= 2 && memcmp(p, "/w", 2) == 0);
}

static size_t answer_body(char *dst, const char *path, size_t n)
{
    memcpy(dst, "served ", 7);
    memcpy(dst + 7, path, n);
    dst[7 + n] = '\n';
    return n + 8;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    if (passing && h2o_memis(req->input.path.base, req->input.path.len, H2O_STRLIT("/pass")) && !have_passed) {
        if (conn_pass_out(req, &passed) == 0) {
            have_passed = 1;
            passes++;
            return 0;
        }
    }
    char *body = h2o_mem_alloc_pool(&req->pool, req->input.path.len + 8);
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = answer_body(body, req->input.path.base, req->input.path.len);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/plain"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_SERVER, "Server", H2O_STRLIT("Velocity"));
    h2o_send_inline(req, body, req->res.content_length);
    return 0;
}

static void on_close(void *data)
{
    (void)data;
    closes++;
}

static void accept_socket(h2o_socket_t *sock)
{
    sock->on_close.cb = on_close;
    h2o_accept(&actx, sock);
}

/* The lent worker's part: reads what it can, answers what is its own,
 * hands the rest back. Returns once the connection is back or closed. */
static void worker_serves(void)
{
    size_t cap = passed.len + 65536, len = passed.len;
    char *buf = malloc(cap);
    memcpy(buf, passed.bytes, passed.len);
    free(passed.bytes);
    ssize_t r;
    while ((r = recv(passed.fd, buf + len, cap - len, MSG_DONTWAIT)) > 0)
        len += (size_t)r;
    static vc_http1_t c;
    vc_http1_init(&c, 1 << 20);
    for (;;) {
        vc_http1_step_t s = vc_http1_read(&c, buf, &len);
        if (s == VC_HTTP1_HEAD && answered_by_worker(c.r.path.base, c.r.path.len))
            continue;
        if (s == VC_HTTP1_HEAD || s == VC_HTTP1_HAND_BACK) {
            vc_http1_unread(&c, buf);
            passed.bytes = buf;
            passed.len = len;
            accept_socket(conn_take_back(ctx.loop, &passed));
            have_passed = 0;
            return;
        }
        if (s != VC_HTTP1_REQUEST)
            break;
        char body[256], head[1024];
        size_t bn = answer_body(body, c.r.path.base, c.r.path.len);
        const vc_http1_field_t fields[] = {{{"content-type", 12}, {"text/plain", 10}},
                                           {{"Server", 6}, {"Velocity", 8}}};
        size_t hn = vc_http1_head(head, 200, "OK", DATE, c.r.persistent, bn, fields, 2, c.r.msie);
        CHECK(write(passed.fd, head, hn) == (ssize_t)hn);
        CHECK(write(passed.fd, body, bn) == (ssize_t)bn);
        if (!c.r.persistent)
            break;
        vc_http1_next(&c, buf, &len);
    }
    close(passed.fd); /* the worker closes: in the front, its state goes too */
    closes++;
    have_passed = 0;
    free(buf);
}

static void undate(char *p, size_t n)
{
    char *end = p + n;
    while ((p = memmem(p, (size_t)(end - p), "\r\nDate: ", 8)) != NULL && end - p >= 37) {
        memcpy(p + 8, DATE, sizeof(DATE) - 1);
        p += 8;
    }
}

/* What a client sending in reads back, to the connection's end. */
static size_t serve(const char *in, char *out, size_t cap)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    CHECK(write(sv[1], in, strlen(in)) == (ssize_t)strlen(in));
    shutdown(sv[1], SHUT_WR);
    closes = 0;
    accept_socket(h2o_evloop_socket_create(ctx.loop, sv[0], 0));
    size_t n = 0;
    for (int turns = 0; turns < 1000; turns++) {
        h2o_evloop_run(ctx.loop, 0);
        if (have_passed)
            worker_serves();
        ssize_t r;
        while ((r = recv(sv[1], out + n, cap - n, MSG_DONTWAIT)) > 0)
            n += (size_t)r;
        if (r == 0)
            break;
    }
    close(sv[1]);
    h2o_evloop_run(ctx.loop, 0); /* h2o frees what the pass left behind */
    undate(out, n);
    return n;
}

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

/* in, served by h2o alone and with passes: the same bytes. */
static void same_either_way(const char *in, int want_passes)
{
    static char a[65536], b[65536];
    passing = 0;
    size_t na = serve(in, a, sizeof(a));
    passing = 1;
    passes = 0;
    size_t nb = serve(in, b, sizeof(b));
    CHECK(passes == want_passes);
    CHECK(closes == 1); /* once, and not at the pass */
    CHECK(na > 0 && na == nb && memcmp(a, b, na) == 0);
    if (na != nb || memcmp(a, b, na) != 0)
        fprintf(stderr, "h2o alone wrote:\n%.*s\n--- with a pass:\n%.*s\n", (int)na, a, (int)nb, b);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    h2o_config_init(&gc);
    gc.server_name = h2o_iovec_init(H2O_STRLIT(""));
    h2o_hostconf_t *host = h2o_config_register_host(&gc, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_create_handler(h2o_config_register_path(host, "/", 0), sizeof(h2o_handler_t))->on_req = on_req;
    h2o_context_init(&ctx, h2o_evloop_create(), &gc);
    static h2o_hostconf_t *hosts[2];
    hosts[0] = host;
    actx = (h2o_accept_ctx_t){.ctx = &ctx, .hosts = hosts};
    int fds = open_fds();

    /* Pipelined: the worker answers /pass and /w1, the front the rest. */
    same_either_way("GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                    "GET /pass HTTP/1.1\r\nHost: x\r\n\r\n"
                    "GET /w1 HTTP/1.1\r\nHost: x\r\n\r\n"
                    "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
                    "GET /w2 HTTP/1.1\r\nHost: x\r\n\r\n",
                    1);
    /* Passed twice on one connection: out, back, out again. */
    same_either_way("GET /pass HTTP/1.1\r\nHost: x\r\n\r\n"
                    "GET /c HTTP/1.1\r\nHost: x\r\n\r\n"
                    "GET /pass HTTP/1.1\r\nHost: x\r\n\r\n"
                    "GET /w3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    2);
    /* HTTP/1.0 with keep-alive, and a head cut short at the end. */
    same_either_way("GET /pass HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /w4 HTTP/1.1\r\nHo", 1);
    /* Not passed: a body, and an absolute-form target h2o rewrote. */
    same_either_way("POST /pass HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", 0);
    same_either_way("GET http://x/pass HTTP/1.1\r\nHost: x\r\n\r\n", 0);

    CHECK(open_fds() == fds);
    return vc_test_result("conn_pass");
}
