/*
 * A handler call is an h2o request on a connection with no socket (as the
 * cache's background refresh is, cache/cache_refresh.c), handed to
 * h2o_process_request so that it takes the site's own way to PHP; its
 * answer's bytes end in a sink that keeps them for the caller.
 */
#include "sio_handler.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

struct sio_handshake {
    unsigned refs;
    h2o_context_t *ctx;
    h2o_hostconf_t **hosts;
    const h2o_url_scheme_t *scheme;
    char *authority;
    char *path; /* the handler's, with the handshake's query */
    size_t nheaders;
    char **names, **values; /* as the client spelled them */
    size_t *value_lens;
    struct sockaddr_storage peer, local;
    socklen_t peer_len, local_len;
};

struct sio_call {
    h2o_conn_t conn; /* first: h2o_create_connection makes the whole */
    h2o_req_t req;
    h2o_ostream_t sink;
    h2o_timeout_entry_t dispose;
    sio_handshake_t *hs;
    char *body;
    char *answer;
    size_t len, cap;
    int too_long;
    sio_answer_cb cb;
    void *owner;
    sio_call_t **slot; /* the owner's hold on it, cleared once answered */
};

static uint64_t calls, failed;

void sio_handler_counts(uint64_t *made, uint64_t *bad)
{
    *made = calls;
    *bad = failed;
}

/* What a handler's request does not take from the handshake: what made it
 * a WebSocket, what framed its (empty) body, what would have PHP answer
 * something else than the handler's answer (conditionals, ranges) or the
 * front compress it. */
static int dropped(const h2o_iovec_t *name)
{
    static const char *const names[] = {"upgrade",
                                        "connection",
                                        "sec-websocket-key",
                                        "sec-websocket-version",
                                        "sec-websocket-extensions",
                                        "sec-websocket-protocol",
                                        "content-length",
                                        "content-type",
                                        "transfer-encoding",
                                        "accept-encoding",
                                        "expect",
                                        "te",
                                        "range",
                                        "if-range",
                                        "if-match",
                                        "if-none-match",
                                        "if-modified-since",
                                        "if-unmodified-since"};
    for (size_t i = 0; i < VC_ARRAY_SIZE(names); i++)
        if (h2o_lcstris(name->base, name->len, names[i], strlen(names[i])))
            return 1;
    return 0;
}

sio_handshake_t *sio_handshake_keep(h2o_req_t *req, const char *path)
{
    sio_handshake_t *hs = vc_calloc(1, sizeof(*hs));
    hs->refs = 1;
    hs->ctx = req->conn->ctx;
    hs->hosts = req->conn->hosts;
    hs->scheme = req->scheme;
    hs->authority = vc_strndup(req->authority.base, req->authority.len);
    if (req->query_at != SIZE_MAX)
        hs->path = vc_asprintf("%s%.*s", path, (int)(req->path.len - req->query_at), req->path.base + req->query_at);
    else
        hs->path = vc_strdup(path);
    size_t n = req->headers.size;
    hs->names = vc_calloc(n + 1, sizeof(*hs->names));
    hs->values = vc_calloc(n + 1, sizeof(*hs->values));
    hs->value_lens = vc_calloc(n + 1, sizeof(*hs->value_lens));
    for (size_t i = 0; i < n; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        if (dropped(h->name))
            continue;
        hs->names[hs->nheaders] = vc_strndup(h->orig_name ? h->orig_name : h->name->base, h->name->len);
        hs->values[hs->nheaders] = vc_strndup(h->value.base, h->value.len);
        hs->value_lens[hs->nheaders] = h->value.len;
        hs->nheaders++;
    }
    hs->peer_len = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&hs->peer);
    hs->local_len = req->conn->callbacks->get_sockname(req->conn, (struct sockaddr *)&hs->local);
    return hs;
}

void sio_handshake_unref(sio_handshake_t *hs)
{
    if (hs == NULL || --hs->refs > 0)
        return;
    for (size_t i = 0; i < hs->nheaders; i++) {
        free(hs->names[i]);
        free(hs->values[i]);
    }
    free(hs->names);
    free(hs->values);
    free(hs->value_lens);
    free(hs->authority);
    free(hs->path);
    free(hs);
}

static socklen_t get_peername(h2o_conn_t *conn, struct sockaddr *sa)
{
    sio_call_t *c = (sio_call_t *)conn;
    memcpy(sa, &c->hs->peer, c->hs->peer_len);
    return c->hs->peer_len;
}

static socklen_t get_sockname(h2o_conn_t *conn, struct sockaddr *sa)
{
    sio_call_t *c = (sio_call_t *)conn;
    memcpy(sa, &c->hs->local, c->hs->local_len);
    return c->hs->local_len;
}

static const h2o_conn_callbacks_t callbacks = {
    .get_sockname = get_sockname,
    .get_peername = get_peername,
};

static void on_dispose(h2o_timeout_entry_t *entry)
{
    sio_call_t *c = H2O_STRUCT_FROM_MEMBER(sio_call_t, dispose, entry);
    h2o_dispose_request(&c->req);
    sio_handshake_unref(c->hs);
    free(c->body);
    free(c->answer);
    free(c);
}

static void answered(sio_call_t *c)
{
    int status = c->too_long ? 0 : c->req.res.status;
    if (status < 200 || status > 299)
        failed++;
    if (c->slot)
        *c->slot = NULL;
    c->slot = NULL;
    if (c->cb) {
        sio_answer_cb cb = c->cb;
        c->cb = NULL;
        cb(c->owner, status, c->answer ? c->answer : "", c->len);
    }
}

/* The end of the filters: the answer is kept, in memory, up to its bound. */
static void on_sink(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n, h2o_send_state_t state)
{
    sio_call_t *c = H2O_STRUCT_FROM_MEMBER(sio_call_t, sink, self);
    h2o_context_t *ctx = req->conn->ctx;
    for (size_t i = 0; i < n && !c->too_long; i++) {
        if (c->len + bufs[i].len > SIO_ANSWER_MAX) {
            c->too_long = 1;
            break;
        }
        VC_GROW(c->answer, c->cap, c->len + bufs[i].len + 1, 1024);
        memcpy(c->answer + c->len, bufs[i].base, bufs[i].len);
        c->len += bufs[i].len;
        c->answer[c->len] = '\0';
    }
    /* As a client connection does: the next part is asked for, and the
     * request ends, on the loop's next turn, never inside the send. */
    if (h2o_send_state_is_in_progress(state)) {
        h2o_timeout_link(ctx->loop, &ctx->zero_timeout, &req->_timeout_entry);
        return;
    }
    if (state == H2O_SEND_STATE_ERROR)
        c->too_long = 1; /* cut short: no answer to believe */
    answered(c);
    h2o_timeout_link(ctx->loop, &ctx->zero_timeout, &c->dispose);
}

void sio_call(sio_handshake_t *hs, const char *kind, char *body, sio_answer_cb cb, void *owner, sio_call_t **slot)
{
    struct timeval now;
    gettimeofday(&now, NULL);
    sio_call_t *c = (sio_call_t *)h2o_create_connection(sizeof(*c), hs->ctx, hs->hosts, now, &callbacks);
    memset((char *)c + sizeof(c->conn), 0, sizeof(*c) - sizeof(c->conn));
    c->hs = hs;
    hs->refs++;
    c->body = body;
    c->cb = cb;
    c->owner = owner;
    c->slot = slot;
    if (slot)
        *slot = c; /* before the request runs: it may be answered at once */
    c->dispose.cb = on_dispose;
    calls++;

    h2o_req_t *req = &c->req;
    h2o_init_request(req, &c->conn, NULL);
    req->version = 0; /* keeps it out of the access log: no client asked */
    req->input.scheme = hs->scheme;
    req->input.method = h2o_iovec_init(H2O_STRLIT("POST"));
    req->input.authority = h2o_iovec_init(hs->authority, strlen(hs->authority));
    req->input.path = h2o_iovec_init(hs->path, strlen(hs->path));
    for (size_t i = 0; i < hs->nheaders; i++)
        h2o_add_header_by_str(&req->pool, &req->headers, hs->names[i], strlen(hs->names[i]), 1, hs->names[i],
                              hs->values[i], hs->value_lens[i]);
    h2o_add_header(&req->pool, &req->headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    req->entity = h2o_iovec_init(body, strlen(body));
    /* What tells the handler its request is the front's: a server
     * parameter, which a client's headers cannot make (they are HTTP_*). */
    h2o_iovec_t *v = h2o_req_getenv(req, H2O_STRLIT("VC_SOCKETIO"), 1);
    *v = h2o_iovec_init(kind, strlen(kind));
    c->sink.do_send = on_sink;
    req->_ostr_top = &c->sink;
    h2o_process_request(req);
}

void sio_call_forget(sio_call_t *c)
{
    if (c) {
        c->cb = NULL;
        c->slot = NULL;
    }
}
