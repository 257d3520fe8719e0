/* sse: server-sent event streams for the panel's pages (sse.c). */
#ifndef VC_PANEL_SSE_H
#define VC_PANEL_SSE_H

#include "panel.h"

typedef struct sse sse_t;
struct sse {
    h2o_generator_t super; /* first: h2o's callbacks get the stream */
    h2o_req_t *req;
    char *sending; /* what h2o holds until it asks for more (malloc'd) */
    char *waiting; /* what is queued behind it, or NULL */
    size_t waiting_len;
    size_t cap;     /* 0: only the newest text waits; else up to cap bytes of them */
    size_t skipped; /* texts dropped over cap since the last one sent */
    void (*closed)(sse_t *s);
};

/* Answers r with an event stream; the stream is a struct of size bytes
 * (an sse_t first) in the request's pool, zeroed. closed is called when
 * the client goes (the stream is freed with the request after it). */
sse_t *sse_open(preq_t *r, size_t size, size_t cap, void (*closed)(sse_t *s));
/* Sends text (copied): at once, or once what is in flight has gone. With
 * no cap, it replaces what was waiting (a slow reader skips samples and
 * never piles them up); with one, it queues up to cap bytes, and what
 * does not fit is counted and said as an "event: skipped" before the next
 * text that does. */
void sse_send(sse_t *s, const char *text);

#endif
