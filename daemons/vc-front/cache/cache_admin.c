/*
 * The purge API on the admin listener, in the shape Varnish and Souin
 * users script against:
 *
 *   PURGE /path            Host: shop.example    that URL (http and https)
 *   PURGE /path            Velocity-Purge: prefix   every key under it
 *   PURGE /                Velocity-Purge: all
 *   PURGE /                xkey-purge: a b  (or Surrogate-Key, Cache-Tag)
 *   PURGE /                xkey-softpurge: a b      stale, not gone
 *   ... with Authorization: Bearer <cache.purge_token>
 *
 * Off until cache.purge_token is set. The purge is vc-cache's ("purge" on
 * its control socket): the answer comes once it has committed, so after a
 * 200 no request gets what it purged. The call never blocks the event
 * loop: each purge has its own DEALER socket, watched by the loop until
 * vc-cache answers (or 30 s pass: 502). Several tags are a purge each.
 */
#include "cache_internal.h"
#include "cache_policy.h"
#include "vc_ctl.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.pb-c.h"

#define CALL_TIMEOUT_S 30

typedef struct purge_call purge_call_t;

/* A PURGE request: malloc'd, as its calls may outlive its client; freed
 * once both are done. */
typedef struct purge_req {
    h2o_req_t *req; /* NULL once answered, or its client left */
    int gone;       /* the request was disposed of */
    purge_call_t *calls;
    size_t pending, failed;
    long entries;
    char error[256];
} purge_req_t;

struct purge_call {
    purge_call_t *next;
    purge_req_t *pr;
    void *sock;
    h2o_socket_t *watch; /* a dup of the socket's ZMQ_FD */
    h2o_timeout_entry_t timeout;
    h2o_loop_t *loop;
    h2o_timeout_t *one_sec;
    unsigned seconds;
};

typedef struct admin_handler {
    h2o_handler_t super;
    front_t *f;
} admin_handler_t;

static void finish(purge_req_t *pr)
{
    if (pr->req == NULL)
        return;
    h2o_req_t *req = pr->req;
    pr->req = NULL;
    char body[400];
    int n;
    if (pr->failed) {
        req->res.status = 502;
        req->res.reason = "Bad Gateway";
        n = snprintf(body, sizeof(body), "{\"ok\":false,\"error\":\"%s\"}\n", pr->error);
    } else {
        req->res.status = 200;
        req->res.reason = "OK";
        n = snprintf(body, sizeof(body), "{\"ok\":true,\"entries\":%ld}\n", pr->entries);
    }
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    h2o_send_inline(req, body, (size_t)n);
}

static void call_end(purge_call_t *c)
{
    h2o_timeout_unlink(&c->timeout);
    h2o_socket_read_stop(c->watch);
    h2o_socket_close(c->watch);
    zmq_close(c->sock);
    purge_req_t *pr = c->pr;
    purge_call_t **pp = &pr->calls;
    while (*pp != c)
        pp = &(*pp)->next;
    *pp = c->next;
    free(c);
    if (--pr->pending == 0) {
        finish(pr);
        if (pr->gone)
            free(pr);
    }
}

static void call_failed(purge_call_t *c, const char *why)
{
    c->pr->failed++;
    snprintf(c->pr->error, sizeof(c->pr->error), "%s", why);
    call_end(c);
}

/* vc-cache's answer, if it is there: 1 once the call ended. */
static int try_reply(purge_call_t *c)
{
    vc_zparts_t fr = {0};
    if (vc_zparts_recv(c->sock, &fr, ZMQ_DONTWAIT) < 0) {
        vc_zparts_fini(&fr);
        return 0;
    }
    Vc__Reply *r = fr.n == 2 ? vc__reply__unpack(NULL, zmq_msg_size(&fr.f[1]), zmq_msg_data(&fr.f[1])) : NULL;
    vc_zparts_fini(&fr);
    if (r == NULL) {
        call_failed(c, "a malformed answer from vc-cache");
        return 1;
    }
    if (!r->ok) {
        char why[200];
        snprintf(why, sizeof(why), "%s", r->message);
        vc__reply__free_unpacked(r, NULL);
        call_failed(c, why);
        return 1;
    }
    const char *n = vc_reply_get(r, "entries");
    c->pr->entries += n ? strtol(n, NULL, 10) : 0;
    vc__reply__free_unpacked(r, NULL);
    call_end(c);
    return 1;
}

static void on_reply(h2o_socket_t *sock, const char *err)
{
    try_reply(sock->data);
}

/* Each second: the answer, if ZMQ_FD's edge was missed; at last, give up. */
static void on_second(h2o_timeout_entry_t *entry)
{
    purge_call_t *c = H2O_STRUCT_FROM_MEMBER(purge_call_t, timeout, entry);
    if (try_reply(c))
        return;
    if (++c->seconds >= CALL_TIMEOUT_S)
        call_failed(c, "vc-cache did not answer in time");
    else
        h2o_timeout_link(c->loop, c->one_sec, &c->timeout);
}

/* One "purge" command to vc-cache, answered to pr later. */
static void call(front_t *f, purge_req_t *pr, const char *const *args, size_t nargs)
{
    char *ep = vc_config_endpoint(f->d.cfg, "ctl-vc-cache");
    /* ZeroMQ would wait for an ipc:// socket nobody listens on. */
    struct stat st;
    void *s = strncmp(ep, "ipc://", 6) == 0 && stat(ep + 6, &st) != 0 ? NULL : vc_socket(f->d.zctx, ZMQ_DEALER, ep, 0);
    free(ep);
    Vc__Command cmd = VC__COMMAND__INIT;
    cmd.verb = "purge";
    cmd.args = (char **)args;
    cmd.n_args = nargs;
    int fd;
    size_t len = sizeof(fd);
    if (s == NULL || zmq_send(s, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        vc_send_proto(s, &cmd.base, ZMQ_DONTWAIT) < 0 || zmq_getsockopt(s, ZMQ_FD, &fd, &len) < 0 ||
        (fd = dup(fd)) < 0) {
        if (s)
            zmq_close(s);
        pr->failed++;
        snprintf(pr->error, sizeof(pr->error), "vc-cache is not reachable");
        return;
    }
    purge_call_t *c = vc_calloc(1, sizeof(*c));
    c->pr = pr;
    c->sock = s;
    c->next = pr->calls;
    pr->calls = c;
    pr->pending++;
    c->watch = h2o_evloop_socket_create(f->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    c->watch->data = c;
    h2o_socket_read_start(c->watch, on_reply);
    c->timeout.cb = on_second;
    c->loop = f->ctx.loop;
    c->one_sec = &f->ctx.one_sec_timeout;
    h2o_timeout_link(c->loop, c->one_sec, &c->timeout);
}

/* The request is done (answered, or its client left): the purges still
 * run, their answers go nowhere. */
static void on_dispose(void *arg)
{
    purge_req_t *pr = *(purge_req_t **)arg;
    pr->req = NULL;
    pr->gone = 1;
    if (pr->pending == 0)
        free(pr);
}

static int refuse(h2o_req_t *req, int status, const char *reason, const char *msg)
{
    h2o_send_error_generic(req, status, reason, msg, H2O_SEND_ERROR_KEEP_HEADERS);
    return 0;
}

static h2o_iovec_t header(h2o_req_t *req, const char *name)
{
    ssize_t at = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);
    return at == -1 ? h2o_iovec_init(NULL, 0) : req->headers.entries[at].value;
}

/* Compared in constant time: a wrong token says nothing of the right one. */
static int token_ok(h2o_iovec_t auth, const char *token)
{
    size_t tl = strlen(token);
    if (auth.len != 7 + tl || strncasecmp(auth.base, "Bearer ", 7) != 0)
        return 0;
    unsigned char diff = 0;
    for (size_t i = 0; i < tl; i++)
        diff |= (unsigned char)(auth.base[7 + i] ^ token[i]);
    return diff == 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("PURGE")))
        return -1; /* the next handler's (/metrics) */
    front_t *f = ((admin_handler_t *)self)->f;
    const char *token = cache_settings()->purge_token;
    if (token == NULL || *token == '\0')
        return refuse(req, 403, "Forbidden", "the purge API is off: set cache.purge_token\n");
    if (!token_ok(header(req, "authorization"), token)) {
        vc_log(VC_LOG_NOTICE, "cache", "refused a purge without the right token");
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL, H2O_STRLIT("Bearer"));
        return refuse(req, 401, "Unauthorized", "a purge needs Authorization: Bearer <cache.purge_token>\n");
    }
    purge_req_t *pr = vc_calloc(1, sizeof(*pr));
    purge_req_t **hook = h2o_mem_alloc_shared(&req->pool, sizeof(*hook), on_dispose);
    *hook = pr;
    /* Tags, from xkey's headers or the tag headers answers carry. */
    cache_tag_list_t tags = {.pool = &req->pool};
    int soft = 0;
    static const char *const tag_headers[] = {"xkey-purge", "xkey-softpurge", "surrogate-key", "cache-tag", "xkey"};
    for (size_t i = 0; i < VC_ARRAY_SIZE(tag_headers); i++) {
        h2o_iovec_t v = header(req, tag_headers[i]);
        if (v.base) {
            cache_policy_tags(v.base, v.len, VC_CACHE_TAGS_MAX, cache_tag_list_add, &tags);
            soft |= i == 1;
        }
    }
    soft |= header(req, "velocity-purge-soft").base != NULL;
    h2o_iovec_t how = header(req, "velocity-purge");
    const char *soft_arg = soft ? "soft" : NULL;
    if (tags.n > 0) {
        for (size_t i = 0; i < tags.n; i++) {
            const char *args[] = {"tag", tags.tags[i], soft_arg};
            call(f, pr, args, soft ? 3 : 2);
        }
    } else if (how.base && h2o_memis(how.base, how.len, H2O_STRLIT("all"))) {
        const char *args[] = {"all", soft_arg};
        call(f, pr, args, soft ? 2 : 1);
    } else if (how.base == NULL || h2o_memis(how.base, how.len, H2O_STRLIT("prefix"))) {
        /* The URL on the host the Host header names (the admin listener
         * serves none of its own). */
        h2o_iovec_t url = h2o_concat(&req->pool, h2o_iovec_init(H2O_STRLIT("http://")), req->authority, req->path,
                                     h2o_iovec_init("", 1));
        const char *args[] = {how.base ? "prefix" : "url", url.base, soft_arg};
        call(f, pr, args, soft ? 3 : 2);
    } else {
        return refuse(req, 400, "Bad Request", "Velocity-Purge: expected all or prefix\n");
    }
    pr->req = req;
    if (pr->pending == 0)
        finish(pr); /* nothing could be asked */
    return 0;
}

void cache_admin_register(front_t *f, h2o_pathconf_t *pathconf)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    admin_handler_t *h = (admin_handler_t *)h2o_create_handler(pathconf, sizeof(*h));
    h->super.on_req = on_req;
    h->f = f;
}
