#include "conn_pass.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <h2o/http1.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static h2o_socket_t *socket_of(h2o_req_t *req)
{
    if (req->version >= 0x200 || req->conn->callbacks->get_socket == NULL)
        return NULL;
    return req->conn->callbacks->get_socket(req->conn);
}

const char *conn_pass_refusal(h2o_req_t *req)
{
    h2o_socket_t *sock = socket_of(req);
    if (sock == NULL)
        return "not HTTP/1";
    if (sock->ssl != NULL)
        return "TLS";
    if (req->_generator != NULL || h2o_socket_is_writing(sock))
        return "its answer has begun";
    if (req->entity.base != NULL)
        return "a body";
    if (req->upgrade.base != NULL)
        return "an Upgrade";
    /* h2o drops a request's bytes once it is answered: what it holds
     * begins with this request's head, unless the head was rewritten. */
    const h2o_iovec_t m = req->input.method, p = req->input.path;
    const h2o_buffer_t *in = sock->input;
    if (in->size < m.len + p.len + 2 || memcmp(in->bytes, m.base, m.len) != 0 || in->bytes[m.len] != ' ' ||
        memcmp(in->bytes + m.len + 1, p.base, p.len) != 0 || in->bytes[m.len + 1 + p.len] != ' ')
        return "its head was rewritten";
    return NULL;
}

static void on_ended(void *data, h2o_socket_t *sock, size_t reqsize)
{
    (void)data, (void)reqsize;
    if (sock != NULL) /* the head reached a socket whose peer had gone: it cannot */
        h2o_socket_close(sock);
}

int conn_pass_out(h2o_req_t *req, conn_passed_t *out)
{
    if (conn_pass_refusal(req) != NULL)
        return -1;
    h2o_socket_t *sock = socket_of(req);
    /* lib/http1.c: struct st_h2o_http1_conn_t { h2o_conn_t super; h2o_socket_t *sock; ... } */
    h2o_socket_t **field = (h2o_socket_t **)(void *)((char *)req->conn + sizeof(h2o_conn_t));
    if (*field != sock) {
        static int said;
        if (!said++)
            vc_log(VC_LOG_WARN, "conn_pass",
                   "this libh2o keeps an HTTP/1 connection's socket elsewhere than 2.2.5: no connection is passed");
        return -1;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
        vc_log(VC_LOG_WARN, "conn_pass", "socketpair() failed: %s", strerror(errno));
        return -1;
    }
    close(sv[1]);
    h2o_socket_t *gone = h2o_evloop_socket_create(h2o_socket_get_loop(sock), sv[0], 0);

    out->on_close = sock->on_close.cb;
    out->on_close_data = sock->on_close.data;
    sock->on_close.cb = NULL; /* the caller's state for the connection stays */
    h2o_socket_export_t info;
    if (h2o_socket_export(sock, &info) < 0) { /* evloop's never fails; kept for its contract */
        sock->on_close.cb = out->on_close;
        h2o_socket_close(gone);
        return -1;
    }
    out->fd = info.fd;
    out->len = info.input->size;
    out->bytes = vc_malloc(out->len ? out->len : 1);
    memcpy(out->bytes, info.input->bytes, out->len);
    h2o_buffer_dispose(&info.input);

    gone->data = req->conn; /* as h2o_http1_accept() sets its socket's */
    *field = gone;
    req->res.status = 101;
    req->res.reason = "Switching Protocols";
    h2o_http1_upgrade(req, NULL, 0, on_ended, NULL);
    /* Not logged as the 101 it ends as: the process it is passed to
     * answers it, and the caller logs that (h2o's loggers run at the
     * request's end, from its path's configuration). */
    req->pathconf = NULL;
    return 0;
}

h2o_socket_t *conn_take_back(h2o_loop_t *loop, conn_passed_t *p)
{
    h2o_socket_export_t info = {.fd = p->fd, .ssl = NULL, .input = NULL};
    h2o_buffer_init(&info.input, &h2o_socket_buffer_prototype);
    if (p->len > 0) {
        h2o_iovec_t room = h2o_buffer_reserve(&info.input, p->len);
        memcpy(room.base, p->bytes, p->len);
        info.input->size += p->len;
    }
    free(p->bytes);
    p->bytes = NULL;
    p->len = 0;
    p->fd = -1;
    h2o_socket_t *sock = h2o_socket_import(loop, &info);
    sock->on_close.cb = p->on_close;
    sock->on_close.data = p->on_close_data;
    return sock;
}

void conn_pass_end(conn_passed_t *p)
{
    free(p->bytes);
    p->bytes = NULL;
    p->len = 0;
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    if (p->on_close)
        p->on_close(p->on_close_data);
    p->on_close = NULL;
}
