#include "vc_http1.h"

#include <h2o.h>
#include <stdio.h>
#include <string.h>

enum { STAGE_HEAD, STAGE_CHECKS, STAGE_BODY, STAGE_DONE };

/* Where each of the request's texts is kept in off[] (vc_http1.h). */
enum {
    OFF_METHOD = 0,
    OFF_PATH = 2,
    OFF_AUTHORITY = 4,
    OFF_UPGRADE = 6,
    OFF_HEADERS = 8,
    OFF_FRAMING = OFF_HEADERS + 4 * VC_HTTP1_MAX_HEADERS,
    OFF_EXPECT = OFF_FRAMING + 2,
};
#define NO_TEXT SIZE_MAX

void vc_http1_init(vc_http1_t *c, size_t max_body)
{
    memset(c, 0, sizeof(*c));
    c->max_body = max_body;
}

static void keep(vc_http1_t *c, int at, const char *buf, const char *p, size_t n)
{
    c->off[at] = p ? (size_t)(p - buf) : NO_TEXT;
    c->off[at + 1] = n;
}

static vc_http1_text_t text_at(const vc_http1_t *c, int at, const char *buf)
{
    if (c->off[at] == NO_TEXT)
        return (vc_http1_text_t){NULL, 0};
    return (vc_http1_text_t){buf + c->off[at], c->off[at + 1]};
}

/* The request's texts, where buf is now. */
static void rebase(vc_http1_t *c, const char *buf)
{
    vc_http1_request_t *r = &c->r;
    r->method = text_at(c, OFF_METHOD, buf);
    r->path = text_at(c, OFF_PATH, buf);
    r->authority = text_at(c, OFF_AUTHORITY, buf);
    r->upgrade = text_at(c, OFF_UPGRADE, buf);
    for (size_t i = 0; i < r->nheaders; i++) {
        r->headers[i].name = text_at(c, OFF_HEADERS + 4 * (int)i, buf);
        r->headers[i].value = text_at(c, OFF_HEADERS + 4 * (int)i + 2, buf);
    }
}

static vc_http1_step_t refuse(vc_http1_t *c, int status, const char *reason, const char *why)
{
    c->status = status;
    c->reason = reason;
    c->why = why;
    c->r.persistent = 0;
    c->stage = STAGE_DONE;
    return c->last = VC_HTTP1_REFUSE;
}

static int crlf_only(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

/* h2o's init_headers() and fixup_request(): the headers h2o keeps apart
 * and whether the connection persists. Returns the index of the header
 * that frames the body, or -1. */
static ssize_t take_head(vc_http1_t *c, const char *buf, struct phr_header *hs, size_t n, int minor)
{
    vc_http1_request_t *r = &c->r;
    ssize_t entity = -1;
    h2o_iovec_t connection = {NULL, 0}, upgrade = {NULL, 0};
    const char *user_agent = NULL;
    size_t user_agent_len = 0;
    c->expect = 0;
    r->minor_version = minor;
    r->nheaders = 0;
    keep(c, OFF_AUTHORITY, buf, NULL, 0);
    for (size_t i = 0; i < n; i++) {
        h2o_strtolower((char *)hs[i].name, hs[i].name_len);
        const h2o_token_t *t = h2o_lookup_token(hs[i].name, hs[i].name_len);
        if (t && t->is_init_header_special) {
            if (t == H2O_TOKEN_HOST)
                keep(c, OFF_AUTHORITY, buf, hs[i].value, hs[i].value_len); /* the last Host: one, after framing */
            else if (t == H2O_TOKEN_CONTENT_LENGTH) {
                if (entity == -1) /* the first Content-Length; there is one, after framing */
                    entity = (ssize_t)i;
            } else if (t == H2O_TOKEN_TRANSFER_ENCODING)
                entity = (ssize_t)i;
            else if (t == H2O_TOKEN_EXPECT) {
                c->expect = 1;
                keep(c, OFF_EXPECT, buf, hs[i].value, hs[i].value_len); /* the last Expect line */
            } else if (t == H2O_TOKEN_UPGRADE)
                upgrade = h2o_iovec_init(hs[i].value, hs[i].value_len);
            continue;
        }
        if (t == H2O_TOKEN_CONNECTION) /* the last Connection line is the one h2o reads */
            connection = h2o_iovec_init(hs[i].value, hs[i].value_len);
        if (t == H2O_TOKEN_USER_AGENT && user_agent == NULL) {
            user_agent = hs[i].value;
            user_agent_len = hs[i].value_len;
        }
        keep(c, OFF_HEADERS + 4 * (int)r->nheaders, buf, hs[i].name, hs[i].name_len);
        keep(c, OFF_HEADERS + 4 * (int)r->nheaders + 2, buf, hs[i].value, hs[i].value_len);
        r->nheaders++;
    }
    /* HTTP/1.1 persists unless a Connection line says otherwise; any
     * Connection line without "keep-alive" (not only "close") ends it. */
    r->persistent = connection.base ? h2o_contains_token(connection.base, connection.len, H2O_STRLIT("keep-alive"), ',')
                                    : minor >= 1;
    if (connection.base && upgrade.base &&
        h2o_contains_token(connection.base, connection.len, H2O_STRLIT("upgrade"), ','))
        keep(c, OFF_UPGRADE, buf, upgrade.base, upgrade.len);
    else
        keep(c, OFF_UPGRADE, buf, NULL, 0);
    if (c->closing)
        r->persistent = 0;
    r->msie = user_agent && h2o_strstr(user_agent, user_agent_len, H2O_STRLIT("; MSIE ")) != SIZE_MAX;
    return entity;
}

static vc_http1_step_t read_head(vc_http1_t *c, char *buf, size_t len)
{
    size_t inreqlen = len < VC_HTTP1_MAX_HEAD ? len : VC_HTTP1_MAX_HEAD;
    const char *method, *path;
    size_t method_len, path_len, n = VC_HTTP1_MAX_HEADERS;
    int minor;
    struct phr_header hs[VC_HTTP1_MAX_HEADERS];
    memcpy(c->as_sent, buf, inreqlen);
    c->as_sent_len = inreqlen;
    int got = phr_parse_request(buf, inreqlen, &method, &method_len, &path, &path_len, &minor, hs, &n, c->prevlen);
    c->prevlen = inreqlen;
    if (got == -2) {
        if (inreqlen == VC_HTTP1_MAX_HEAD)
            return refuse(c, 400, NULL, "head too long");
        return VC_HTTP1_MORE;
    }
    if (got == -1) {
        if (len >= 12 && memcmp(buf, "PRI * HTTP/2", 12) == 0)
            return VC_HTTP1_HAND_BACK;
        if (inreqlen <= 4 && crlf_only(buf, inreqlen)) {
            c->stage = STAGE_DONE;
            return c->last = VC_HTTP1_CLOSE;
        }
        return refuse(c, 400, NULL, "bad head");
    }
    c->reqsize = (size_t)got;
    keep(c, OFF_METHOD, buf, method, method_len);
    keep(c, OFF_PATH, buf, path, path_len);
    c->is_head = method_len == 4 && memcmp(method, "HEAD", 4) == 0;
    ssize_t entity = take_head(c, buf, hs, n, minor);
    c->has_body = entity >= 0;
    c->chunked = 0;
    if (c->has_body) { /* checked in the next step, once the caller keeps the request */
        keep(c, OFF_FRAMING, buf, hs[entity].value, hs[entity].value_len);
        c->chunked = hs[entity].name_len == 17; /* "transfer-encoding": no other length matches, as h2o reasons */
    }
    c->stage = STAGE_CHECKS;
    return VC_HTTP1_HEAD;
}

/* What h2o checks once a head is read, in its order: for a request with
 * a body, the expectation, then the body's framing and size. */
static vc_http1_step_t read_body(vc_http1_t *c, char *buf, size_t *len);

static vc_http1_step_t checks(vc_http1_t *c, char *buf, size_t *len)
{
    if (!c->has_body) { /* h2o reads Expect only for a request with a body */
        c->r.body = (vc_http1_text_t){buf + c->reqsize, 0};
        c->stage = STAGE_DONE;
        return c->last = VC_HTTP1_REQUEST;
    }
    if (c->expect) {
        vc_http1_text_t e = text_at(c, OFF_EXPECT, buf);
        if (!h2o_lcstris(e.base, e.len, H2O_STRLIT("100-continue")))
            return refuse(c, 417, "Expectation Failed", "unknown expectation");
    }
    vc_http1_text_t v = text_at(c, OFF_FRAMING, buf);
    if (c->chunked) {
        if (!h2o_lcstris(v.base, v.len, H2O_STRLIT("chunked")))
            return refuse(c, 400, "Invalid Request", "unknown transfer-encoding");
        memset(&c->dec, 0, sizeof(c->dec));
        c->dec.consume_trailer = 1;
        c->chunk_at = c->reqsize;
    } else {
        size_t n = h2o_strtosize(v.base, v.len);
        if (n == SIZE_MAX)
            return refuse(c, 400, "Invalid Request", "broken content-length header");
        if (n > c->max_body)
            return refuse(c, 413, "Request Entity Too Large", "request entity is too large");
        c->content_length = n;
    }
    c->stage = STAGE_BODY;
    if (c->expect) {
        c->expect = 0;
        return VC_HTTP1_CONTINUE;
    }
    return read_body(c, buf, len); /* what came with the head */
}

static vc_http1_step_t read_body(vc_http1_t *c, char *buf, size_t *len)
{
    size_t head = c->reqsize;
    if (!c->chunked) {
        if (*len < head + c->content_length)
            return VC_HTTP1_MORE;
        c->r.body = (vc_http1_text_t){buf + head, c->content_length};
        c->reqsize = head + c->content_length;
        c->stage = STAGE_DONE;
        return c->last = VC_HTTP1_REQUEST;
    }
    size_t fresh = *len - c->chunk_at;
    if (fresh == 0)
        return VC_HTTP1_MORE;
    ssize_t left = phr_decode_chunked(&c->dec, buf + c->chunk_at, &fresh);
    *len = c->chunk_at + fresh; /* what is decoded; the framing is gone */
    c->chunk_at = *len;
    /* h2o refuses a decoded body of max_body bytes or more, even whole
     * (a Content-Length of exactly max_body is let through). */
    if (left != -1 && *len - head >= c->max_body)
        return refuse(c, 413, "Request Entity Too Large", "request entity is too large");
    if (left == -2)
        return VC_HTTP1_MORE;
    if (left < 0)
        return refuse(c, 400, "Invalid Request", "broken chunked-encoding");
    c->r.body = (vc_http1_text_t){buf + head, *len - head};
    c->reqsize = *len;
    *len += (size_t)left; /* the bytes after the body, moved up behind it */
    c->stage = STAGE_DONE;
    return c->last = VC_HTTP1_REQUEST;
}

vc_http1_step_t vc_http1_read(vc_http1_t *c, char *buf, size_t *len)
{
    vc_http1_step_t s;
    switch (c->stage) {
    case STAGE_HEAD: s = read_head(c, buf, *len); break;
    case STAGE_CHECKS: s = checks(c, buf, len); break;
    case STAGE_BODY: s = read_body(c, buf, len); break;
    default: s = c->last; break; /* the same again, until vc_http1_next() */
    }
    if (s == VC_HTTP1_HEAD || s == VC_HTTP1_REQUEST || s == VC_HTTP1_CONTINUE)
        rebase(c, buf);
    return s;
}

void vc_http1_unread(const vc_http1_t *c, char *buf)
{
    memcpy(buf, c->as_sent, c->as_sent_len);
}

int vc_http1_may_compress(const vc_http1_request_t *r)
{
    for (size_t i = 0; i < r->nheaders; i++) {
        if (!h2o_memis(r->headers[i].name.base, r->headers[i].name.len, H2O_STRLIT("accept-encoding")))
            continue;
        h2o_iovec_t iter = h2o_iovec_init(r->headers[i].value.base, r->headers[i].value.len);
        const char *token;
        size_t len = 0;
        while ((token = h2o_next_token(&iter, ',', &len, NULL)) != NULL)
            if (h2o_lcstris(token, len, H2O_STRLIT("gzip")) || h2o_lcstris(token, len, H2O_STRLIT("br")))
                return 1;
    }
    return 0;
}

int vc_http1_between(const vc_http1_t *c)
{
    return c->stage == STAGE_HEAD;
}

void vc_http1_next(vc_http1_t *c, char *buf, size_t *len)
{
    size_t used = c->reqsize < *len ? c->reqsize : *len;
    memmove(buf, buf + used, *len - used);
    *len -= used;
    /* The reading's state alone: the rest (kilobytes of offsets, the
     * request, the head as sent) is written before it is read. */
    c->stage = STAGE_HEAD;
    c->prevlen = c->reqsize = c->chunk_at = c->content_length = c->as_sent_len = 0;
    c->has_body = c->chunked = c->expect = c->is_head = c->status = 0;
    c->reason = c->why = NULL;
}

size_t vc_http1_refusal(const vc_http1_t *c, const char *date, char *dst, size_t cap)
{
    if (c->reason == NULL) { /* h2o's send_bad_request(): a fixed answer, no date */
        static const char bad[] = "HTTP/1.1 400 Bad Request\r\n"
                                  "Content-Type: text/plain; charset=utf-8\r\n"
                                  "Connection: close\r\n"
                                  "Content-Length: 11\r\n"
                                  "\r\n"
                                  "Bad Request";
        if (cap < sizeof(bad) - 1)
            return 0;
        memcpy(dst, bad, sizeof(bad) - 1);
        return sizeof(bad) - 1;
    }
    /* h2o_send_error_generic() on h2o's fallback path: no Server, and no
     * body for HEAD. */
    static const vc_http1_field_t type = {{H2O_STRLIT("content-type")}, {H2O_STRLIT("text/plain; charset=utf-8")}};
    size_t body = strlen(c->why);
    if (cap < vc_http1_head_size(&type, 1, c->reason) + body)
        return 0;
    size_t n = vc_http1_head(dst, c->status, c->reason, date, 0, body, &type, 1, 0);
    if (!c->is_head) {
        memcpy(dst + n, c->why, body);
        n += body;
    }
    return n;
}

size_t vc_http1_head_size(const vc_http1_field_t *fields, size_t n, const char *reason)
{
    size_t len = sizeof("HTTP/1.1 999 \r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nConnection: keep-alive\r\n"
                        "Content-Length: 18446744073709551615\r\n\r\n") +
                 strlen(reason);
    for (size_t i = 0; i < n; i++)
        len += fields[i].name.len + fields[i].value.len + 4;
    if (len < SIZE_MAX - sizeof("cache-control: private"))
        len += sizeof("cache-control: private"); /* a Vary may become longer */
    return len;
}

size_t vc_http1_head(char *dst, int status, const char *reason, const char *date, int persistent, size_t content_length,
                     const vc_http1_field_t *fields, size_t n, int msie)
{
    char *p = dst;
    const char *connection = persistent ? "keep-alive" : "close";
    if (content_length != SIZE_MAX)
        p += sprintf(p, "HTTP/1.1 %d %s\r\nDate: %s\r\nConnection: %s\r\nContent-Length: %zu\r\n", status, reason, date,
                     connection, content_length);
    else
        p += sprintf(p, "HTTP/1.1 %d %s\r\nDate: %s\r\nConnection: %s\r\n", status, reason, date, connection);
    for (size_t i = 0; i < n; i++) {
        vc_http1_text_t name = fields[i].name, value = fields[i].value;
        /* Old Internet Explorers cache nothing with a Vary; h2o sends them
         * Cache-Control: private in its place (lib/http1.c, #72). */
        if (msie && h2o_lcstris(name.base, name.len, H2O_STRLIT("vary"))) {
            name = (vc_http1_text_t){"cache-control", 13};
            value = (vc_http1_text_t){"private", 7};
        }
        memcpy(p, name.base, name.len);
        p += name.len;
        *p++ = ':';
        *p++ = ' ';
        memcpy(p, value.base, value.len);
        p += value.len;
        *p++ = '\r';
        *p++ = '\n';
    }
    *p++ = '\r';
    *p++ = '\n';
    return (size_t)(p - dst);
}
