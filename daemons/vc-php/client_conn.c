#include "client_conn.h"
#include "vc_forwarded.h"
#include "vc_http1.h"
#include "vc_lent_log.h"
#include "vc_log.h"
#include "vc_util.h"
#include "request.pb-c.h"

#include <errno.h>
#include <h2o/time_.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* A connection with no request for this long goes back to the front,
 * which keeps idle connections (and closes them at its own timeout)
 * without holding a worker. */
#define IDLE_MS 1000
/* A client that sends part of a request, or reads nothing of an answer,
 * for this long is closed: the front's own I/O timeout for a client. */
#define STALL_MS 30000
/* The access log's records go to the front in batches: at most this
 * many, or this old, so that a busy connection wakes the front a few
 * times a second, not once a request. */
#define LOG_BATCH 64
#define LOG_MS 200

struct client_conn {
    int fd;
    Vc__FrontMessage *lease; /* request 1's, as the front routed it */
    int flags;               /* CLIENT_* */
    char *buf;               /* read and not served; the current request first */
    size_t len, cap, max_body;
    vc_http1_t http;
    uint64_t served;
    uint64_t quiet_ms;      /* since when nothing came (or the last answer ended) */
    int back;               /* hand back before the next request (a slow reader) */
    int gone;               /* a write failed: the client left */
    int closed;             /* this answer ends the connection */
    vc_lent_quiet_t *quiet; /* the front's word for it (vc_lent_quiet.h), if any */
    uint32_t quiet_id;
    /* The request being run: its head (the lease's, with this request's
     * own fields), the texts those need as C strings, its body. */
    Vc__RequestHead head;
    Vc__Header *hdrs, **hp;
    size_t caph;
    char *texts;
    vc_frame_t body;
    /* Its answer: */
    int chunked;
    int persistent;
    uint64_t began_us, started_us, bytes; /* for its access-log record */
    int status;
    /* Records for the front's access log, not sent yet (vc_lent_log.h). */
    char *log;
    size_t log_len, log_cap, log_n;
    uint64_t log_first_ms; /* when the oldest was made */
};

static uint64_t wall_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

client_conn_t *client_conn_open(int fd, void *lease, int flags, const void *bytes, size_t len, size_t max_body)
{
    client_conn_t *c = vc_calloc(1, sizeof(*c));
    c->fd = fd;
    c->lease = lease;
    c->flags = flags;
    c->max_body = max_body;
    c->cap = len + 16384;
    c->buf = vc_malloc(c->cap);
    memcpy(c->buf, bytes, len);
    c->len = len;
    c->quiet_ms = vc_mono_ms();
    vc_http1_init(&c->http, max_body);
    return c;
}

void client_conn_tell_quiet(client_conn_t *c, vc_lent_quiet_t *q, uint32_t id)
{
    c->quiet = q;
    c->quiet_id = id;
}

int client_conn_fd(const client_conn_t *c)
{
    return c->fd;
}

void client_conn_free(client_conn_t **pc)
{
    client_conn_t *c = *pc;
    if (c == NULL)
        return;
    close(c->fd);
    vc__front_message__free_unpacked(c->lease, NULL);
    free(c->buf);
    free(c->hdrs);
    free(c->hp);
    free(c->texts);
    free(c->log);
    free(c);
    *pc = NULL;
}

const char *client_conn_unread(client_conn_t *c, size_t *len)
{
    *len = c->len;
    return c->buf;
}

uint64_t client_conn_served(const client_conn_t *c)
{
    return c->served;
}

/* h2o's Date, made as h2o makes it (not strftime(), whose day and month
 * names follow the locale a script may set), once a second. */
static const char *http_date(void)
{
    static char date[H2O_TIMESTR_RFC1123_LEN + 1];
    static time_t made = -1;
    time_t now = time(NULL);
    if (now != made) {
        struct tm tm;
        gmtime_r(&now, &tm);
        h2o_time2str_rfc1123(date, &tm);
        made = now;
    }
    return date;
}

/* Writes all of v, waiting (bounded) while the client's window is full;
 * a client that reads slowly gets its connection back in the front after
 * this answer, where a slow reader costs no worker. */
static void write_all(client_conn_t *c, struct iovec *v, int n)
{
    while (n > 0 && !c->gone) {
        /* Not writev(): a worker runs with SIGPIPE's default (its scripts'
         * commands expect it), and a client that left must not kill it. */
        struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            c->back = 1;
            struct pollfd p = {.fd = c->fd, .events = POLLOUT};
            if (poll(&p, 1, STALL_MS) <= 0)
                c->gone = 1;
            continue;
        }
        if (w < 0) {
            c->gone = 1;
            break;
        }
        while (n > 0 && (size_t)w >= v->iov_len) {
            w -= (ssize_t)v->iov_len;
            v++, n--;
        }
        if (n > 0) {
            v->iov_base = (char *)v->iov_base + w;
            v->iov_len -= (size_t)w;
        }
    }
}

static int same(vc_http1_text_t t, const void *s, size_t len)
{
    return t.base != NULL && t.len == len && memcmp(t.base, s, len) == 0;
}

static size_t path_only(const char *p, size_t len)
{
    const char *q = memchr(p, '?', len);
    return q ? (size_t)(q - p) : len;
}

/* The lease covers this head: the same Host and path, no Upgrade, and
 * nothing the front would compress. */
static int leased(const client_conn_t *c)
{
    const Vc__RequestHead *l = c->lease->request;
    const vc_http1_request_t *r = &c->http.r;
    if ((c->flags & CLIENT_COMPRESS) && vc_http1_may_compress(r))
        return 0;
    size_t lp = path_only((const char *)l->request_uri.data, l->request_uri.len);
    return r->upgrade.base == NULL && same(r->authority, l->authority, strlen(l->authority)) && r->path.len >= lp &&
           path_only(r->path.base, r->path.len) == lp && memcmp(r->path.base, l->request_uri.data, lp) == 0;
}

static char *put(char **at, const char *s, size_t len)
{
    char *d = *at;
    memcpy(d, s, len);
    d[len] = '\0';
    *at += len + 1;
    return d;
}

/* The request read into c->http, as the front would have sent it. */
static void make_head(client_conn_t *c, vc_request_t *r)
{
    const vc_http1_request_t *q = &c->http.r;
    Vc__RequestHead *h = &c->head;
    *h = *c->lease->request;
    size_t need = q->method.len + 1 + q->authority.len + 1;
    for (size_t i = 0; i < q->nheaders; i++)
        need += q->headers[i].name.len + 1;
    free(c->texts);
    c->texts = vc_malloc(need);
    char *at = c->texts;
    if (c->caph < q->nheaders + 1) {
        c->caph = q->nheaders + 1;
        c->hdrs = vc_realloc(c->hdrs, c->caph * sizeof(*c->hdrs));
        c->hp = vc_realloc(c->hp, c->caph * sizeof(*c->hp));
    }
    h->method = put(&at, q->method.base, q->method.len);
    h->authority = put(&at, q->authority.base, q->authority.len);
    h->request_uri.data = (uint8_t *)q->path.base;
    h->request_uri.len = q->path.len;
    const char *qm = memchr(q->path.base, '?', q->path.len);
    h->query.data = (uint8_t *)(qm ? qm + 1 : NULL);
    h->query.len = qm ? q->path.len - (size_t)(qm + 1 - q->path.base) : 0;
    h->protocol = q->minor_version >= 1 ? "HTTP/1.1" : "HTTP/1.0";
    /* Host first, as nginx passes it (php_backend.c); then the rest in
     * the client's spelling, which parsing lowercased in place. */
    size_t n = 0;
    vc__header__init(&c->hdrs[n]);
    c->hdrs[n].name = "Host";
    c->hdrs[n].value.data = (uint8_t *)q->authority.base;
    c->hdrs[n].value.len = q->authority.len;
    c->hp[n] = &c->hdrs[n];
    n++;
    for (size_t i = 0; i < q->nheaders; i++) {
        vc_http1_text_t name = q->headers[i].name;
        if (!(c->flags & CLIENT_TRUSTED) && vc_forwarded_kind(name.base, name.len) != VC_FORWARDED_NONE)
            continue;
        vc__header__init(&c->hdrs[n]);
        c->hdrs[n].name = put(&at, c->http.as_sent + (name.base - c->buf), name.len);
        c->hdrs[n].value.data = (uint8_t *)q->headers[i].value.base;
        c->hdrs[n].value.len = q->headers[i].value.len;
        c->hp[n] = &c->hdrs[n];
        n++;
    }
    h->headers = c->hp;
    h->n_headers = n;
    h->content_length = q->body.len;
    h->has_body = c->http.has_body;
    c->body = (vc_frame_t){.data = (char *)q->body.base, .len = q->body.len};
    memset(r, 0, sizeof(*r));
    r->head = h;
    r->body = &c->body;
    r->nbody = q->body.len > 0;
    r->emit = client_conn_emit;
    r->transport = c;
    c->closed = c->chunked = 0;
    c->persistent = q->persistent;
    c->began_us = wall_us();
    c->started_us = c->bytes = 0;
    c->status = 0;
}

/* Reads what the client sent, without waiting: 1 if bytes came, 2 if
 * none were there, 0 once it has closed or failed. */
static int fill(client_conn_t *c)
{
    if (c->len == c->cap) {
        c->cap *= 2;
        c->buf = vc_realloc(c->buf, c->cap);
    }
    /* Not quiet from before the read: dead between the two, the worker
     * has its connection closed, never taken back with a byte lost. */
    vc_lent_quiet_set(c->quiet, c->quiet_id, 0);
    for (;;) {
        ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 2;
        if (got <= 0)
            return 0;
        c->len += (size_t)got;
        c->quiet_ms = vc_mono_ms();
        return 1;
    }
}

static void write_text(client_conn_t *c, const char *s, size_t len)
{
    struct iovec v = {(void *)s, len};
    write_all(c, &v, 1);
}

client_conn_step_t client_conn_step(client_conn_t *c, int back, vc_request_t *r, int *wait_ms)
{
    for (;;) {
        int between = vc_http1_between(&c->http); /* nothing parsed: the bytes are as sent */
        if ((back || c->back) && between)
            return CLIENT_HAND_BACK;
        vc_http1_step_t s = c->len > 0 || !between ? vc_http1_read(&c->http, c->buf, &c->len) : VC_HTTP1_MORE;
        switch (s) {
        case VC_HTTP1_HEAD:
            if (!leased(c)) {
                vc_http1_unread(&c->http, c->buf);
                vc_http1_init(&c->http, c->max_body);
                return CLIENT_HAND_BACK;
            }
            continue;
        case VC_HTTP1_HAND_BACK: /* HTTP/2's preface */ vc_http1_init(&c->http, c->max_body); return CLIENT_HAND_BACK;
        case VC_HTTP1_CONTINUE: write_text(c, VC_HTTP1_CONTINUE_ANSWER, sizeof(VC_HTTP1_CONTINUE_ANSWER) - 1); continue;
        case VC_HTTP1_REQUEST: make_head(c, r); return CLIENT_REQUEST;
        case VC_HTTP1_REFUSE: {
            char answer[512];
            size_t n = vc_http1_refusal(&c->http, http_date(), answer, sizeof(answer));
            write_text(c, answer, n);
            shutdown(c->fd, SHUT_WR);
            return CLIENT_CLOSED;
        }
        case VC_HTTP1_CLOSE: return CLIENT_CLOSED;
        case VC_HTTP1_MORE: break;
        }
        int got = fill(c);
        if (got == 0)
            return CLIENT_CLOSED;
        if (got == 1)
            continue;
        /* Nothing to read. Idle, the connection goes back after IDLE_MS;
         * a request begun is read to its end, or closed after STALL_MS.
         * Records wait no longer than LOG_MS between requests. */
        uint64_t now = vc_mono_ms(), quiet = now - c->quiet_ms;
        uint64_t limit = between && c->len == 0 ? IDLE_MS : STALL_MS;
        /* Every answer written whole (client_conn_done() came after the
         * last), nothing read past it: should the worker die now, the
         * front may serve the connection on. */
        if (between && c->len == 0)
            vc_lent_quiet_set(c->quiet, c->quiet_id, 1);
        if (quiet >= limit)
            return between ? CLIENT_HAND_BACK : CLIENT_CLOSED;
        uint64_t wait = limit - quiet;
        if (c->log_n > 0 && between) {
            uint64_t age = now - c->log_first_ms;
            if (age >= LOG_MS)
                return CLIENT_LOG;
            if (LOG_MS - age < wait)
                wait = LOG_MS - age;
        }
        *wait_ms = (int)wait;
        return CLIENT_WAIT;
    }
}

/* What the front does not pass on of PHP's headers (backend.c): framing,
 * which it writes itself, and Date, which h2o always adds. */
static int dropped(const char *n)
{
    return !strcasecmp(n, "content-length") || !strcasecmp(n, "transfer-encoding") || !strcasecmp(n, "connection") ||
           !strcasecmp(n, "keep-alive") || !strcasecmp(n, "date");
}

/* The answer's head as the front gives it (backend.c's on_head, then
 * h2o's chunked and Server filters, in that order): into a new buffer,
 * its length in *len. */
static char *answer_head(client_conn_t *c, const Vc__ResponseHead *resp, int final, size_t body, size_t *len)
{
    const vc_http1_request_t *q = &c->http.r;
    int status = (int)resp->status;
    int bodiless = status == 204 || status == 304;
    int is_head = q->method.len == 4 && memcmp(q->method.base, "HEAD", 4) == 0;
    vc_http1_field_t *fs = vc_malloc((resp->n_headers + 2) * sizeof(*fs));
    size_t n = 0;
    int has_server = 0;
    for (size_t i = 0; i < resp->n_headers; i++) {
        const char *name = resp->headers[i]->name;
        if (dropped(name) || (status == 304 && !strcasecmp(name, "content-type")))
            continue;
        has_server |= !strcasecmp(name, "server");
        fs[n++] = (vc_http1_field_t){{name, strlen(name)},
                                     {(const char *)resp->headers[i]->value.data, resp->headers[i]->value.len}};
    }
    size_t length = final && !bodiless ? body : SIZE_MAX;
    if (!has_server) /* the front's filter, set up before h2o's chunked encoder */
        fs[n++] = (vc_http1_field_t){{"Server", 6}, {"Velocity", 8}};
    if (!final && !bodiless && !is_head) {
        /* h2o chunks a streamed 200 to HTTP/1.1; any other streamed
         * answer ends with the connection. */
        if (status == 200 && q->minor_version >= 1) {
            fs[n++] = (vc_http1_field_t){{"transfer-encoding", 17}, {"chunked", 7}};
            c->chunked = 1;
        } else {
            c->persistent = 0;
        }
    }
    const char *reason = resp->reason ? resp->reason : "";
    char *head = vc_malloc(vc_http1_head_size(fs, n, reason));
    *len = vc_http1_head(head, status, reason, http_date(), c->persistent, length, fs, n, q->msie);
    free(fs);
    return head;
}

void client_conn_emit(vc_request_t *r, int final)
{
    client_conn_t *c = r->transport;
    struct iovec v[4];
    int nv = 0;
    char *head = NULL, size[32];
    size_t hlen = 0;
    const vc_http1_request_t *q = &c->http.r;
    Vc__ResponseHead fallback = VC__RESPONSE_HEAD__INIT;
    const Vc__ResponseHead *resp = r->resp;
    if (!r->head_sent) {
        if (resp == NULL) { /* PHP never produced headers (it could not start) */
            fallback.status = 500;
            fallback.reason = "Internal Server Error";
            resp = &fallback;
        }
        head = answer_head(c, resp, final, r->out_len, &hlen);
        v[nv++] = (struct iovec){head, hlen};
        r->head_sent = 1;
        c->closed = !c->persistent;
        c->started_us = wall_us();
        c->status = (int)resp->status;
    }
    int status = r->resp ? (int)r->resp->status : 500;
    int no_body = status == 204 || status == 304 || (q->method.len == 4 && memcmp(q->method.base, "HEAD", 4) == 0);
    if (no_body) {
        /* nothing of PHP's output is sent */
    } else if (c->chunked && r->out_len > 0) {
        v[nv++] = (struct iovec){size, (size_t)snprintf(size, sizeof(size), "%zx\r\n", r->out_len)};
        v[nv++] = (struct iovec){r->out, r->out_len};
        v[nv++] = (struct iovec){"\r\n0\r\n\r\n", final ? 7 : 2};
    } else if (c->chunked && final) {
        v[nv++] = (struct iovec){"0\r\n\r\n", 5};
    } else if (r->out_len > 0) {
        v[nv++] = (struct iovec){r->out, r->out_len};
    }
    if (!no_body)
        c->bytes += r->out_len;
    write_all(c, v, nv);
    if (c->gone)
        r->aborted = 1;
    r->out_len = 0;
    free(head);
}

static void log_put(client_conn_t *c, const void *p, size_t n)
{
    if (c->log_len + n > c->log_cap) {
        c->log_cap = (c->log_len + n) * 2;
        c->log = vc_realloc(c->log, c->log_cap);
    }
    memcpy(c->log + c->log_len, p, n);
    c->log_len += n;
}

static uint16_t text_len(vc_http1_text_t t)
{
    return t.base == NULL ? VC_LENT_LOG_ABSENT : (uint16_t)(t.len < 0xfff0 ? t.len : 0xfff0);
}

/* The request just answered, as the front's access log needs it. */
static void log_request(client_conn_t *c)
{
    const vc_http1_request_t *q = &c->http.r;
    vc_http1_text_t referer = {NULL, 0}, agent = {NULL, 0};
    for (size_t i = 0; i < q->nheaders; i++) { /* h2o's log shows the first of each */
        if (referer.base == NULL && same(q->headers[i].name, "referer", 7))
            referer = q->headers[i].value;
        if (agent.base == NULL && same(q->headers[i].name, "user-agent", 10))
            agent = q->headers[i].value;
    }
    vc_lent_log_t rec = {.begin_us = c->began_us,
                         .start_us = c->started_us ? c->started_us : c->began_us,
                         .end_us = wall_us(),
                         .bytes = c->bytes,
                         .status = (uint16_t)c->status,
                         .minor = (uint16_t)q->minor_version,
                         .method_len = text_len(q->method),
                         .target_len = text_len(q->path),
                         .authority_len = text_len(q->authority),
                         .referer_len = text_len(referer),
                         .agent_len = text_len(agent)};
    if (c->log_n++ == 0)
        c->log_first_ms = vc_mono_ms();
    log_put(c, &rec, sizeof(rec));
    log_put(c, q->method.base, rec.method_len);
    log_put(c, q->path.base, rec.target_len);
    if (q->authority.base)
        log_put(c, q->authority.base, rec.authority_len);
    if (referer.base)
        log_put(c, referer.base, rec.referer_len);
    if (agent.base)
        log_put(c, agent.base, rec.agent_len);
}

const char *client_conn_log(client_conn_t *c, int all, size_t *len)
{
    if (c->log_n == 0 || (!all && c->log_n < LOG_BATCH && vc_mono_ms() - c->log_first_ms < LOG_MS))
        return NULL;
    *len = c->log_len;
    c->log_len = c->log_n = 0;
    return c->log;
}

int client_conn_done(client_conn_t *c, vc_request_t *r)
{
    (void)r;
    log_request(c);
    c->served++;
    c->quiet_ms = vc_mono_ms();
    vc_http1_next(&c->http, c->buf, &c->len);
    if (c->gone || c->closed) {
        shutdown(c->fd, SHUT_WR);
        return 0;
    }
    /* Its answer is written whole; quiet unless the client sent more
     * (so a worker killed while it runs another connection's request
     * leaves this one to the front). */
    if (c->len == 0)
        vc_lent_quiet_set(c->quiet, c->quiet_id, 1);
    return 1;
}
