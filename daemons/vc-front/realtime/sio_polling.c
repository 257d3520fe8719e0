#include "sio_polling.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

struct sio_poll {
    char *buf;
    size_t len, cap, max;
    struct held *held; /* the GET waiting, or NULL */
};

/* In the GET's pool: if the client goes before it is answered, h2o
 * disposes of it and the session lets go of it. */
typedef struct held {
    sio_poll_t *poll;
    h2o_req_t *req;
} held_t;

static void on_held_dispose(void *arg)
{
    held_t *h = arg;
    if (h->poll)
        h->poll->held = NULL;
}

sio_poll_t *sio_poll_new(size_t max_queue)
{
    sio_poll_t *p = vc_calloc(1, sizeof(*p));
    p->max = max_queue;
    return p;
}

static void answer(h2o_req_t *req, const char *body, size_t len)
{
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("text/plain; charset=UTF-8"));
    /* Copied into the request's pool: the queue is reused at once. */
    h2o_iovec_t copy = h2o_strdup(&req->pool, body, len);
    h2o_send_inline(req, copy.base, copy.len);
}

/* The held GET takes everything queued. */
static void flush(sio_poll_t *p)
{
    if (p->held == NULL || p->len == 0)
        return;
    held_t *h = p->held;
    p->held = NULL;
    h->poll = NULL;
    answer(h->req, p->buf, p->len);
    p->len = 0;
}

void sio_poll_free(sio_poll_t *p)
{
    if (p == NULL)
        return;
    flush(p);
    if (p->held)
        p->held->poll = NULL;
    free(p->buf);
    free(p);
}

static int append(sio_poll_t *p, const char *head, size_t hlen, const char *data, size_t len)
{
    size_t need = p->len + (p->len ? 1 : 0) + hlen + len;
    if (need > p->max)
        return -1;
    VC_GROW(p->buf, p->cap, need, 4096);
    if (p->len)
        p->buf[p->len++] = '\x1e'; /* the record separator */
    memcpy(p->buf + p->len, head, hlen);
    memcpy(p->buf + p->len + hlen, data, len);
    p->len = need;
    flush(p);
    return 0;
}

int sio_poll_push(sio_poll_t *p, const char *packet, size_t len)
{
    return append(p, "", 0, packet, len);
}

int sio_poll_push_binary(sio_poll_t *p, const void *data, size_t len)
{
    size_t cap = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
    char *b64 = vc_malloc(cap);
    sodium_bin2base64(b64, cap, data, len, sodium_base64_VARIANT_ORIGINAL);
    int rc = append(p, "b", 1, b64, strlen(b64));
    free(b64);
    return rc;
}

int sio_poll_get(sio_poll_t *p, h2o_req_t *req)
{
    if (p->held)
        return -1;
    held_t *h = h2o_mem_alloc_shared(&req->pool, sizeof(*h), on_held_dispose);
    h->poll = p;
    h->req = req;
    p->held = h;
    flush(p);
    return 0;
}

int sio_poll_holding(const sio_poll_t *p)
{
    return p->held != NULL;
}

size_t sio_poll_queued(const sio_poll_t *p)
{
    return p->len;
}

char *sio_poll_take(sio_poll_t *p, size_t *len)
{
    if (p->len == 0)
        return NULL;
    char *out = vc_strndup(p->buf, p->len);
    *len = p->len;
    p->len = 0;
    return out;
}
