/*
 * A client's connection lent to a lent worker (docs/php.md, "Lent
 * connections"): after the front accepted a plaintext HTTP/1.1
 * connection, applied its bans and limits and routed a request to a pool
 * with php.lend_connections, the connection may go to an idle lent
 * worker with that request. The worker reads the connection's next
 * requests itself, as long as they are for the same script (the lease:
 * daemons/vc-php/client_conn.h), and answers them as the front would, so
 * a request wakes one process instead of two. It hands the connection
 * back (vc_wire.h: "B") when a request is not its to serve, when the
 * connection idles, when a write would block, or when the front asks
 * ("H"): the front wants the worker (requests wait here, the pool recalls
 * it). The front takes the connection back into h2o as if just accepted,
 * with the bytes the worker read and did not serve.
 *
 * The front keeps its own copy of the descriptor and its state for the
 * connection meanwhile: the worker's close of its copy does not end the
 * connection, and a worker that dies takes nothing with it but the
 * connection (closed here).
 */
#include "backend_internal.h"
#include "core/conn.h"
#include "core/access_log.h"
#include "core/conn_pass.h"
#include "core/forwarded.h"
#include "htaccess_cache.h"
#include "vc_cache.h"
#include "vc_log.h"
#include "vc_shared_page.h"
#include "vc_util.h"
#include "vc_wire.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A worker's connections go back as soon as a request waits here for a
 * worker: with more busy connections than workers can hold, a connection
 * lent would come back at once, and each lend and return costs more than
 * the wakeups it saves (hello-worker at 64 connections, 4 workers, one
 * connection each: 9% fewer requests a second). So the front lends only
 * when no request has waited for a worker this long. */
#define QUIET_MS 1000

typedef struct conn_lend {
    conn_passed_t passed; /* fd: the front's copy */
    conn_state_t *c;      /* a reference */
    const site_rt_t *s;   /* the lease's site (the front's for its life) */
    uint32_t id;          /* the worker's name for it (vc_wire.h) */
    uint64_t logged;      /* its requests the worker has logged */
} conn_lend_t;

/* With no idle worker: the one serving the fewest connections, if fewer
 * than k, and neither asked for them back nor wanted by the pool. The
 * next request then waits for what that worker runs (docs/php.md). */
static lent_t *sharing(backend_t *be, int k)
{
    lent_t *best = NULL;
    for (size_t i = 0; i < be->nlent; i++) {
        lent_t *l = be->lent[i];
        if (l->nconns > 0 && l->nconns < k && !l->conns_asked && !l->leaving && !l->recalled && !l->owed &&
            (!best || l->nconns < best->nconns))
            best = l;
    }
    return best;
}

static int find(const lent_t *l, const struct iovec *id)
{
    for (int i = 0; id->iov_len == sizeof(uint32_t) && i < l->nconns; i++)
        if (memcmp(&l->conns[i]->id, id->iov_base, sizeof(uint32_t)) == 0)
            return i;
    return -1;
}

/* The lowest id none of l's connections has: below the pool's
 * lend_connections, so a word of l's quiet page. */
static uint32_t free_id(const lent_t *l)
{
    for (uint32_t id = 0;; id++) {
        uint32_t le = htole32(id);
        int i = find(l, &(struct iovec){&le, sizeof(le)});
        if (i < 0)
            return id;
    }
}

static void forget(lent_t *l, int i)
{
    l->conns[i] = l->conns[--l->nconns];
    if (l->nconns == 0)
        l->conns_asked = 0;
}

/* What the front does for each request or answer of these sites beyond
 * routing it to a script (the cache, redirects, hand-offs, realtime
 * publishing), a worker does not: their connections stay here. Nor for a
 * path under a .htaccess, whose rules may read more of a request than
 * its path. Compression is the front's too, but only for a request that
 * asks for it: a worker hands such a request back. */
static int lendable(const front_t *f, const site_rt_t *s, const preq_t *p)
{
    const vc_site_t *c = s->conf;
    if ((c->cache && vc_cache_settings_of(f->d.cfg)->enabled) || c->https_redirect || c->canonical_host != NULL ||
        c->nredirects > 0 || c->nrealtime_apps > 0 || c->ninternal_locations > 0 || c->nsendfile_paths > 0)
        return 0;
    if (!c->htaccess)
        return 1;
    h2o_req_t *req = p->req;
    const route_site_t *rs = &s->route;
    const char *asked = h2o_concat(&req->pool, h2o_iovec_init(rs->root, rs->root_len), req->path_normalized).base;
    return htaccess_none_above(p->script, rs->root_len) && htaccess_none_above(asked, rs->root_len);
}

static void board_lent(lent_t *l)
{
    /* Idle as far as the broker goes: its time limits are for a request,
     * and the connection comes back when the pool wants the worker. */
    vc_board_slot_t *bs = l->bs;
    vc_board_begin(bs);
    bs->state = VC_BOARD_IDLE;
    bs->started = 0;
    bs->since_ms = vc_mono_ms();
    snprintf(bs->what, sizeof(bs->what), "a lent connection");
    bs->script[0] = '\0';
    vc_board_end(bs);
}

int lend_conn_try(backend_t *be, lent_t *l, preq_t *p)
{
    VC_CHECK_OBJ_OR_NULL(l, LENT_MAGIC);
    const vc_pool_t *conf = be->pool->conf;
    h2o_req_t *req = p->req;
    front_t *f = be->f;
    int compress = p->srt && p->srt->conf->gzip && f->settings->gzip;
    if (conf->lend_connections < 1 || vc_mono_ms() - be->waited_ms < QUIET_MS || !strcmp(conf->mode, "fork") ||
        p->conn == NULL || p->conn->cut || p->conn->lend_bounced || be->leaving || be->nowed > 0 ||
        (l == NULL && (l = sharing(be, (int)conf->lend_connections)) == NULL))
        return 0;
    if ((compress && h2o_get_compressible_types(&req->headers) != 0) || p->srt == NULL || !lendable(f, p->srt, p) ||
        l->recalled || l->owed || l->conns_asked || l->ob.writing || l->ob.out.len > l->ob.out.off ||
        conn_pass_refusal(req) != NULL)
        return 0;
    int trusted = forwarded_trusted(f->settings, p->conn, req) == 1;
    conn_passed_t out;
    if (conn_pass_out(req, &out) < 0)
        return 0;
    char flag = WIRE_LEND_CONN;
    uint8_t terms[13];
    uint64_t max_body = htole64((uint64_t)f->settings->max_body);
    uint32_t host_id = free_id(l), id = htole32(host_id);
    /* The quiet words go with the first connection (made once; without
     * them a worker's death closes its connections, as before). */
    int fds[2] = {out.fd,
                  l->quiet ? -1 : vc_shared_page_create("vc-lent-quiet", sizeof(vc_lent_quiet_t), (void **)&l->quiet)};
    vc_lent_quiet_set(l->quiet, host_id, 0);
    terms[0] = (uint8_t)(trusted | (compress ? 2 : 0) | (fds[1] >= 0 ? WIRE_LEND_QUIET_PAGE : 0));
    memcpy(terms + 1, &max_body, sizeof(max_body));
    memcpy(terms + 9, &id, sizeof(id));
    struct iovec fr[4] = {{&flag, 1}, {p->packed, p->packed_len}, {terms, sizeof(terms)}, {out.bytes, out.len}};
    vc_link_buf_t msg = {0};
    vc_link_append(&msg, fr, out.len > 0 ? 4 : 3);
    ssize_t sent =
        vc_link_send_fds(h2o_socket_get_fd(l->ob.sock), msg.p + msg.off, msg.len - msg.off, fds, fds[1] >= 0 ? 2 : 1);
    if (fds[1] >= 0)
        close(fds[1]);
    if (sent < 0) {
        /* The worker cannot have it (it has just exited, its end not read
         * yet): back into h2o, which reads the request again (it was not
         * answered), for another worker. */
        l->leaving = l->busy = l->finishing = 1;
        vc_log(VC_LOG_WARN, "backend", "lending a connection to worker %d failed (%s): the front serves it", l->pid,
               vc_strerror((int)-sent));
        vc_link_buf_free(&msg);
        h2o_socket_t *sock = conn_take_back(f->ctx.loop, &out);
        p->conn->sock = sock;
        p->final_seen = 1;
        h2o_accept(&f->accept_plain, sock);
        return 1;
    }
    if ((size_t)sent < msg.len - msg.off) { /* the rest, after what waits */
        vc_link_put(&l->ob.out, msg.p + msg.off + sent, msg.len - msg.off - (size_t)sent);
        lent_flush(l);
    }
    vc_link_buf_free(&msg);
    free(out.bytes);
    out.bytes = NULL;
    out.len = 0;
    conn_lend_t *lc = vc_calloc(1, sizeof(*lc));
    lc->passed = out;
    lc->c = p->conn;
    lc->c->refs++;
    lc->s = p->srt;
    lc->c->sock = NULL; /* h2o's is gone: evictions pass it by */
    lc->c->lent = 1;
    lc->id = id;
    p->final_seen = 1; /* answered by the worker: nothing to cancel or charge */
    VC_GROW(l->conns, l->capconns, (size_t)l->nconns + 1, 4);
    l->conns[l->nconns++] = lc;
    if (l->nconns == 1) {
        l->busy = 1;
        l->finishing = 0;
        l->job = NULL;
        board_lent(l);
    }
    php_stats.conns_lent++;
    return 1;
}

void lend_conn_want(lent_t *l)
{
    VC_CHECK_OBJ(l, LENT_MAGIC);
    if (l->nconns == 0 || l->conns_asked)
        return;
    l->conns_asked = 1;
    char c = WIRE_WANT_CONN;
    vc_link_append(&l->ob.out, &(struct iovec){&c, 1}, 1);
    lent_flush(l);
}

/* ["B"][id][served][last][bytes] or ["X"][id][served][last]. */
void lend_conn_ended(lent_t *l, const struct iovec *f, int n)
{
    VC_CHECK_OBJ(l, LENT_MAGIC);
    int i = n >= 2 ? find(l, &f[1]) : -1;
    if (i < 0) {
        vc_log(VC_LOG_WARN, "backend", "worker %d ended a connection it was not lent: ignored", l->pid);
        return;
    }
    conn_lend_t *lc = l->conns[i];
    forget(l, i);
    int back = *(const char *)f[0].iov_base == WIRE_CONN_BACK;
    f++, n--; /* the frames after the id, as they were without it */
    backend_t *be = l->be;
    uint64_t served = 0;
    if (n >= 2 && f[1].iov_len == sizeof(served))
        memcpy(&served, f[1].iov_base, sizeof(served));
    served = le64toh(served);
    be->board->map->completed += served;
    vc_board_begin(l->bs);
    l->bs->served += served;
    vc_board_end(l->bs);
    php_stats.conn_requests += served;
    lc->c->lent = 0;
    if (n >= 3 && f[2].iov_len == 1 && *(const uint8_t *)f[2].iov_base == 1) {
        /* Busy until its link ends; the broker reads its exit as one
         * after a whole answer (exit() or max_requests), not a crash. */
        l->leaving = l->finishing = 1;
        vc_board_begin(l->bs);
        l->bs->state = VC_BOARD_FINISHING;
        vc_board_end(l->bs);
    }
    if (back) {
        php_stats.conns_back++;
        /* Not even its first request was the worker's: lent again, it
         * would come back again. */
        lc->c->lend_bounced |= served == 0;
        lc->passed.len = n >= 4 ? f[3].iov_len : 0;
        lc->passed.bytes = vc_malloc(lc->passed.len ? lc->passed.len : 1);
        memcpy(lc->passed.bytes, n >= 4 ? f[3].iov_base : "", lc->passed.len);
        h2o_socket_t *sock = conn_take_back(be->f->ctx.loop, &lc->passed);
        lc->c->sock = sock;
        h2o_accept(&be->f->accept_plain, sock);
    } else {
        conn_pass_end(&lc->passed);
    }
    conn_state_release(lc->c);
    free(lc);
}

int lend_conn_rescue(lent_t *l)
{
    VC_CHECK_OBJ(l, LENT_MAGIC);
    int n = 0;
    for (int i = 0; i < l->nconns;) {
        conn_lend_t *lc = l->conns[i];
        if (!vc_lent_quiet_is(l->quiet, le32toh(lc->id))) {
            i++;
            continue;
        }
        forget(l, i);
        php_stats.conns_rescued++;
        php_stats.conn_requests += lc->logged;
        lc->c->lent = 0;
        h2o_socket_t *sock = conn_take_back(l->be->f->ctx.loop, &lc->passed);
        lc->c->sock = sock;
        h2o_accept(&l->be->f->accept_plain, sock);
        conn_state_release(lc->c);
        free(lc);
        n++;
    }
    return n;
}

void lend_conn_drop(lent_t *l)
{
    VC_CHECK_OBJ(l, LENT_MAGIC);
    while (l->nconns > 0) {
        conn_lend_t *lc = l->conns[l->nconns - 1];
        forget(l, l->nconns - 1);
        lc->c->lent = 0;
        conn_pass_end(&lc->passed);
        conn_state_release(lc->c);
        free(lc);
    }
    free(l->conns);
    l->conns = NULL;
    l->capconns = 0;
    vc_shared_page_unmap((void **)&l->quiet, sizeof(*l->quiet));
}

void lend_conn_log(lent_t *l, const struct iovec *f, int n)
{
    VC_CHECK_OBJ(l, LENT_MAGIC);
    int i = n >= 3 ? find(l, &f[1]) : -1;
    if (i < 0)
        return;
    conn_lend_t *lc = l->conns[i];
    /* From the worker: each record's lengths are checked against what
     * came (vc_lent_log_next) before it is read. */
    const char *at = f[2].iov_base, *end = at + f[2].iov_len, *texts;
    vc_lent_log_t rec;
    front_t *fr = l->be->f;
    while (vc_lent_log_next(&at, end, &rec, &texts)) {
        access_log_lent(fr, lc->s, lc->c, &rec, texts);
        /* The metrics the front keeps for each request, as if it had
         * read and answered it. The first came through the front, which
         * counted it received and passed to PHP, not its answer. */
        if (lc->logged++ > 0) {
            fr->stats.requests++;
            php_stats.requests++;
        }
        if (rec.status >= 500)
            php_stats.errors_5xx++;
    }
}
