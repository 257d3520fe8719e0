/*
 * Server-sent event streams: the dashboard's samples (live.c) and the
 * logs and events a page follows (follow.c). Each stream has at most one
 * write in flight in h2o; what comes meanwhile waits, bounded, so a page
 * that does not read costs the panel at most its cap.
 */
#include "sse.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void send_now(sse_t *s, char *text)
{
    s->sending = text;
    h2o_iovec_t buf = h2o_iovec_init(text, strlen(text));
    h2o_send(s->req, &buf, 1, H2O_SEND_STATE_IN_PROGRESS);
}

static void on_proceed(h2o_generator_t *g, h2o_req_t *req)
{
    sse_t *s = (sse_t *)g;
    free(s->sending);
    s->sending = NULL;
    if (s->waiting) {
        char *t = s->waiting;
        s->waiting = NULL;
        s->waiting_len = 0;
        send_now(s, t);
    }
}

static void on_stop(h2o_generator_t *g, h2o_req_t *req)
{
    sse_t *s = (sse_t *)g;
    if (s->closed)
        s->closed(s);
    free(s->sending);
    free(s->waiting);
    s->sending = s->waiting = NULL;
}

sse_t *sse_open(preq_t *r, size_t size, size_t cap, void (*closed)(sse_t *s))
{
    h2o_req_t *req = r->req;
    sse_t *s = h2o_mem_alloc_pool(&req->pool, size);
    memset(s, 0, size);
    s->super.proceed = on_proceed;
    s->super.stop = on_stop;
    s->req = req;
    s->cap = cap;
    s->closed = closed;
    req->res.status = 200;
    req->res.reason = "OK";
    http_header(r, "content-type", "text/event-stream");
    http_header(r, "cache-control", "no-store");
    h2o_start_response(req, &s->super);
    return s;
}

void sse_send(sse_t *s, const char *text)
{
    size_t len = strlen(text);
    if (s->cap == 0) {
        free(s->waiting);
        s->waiting = NULL;
    } else if (s->waiting_len + len > s->cap) {
        s->skipped++;
        return;
    }
    char *t = s->skipped ? vc_asprintf("event: skipped\ndata: %zu\n\n%s", s->skipped, text) : vc_strdup(text);
    s->skipped = 0;
    if (s->sending == NULL) {
        send_now(s, t);
        return;
    }
    if (s->waiting == NULL) {
        s->waiting = t;
        s->waiting_len = strlen(t);
        return;
    }
    size_t tl = strlen(t);
    s->waiting = vc_realloc(s->waiting, s->waiting_len + tl + 1);
    memcpy(s->waiting + s->waiting_len, t, tl + 1);
    s->waiting_len += tl;
    free(t);
}
