/*
 * Background refresh (stale-while-revalidate): while a stale entry is
 * served, one request of the front's own asks PHP for the page again and
 * its answer is stored as any miss's is. It is an h2o request on a
 * connection that has no socket: made like the client's (its headers,
 * address and route, as Varnish's background fetch uses the request that
 * found the object stale), less what would make PHP answer something else
 * than the page (the client's conditionals) or the front compress it for
 * nobody (Accept-Encoding); with the stale entry's own validators, so that
 * PHP may answer 304 and save making the page. What PHP sends is dropped once the tap has seen it.
 * It leads the page's flight, so only one runs at a time.
 */
#include "cache_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

typedef struct refresh {
    h2o_conn_t conn;
    h2o_req_t req;
    h2o_ostream_t sink;
    h2o_timeout_entry_t dispose;
    struct sockaddr_storage peer, local;
    socklen_t peer_len, local_len;
} refresh_t;

static socklen_t get_peername(h2o_conn_t *conn, struct sockaddr *sa)
{
    refresh_t *r = H2O_STRUCT_FROM_MEMBER(refresh_t, conn, conn);
    memcpy(sa, &r->peer, r->peer_len);
    return r->peer_len;
}

static socklen_t get_sockname(h2o_conn_t *conn, struct sockaddr *sa)
{
    refresh_t *r = H2O_STRUCT_FROM_MEMBER(refresh_t, conn, conn);
    memcpy(sa, &r->local, r->local_len);
    return r->local_len;
}

static const h2o_conn_callbacks_t callbacks = {
    .get_sockname = get_sockname,
    .get_peername = get_peername,
};

static void on_dispose(h2o_timeout_entry_t *entry)
{
    refresh_t *r = H2O_STRUCT_FROM_MEMBER(refresh_t, dispose, entry);
    h2o_dispose_request(&r->req);
    free(r);
}

/* The end of the filters: nobody reads the answer. */
static void on_sink(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n, h2o_send_state_t state)
{
    refresh_t *r = H2O_STRUCT_FROM_MEMBER(refresh_t, sink, self);
    h2o_context_t *ctx = req->conn->ctx;
    /* As a client connection does: the next part is asked for, and the
     * request ends, on the loop's next turn, never inside the send. */
    if (h2o_send_state_is_in_progress(state))
        h2o_timeout_link(ctx->loop, &ctx->zero_timeout, &req->_timeout_entry);
    else
        h2o_timeout_link(ctx->loop, &ctx->zero_timeout, &r->dispose);
}

int cache_refresh(const seam_request_t *sr, const vc_cache_rule_t *rule, const char *key, size_t klen, uint64_t epoch,
                  const vc_cache_entry_t *e)
{
    h2o_req_t *src = sr->req;
    refresh_t *r = vc_calloc(1, sizeof(*r));
    r->conn.ctx = src->conn->ctx;
    r->conn.hosts = src->conn->hosts;
    gettimeofday(&r->conn.connected_at, NULL);
    r->conn.callbacks = &callbacks;
    r->peer_len = src->conn->callbacks->get_peername(src->conn, (struct sockaddr *)&r->peer);
    r->local_len = src->conn->callbacks->get_sockname(src->conn, (struct sockaddr *)&r->local);
    r->dispose.cb = on_dispose;

    h2o_req_t *req = &r->req;
    h2o_init_request(req, &r->conn, src);
    /* A version of 0 keeps it out of the access log: no client asked. */
    req->version = 0;
    req->input.method = h2o_iovec_init(H2O_STRLIT("GET"));
    req->entity = h2o_iovec_init(NULL, 0);
    static const h2o_token_t *const dropped[] = {H2O_TOKEN_IF_NONE_MATCH,  H2O_TOKEN_IF_MODIFIED_SINCE,
                                                 H2O_TOKEN_IF_MATCH,       H2O_TOKEN_IF_UNMODIFIED_SINCE,
                                                 H2O_TOKEN_IF_RANGE,       H2O_TOKEN_RANGE,
                                                 H2O_TOKEN_ACCEPT_ENCODING};
    for (size_t i = 0; i < VC_ARRAY_SIZE(dropped); i++) {
        ssize_t at;
        while ((at = h2o_find_header(&req->headers, dropped[i], -1)) != -1)
            h2o_delete_header(&req->headers, at);
    }
    /* What h2o does before a handler sees a request. */
    h2o_get_timestamp(r->conn.ctx, &req->pool, &req->processed_at);
    req->scheme = req->input.scheme;
    req->method = req->input.method;
    req->authority = req->input.authority;
    req->path = req->input.path;
    req->path_normalized =
        h2o_url_normalize_path(&req->pool, req->path.base, req->path.len, &req->query_at, &req->norm_indexes);
    req->input.query_at = req->query_at;
    req->hostconf = src->hostconf;
    req->pathconf = src->pathconf;
    r->sink.do_send = on_sink;
    req->_ostr_top = &r->sink;

    seam_request_t own = *sr;
    own.req = req;
    cache_tap_args_t a = {.site = sr->site, .rule = rule, .key = key, .klen = klen, .may_store = 1, .fwd = "stale"};
    /* PHP may say the stale entry is still good (304): then it is stored
     * again as it was, for the lifetime the 304 gives. */
    if ((a.revalidate = cache_add_validators(req, e)) != 0) {
        a.stale = e->bytes;
        a.stale_len = e->len;
    }
    a.lead = flight_start(key, klen, req, epoch);
    cache_tap(sr->f, req, &a);
    vc_log(VC_LOG_DEBUG, "cache", "refreshing %.*s in the background", (int)klen, key);
    return cache_to_php(&own) ? 0 : -1;
}
