#include "worker.h"
#include "vc_log.h"
#include "vc_msg.h"
#include "vc_util.h"
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct worker_conn {
    const vc_config_t *cfg;
    void *zctx, *sock;
    uint64_t served, limit; /* limit 0: no limit */
    vc_frames_t fr;         /* the current request's frames */
    Vc__FrontMessage *fm;
    zmq_msg_t front_id;
    uint64_t req_id;
    int done_sent; /* a "D" went out: no separate READY */
    int last;      /* the worker exits after this request: never "D" */
    char rid[32];
};

static void free_body(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* Sends [flag][front-id][BackMessage][body]. The body buffer moves into
 * ZeroMQ (no copy); the request gets a fresh one on its next write. */
static void on_emit(vc_request_t *r, int final)
{
    worker_conn_t *w = r->transport;
    char flag = !final ? WIRE_PART : r->ending && !w->last ? WIRE_DONE : WIRE_FINAL;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    Vc__StreamChunk chunk = VC__STREAM_CHUNK__INIT;
    Vc__ResponseHead fallback = VC__RESPONSE_HEAD__INIT;
    if (!r->head_sent) {
        Vc__ResponseHead *resp = r->resp;
        if (resp == NULL) {
            /* PHP never produced headers (it could not start). */
            fallback.id = w->req_id;
            fallback.status = 500;
            fallback.error = "PHP could not start the request";
            fallback.reason = "Internal Server Error";
            resp = &fallback;
        }
        resp->final = final;
        resp->worker_pid = (uint32_t)getpid();
        bm.kind_case = VC__BACK_MESSAGE__KIND_HEAD;
        bm.head = resp;
        r->head_sent = 1;
    } else {
        chunk.id = w->req_id;
        chunk.final = final;
        bm.kind_case = VC__BACK_MESSAGE__KIND_CHUNK;
        bm.chunk = &chunk;
    }
    zmq_msg_t fid;
    zmq_msg_init(&fid);
    zmq_msg_copy(&fid, &w->front_id);
    int more = r->out_len > 0 ? ZMQ_SNDMORE : 0;
    vc_send_bytes(w->sock, &flag, 1, ZMQ_SNDMORE);
    zmq_msg_send(&fid, w->sock, ZMQ_SNDMORE);
    zmq_msg_close(&fid);
    vc_send_proto(w->sock, &bm.base, more);
    if (r->out_len > 0) {
        zmq_msg_t body;
        /* ZeroMQ owns r->out from here and frees it with free_body. */
        zmq_msg_init_data(&body, r->out, r->out_len, free_body, NULL);
        zmq_msg_send(&body, w->sock, 0);
        r->out = NULL;
        r->out_len = r->out_cap = 0;
    }
    if (flag == WIRE_DONE)
        w->done_sent = 1;
    /* While busy, the only thing the broker sends is a cancel: the client
     * went away. */
    char c;
    while (!final && zmq_recv(w->sock, &c, 1, ZMQ_DONTWAIT) == 1)
        if (c == WIRE_CANCEL)
            r->aborted = 1;
}

static void send_ready(void *sock)
{
    char c = WIRE_READY;
    vc_send_bytes(sock, &c, 1, 0);
}

worker_conn_t *worker_connect(const vc_config_t *cfg)
{
    worker_conn_t *w = vc_calloc(1, sizeof(*w));
    w->cfg = cfg;
    /* Fork mode: one request per process. */
    w->limit = !strcmp(cfg->php.mode, "fork") ? 1 : (uint64_t)cfg->php.max_requests;
    w->zctx = zmq_ctx_new();
    zmq_ctx_set(w->zctx, ZMQ_IO_THREADS, 1);
    char *ep = vc_config_endpoint(cfg, "php-workers");
    w->sock = zmq_socket(w->zctx, ZMQ_DEALER);
    char id[24];
    int idlen = snprintf(id, sizeof(id), "w%d", (int)getpid());
    zmq_setsockopt(w->sock, ZMQ_ROUTING_ID, id, (size_t)idlen);
    int linger = 1000; /* the last answer must leave before we exit */
    zmq_setsockopt(w->sock, ZMQ_LINGER, &linger, sizeof(linger));
    if (zmq_connect(w->sock, ep) != 0) {
        vc_log(VC_LOG_ERR, "worker", "zmq_connect() failed while joining the pool \"%s\": %s", ep, zmq_strerror(errno));
        _exit(1);
    }
    free(ep);
    send_ready(w->sock);
    return w;
}

int worker_next(worker_conn_t *w, vc_request_t *r)
{
    for (;;) {
        int n = vc_frames_recv(w->sock, &w->fr, 0);
        if (n < 0) {
            if (n == -EINTR)
                continue;
            return -1;
        }
        if (n == 1 && zmq_msg_size(&w->fr.f[0]) == 1) {
            /* A cancel for a request already finished: nothing to do. */
            vc_frames_close(&w->fr);
            continue;
        }
        w->fm = n >= 2 ? vc__front_message__unpack(NULL, zmq_msg_size(&w->fr.f[1]), zmq_msg_data(&w->fr.f[1])) : NULL;
        if (w->fm == NULL || w->fm->kind_case != VC__FRONT_MESSAGE__KIND_REQUEST) {
            vc_log(VC_LOG_WARN, "worker", "dropped a malformed request of %d frames", n);
            if (w->fm)
                vc__front_message__free_unpacked(w->fm, NULL);
            w->fm = NULL;
            vc_frames_close(&w->fr);
            send_ready(w->sock);
            continue;
        }
        break;
    }
    w->req_id = w->fm->request->id;
    w->done_sent = 0;
    w->last = w->limit > 0 && w->served + 1 >= w->limit;
    zmq_msg_init(&w->front_id);
    zmq_msg_copy(&w->front_id, &w->fr.f[0]);
    memset(r, 0, sizeof(*r));
    r->head = w->fm->request;
    r->body = w->fr.f + 2;
    r->nbody = w->fr.n - 2;
    r->emit = on_emit;
    r->transport = w;
    snprintf(w->rid, sizeof(w->rid), "r%llx", (unsigned long long)w->req_id);
    vc_log_set_context(w->rid);
    return 0;
}

int worker_done(worker_conn_t *w, vc_request_t *r)
{
    if (!r->final_sent) {
        r->ending = 1;
        on_emit(r, 1);
        r->final_sent = 1;
    }
    vc_log_set_context(NULL);
    free(r->out);
    r->out = NULL;
    if (r->resp)
        vc__response_head__free_unpacked(r->resp, NULL);
    r->resp = NULL;
    zmq_msg_close(&w->front_id);
    vc__front_message__free_unpacked(w->fm, NULL);
    w->fm = NULL;
    vc_frames_close(&w->fr);
    w->served++;
    if (w->last) {
        vc_log(VC_LOG_DEBUG, "worker", "exiting after %llu requests", (unsigned long long)w->served);
        return 0;
    }
    if (!w->done_sent)
        send_ready(w->sock);
    return 1;
}

void worker_set_last(worker_conn_t *w)
{
    w->last = 1;
}

void worker_close(worker_conn_t **pw)
{
    worker_conn_t *w = *pw;
    if (w == NULL)
        return;
    vc_frames_fini(&w->fr);
    zmq_close(w->sock);
    zmq_ctx_term(w->zctx);
    free(w);
    *pw = NULL;
}

void worker_main(const vc_config_t *cfg)
{
    worker_conn_t *w = worker_connect(cfg);
    vc_request_t r;
    while (worker_next(w, &r) == 0) {
        vc_sapi_run(&r);
        if (!worker_done(w, &r))
            break;
    }
    worker_close(&w);
    _exit(0);
}
