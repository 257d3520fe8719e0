#include "access_log.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* h2o's own default (lib/handler/access_log.c), named so that the lines
 * of lent connections can be made in it too. */
#define COMBINED "%h %l %u %t \"%r\" %s %b \"%{Referer}i\" \"%{User-agent}i\""

static h2o_logconf_t *lent_logconf;
static int lent_fd = -1;

int access_log_open(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    vc_mkdirs(f->d.cfg->log_dir, 0750);
    char *log_path = vc_asprintf("%s/access.log", f->d.cfg->log_dir);
    /* Combined, or one JSON object a line: time, site (host), status, bytes,
     * total and backend time, and how the cache took it (its Cache-Status;
     * "-" when it did not). */
    static const char json_fmt[] =
        "{\"time\":\"%{%Y-%m-%dT%H:%M:%S%z}t\",\"remote\":\"%h\",\"host\":\"%V\",\"method\":\"%m\","
        "\"uri\":\"%U%q\",\"protocol\":\"%H\",\"status\":%s,\"bytes\":%b,"
        "\"total_ms\":%{duration}x,\"backend_ms\":%{process-time}x,\"referer\":\"%{Referer}i\","
        "\"user_agent\":\"%{User-Agent}i\",\"cache\":\"%{Cache-Status}o\"}";
    /* Opened here without following a symlink (one planted in the log
     * directory would have us append client-controlled lines to any file
     * we may write), then handed to h2o by its descriptor's name. */
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (log_fd < 0) {
        vc_log(VC_LOG_CRIT, "main", "open() failed while opening the access log \"%s\": %s%s", log_path,
               strerror(errno), errno == ELOOP ? " (it is a symlink: remove it)" : "");
        free(log_path);
        return -1;
    }
    char log_by_fd[32];
    snprintf(log_by_fd, sizeof(log_by_fd), "/proc/self/fd/%d", log_fd);
    const char *fmt = f->settings->access_log_json ? json_fmt : COMBINED;
    int escape = f->settings->access_log_json ? H2O_LOGCONF_ESCAPE_JSON : H2O_LOGCONF_ESCAPE_APACHE;
    h2o_access_log_filehandle_t *log = h2o_access_log_open_handle(log_by_fd, fmt, escape);
    /* The same format again, for the lines of lent connections, written
     * through log_fd, kept (h2o's handle is not ours to write to). */
    char err[256];
    lent_logconf = h2o_logconf_compile(fmt, escape, err);
    if (lent_logconf == NULL) /* the same format h2o just took: not expected */
        vc_log(VC_LOG_ERR, "access_log", "lent connections' requests will not be logged: %s", err);
    lent_fd = log_fd;
    free(log_path);
    f->access_log = log;
    return 0;
}

/* The connection a lent request came on, as h2o's logger asks it. */
typedef struct lent_conn_view {
    h2o_conn_t super;
    const conn_state_t *c;
} lent_conn_view_t;

static socklen_t peer_of(h2o_conn_t *conn, struct sockaddr *sa)
{
    const conn_state_t *c = ((lent_conn_view_t *)conn)->c;
    socklen_t len = c->peer.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    memcpy(sa, &c->peer, len);
    return len;
}

static socklen_t local_of(h2o_conn_t *conn, struct sockaddr *sa)
{
    const conn_state_t *c = ((lent_conn_view_t *)conn)->c;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (c->has_local) {
        len = c->local.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        memcpy(sa, &c->local, len);
        return len;
    }
    if (getsockname(c->fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    memcpy(sa, &ss, len);
    return len;
}

static struct timeval tv_of(uint64_t us)
{
    return (struct timeval){.tv_sec = (time_t)(us / 1000000u), .tv_usec = (suseconds_t)(us % 1000000u)};
}

static h2o_iovec_t text(const char **at, uint16_t len)
{
    if (len == VC_LENT_LOG_ABSENT)
        return h2o_iovec_init(NULL, 0);
    h2o_iovec_t t = h2o_iovec_init(*at, len);
    *at += len;
    return t;
}

void access_log_lent(front_t *f, const site_rt_t *s, const conn_state_t *c, const vc_lent_log_t *rec, const char *texts)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    if (lent_logconf == NULL || lent_fd < 0)
        return;
    static const h2o_conn_callbacks_t callbacks = {.get_sockname = local_of, .get_peername = peer_of};
    lent_conn_view_t conn = {.super = {.ctx = &f->ctx, .callbacks = &callbacks}, .c = c};
    h2o_req_t req;
    memset(&req, 0, sizeof(req));
    h2o_mem_init_pool(&req.pool);
    req.conn = &conn.super;
    req.hostconf = s->hostconf;
    const char *at = texts;
    req.input.method = req.method = text(&at, rec->method_len);
    req.input.path = req.path = text(&at, rec->target_len);
    const char *q = req.input.path.base ? memchr(req.input.path.base, '?', req.input.path.len) : NULL;
    req.input.query_at = q ? (size_t)(q - req.input.path.base) : SIZE_MAX;
    req.input.authority = req.authority = text(&at, rec->authority_len);
    h2o_iovec_t referer = text(&at, rec->referer_len), agent = text(&at, rec->agent_len);
    if (referer.base)
        h2o_add_header(&req.pool, &req.headers, H2O_TOKEN_REFERER, NULL, referer.base, referer.len);
    if (agent.base)
        h2o_add_header(&req.pool, &req.headers, H2O_TOKEN_USER_AGENT, NULL, agent.base, agent.len);
    req.version = 0x100 | (rec->minor & 0xff);
    req.res.status = rec->status;
    req.bytes_sent = (size_t)rec->bytes;
    h2o_timestamp_string_t when;
    h2o_time2str_log(when.log, (time_t)(rec->begin_us / 1000000u));
    req.processed_at.at = tv_of(rec->begin_us);
    req.processed_at.str = &when;
    req.timestamps.request_begin_at = tv_of(rec->begin_us);
    req.timestamps.response_start_at = tv_of(rec->start_us);
    req.timestamps.response_end_at = tv_of(rec->end_us);
    char buf[4096];
    size_t len = sizeof(buf);
    char *line = h2o_log_request(lent_logconf, &req, &len, buf);
    if (write(lent_fd, line, len) < 0 && errno != EAGAIN)
        vc_log(VC_LOG_WARN, "access_log", "a line of a lent connection was not written: %s", strerror(errno));
    if (line != buf)
        free(line);
    h2o_mem_clear_pool(&req.pool);
}
