#include "worker.h"
#include "sapi.h"
#include "vc_log.h"
#include "vc_msg.h"
#include "vc_util.h"
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct transport {
    void *sock;
    zmq_msg_t front_id;
    uint64_t req_id;
    int done_sent; /* a "D" went out: no separate READY */
    int last;      /* this worker exits after the request: never "D" */
} transport_t;

static void free_body(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* Sends [flag][front-id][BackMessage][body]. The body buffer moves into
 * ZeroMQ (no copy); the request gets a fresh one on its next write. */
static void on_emit(vc_request_t *r, int final)
{
    transport_t *t = r->transport;
    char flag = !final ? WIRE_PART : r->ending && !t->last ? WIRE_DONE : WIRE_FINAL;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    Vc__StreamChunk chunk = VC__STREAM_CHUNK__INIT;
    Vc__ResponseHead fallback = VC__RESPONSE_HEAD__INIT;
    if (!r->head_sent) {
        Vc__ResponseHead *resp = r->resp;
        if (resp == NULL) {
            /* PHP never produced headers (it could not start). */
            fallback.id = t->req_id;
            fallback.status = 500;
            fallback.error = "PHP could not start the request";
            resp = &fallback;
        }
        resp->final = final;
        resp->worker_pid = (uint32_t)getpid();
        bm.kind_case = VC__BACK_MESSAGE__KIND_HEAD;
        bm.head = resp;
        r->head_sent = 1;
    } else {
        chunk.id = t->req_id;
        chunk.final = final;
        bm.kind_case = VC__BACK_MESSAGE__KIND_CHUNK;
        bm.chunk = &chunk;
    }
    zmq_msg_t fid;
    zmq_msg_init(&fid);
    zmq_msg_copy(&fid, &t->front_id);
    int more = r->out_len > 0 ? ZMQ_SNDMORE : 0;
    vc_send_bytes(t->sock, &flag, 1, ZMQ_SNDMORE);
    zmq_msg_send(&fid, t->sock, ZMQ_SNDMORE);
    zmq_msg_close(&fid);
    vc_send_proto(t->sock, &bm.base, more);
    if (r->out_len > 0) {
        zmq_msg_t body;
        /* ZeroMQ owns r->out from here and frees it with free_body. */
        zmq_msg_init_data(&body, r->out, r->out_len, free_body, NULL);
        zmq_msg_send(&body, t->sock, 0);
        r->out = NULL;
        r->out_len = r->out_cap = 0;
    }
    if (flag == WIRE_DONE)
        t->done_sent = 1;
}

static void send_ready(void *sock)
{
    char c = WIRE_READY;
    vc_send_bytes(sock, &c, 1, 0);
}

void worker_main(const vc_config_t *cfg)
{
    void *zctx = zmq_ctx_new();
    zmq_ctx_set(zctx, ZMQ_IO_THREADS, 1);
    char *ep = vc_config_endpoint(cfg, "php-workers");
    void *sock = zmq_socket(zctx, ZMQ_DEALER);
    char id[24];
    int idlen = snprintf(id, sizeof(id), "w%d", (int)getpid());
    zmq_setsockopt(sock, ZMQ_ROUTING_ID, id, (size_t)idlen);
    int zero = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof(zero));
    if (zmq_connect(sock, ep) != 0) {
        vc_log(VC_LOG_ERR, "worker", "zmq_connect() failed while joining the pool \"%s\": %s", ep, zmq_strerror(errno));
        _exit(1);
    }
    free(ep);
    send_ready(sock);

    uint64_t served = 0;
    vc_frames_t fr = {0};
    for (;;) {
        int n = vc_frames_recv(sock, &fr, 0);
        if (n < 0) {
            if (n == -EINTR)
                continue;
            break;
        }
        if (n == 1 && zmq_msg_size(&fr.f[0]) == 1) {
            /* A cancel for a request already finished: nothing to do. */
            vc_frames_close(&fr);
            continue;
        }
        Vc__FrontMessage *fm =
            n >= 2 ? vc__front_message__unpack(NULL, zmq_msg_size(&fr.f[1]), zmq_msg_data(&fr.f[1])) : NULL;
        if (fm == NULL || fm->kind_case != VC__FRONT_MESSAGE__KIND_REQUEST) {
            vc_log(VC_LOG_WARN, "worker", "dropped a malformed request of %d frames", n);
            if (fm)
                vc__front_message__free_unpacked(fm, NULL);
            vc_frames_close(&fr);
            send_ready(sock);
            continue;
        }
        transport_t t = {.sock = sock, .req_id = fm->request->id};
        t.last = cfg->php.max_requests > 0 && served + 1 >= (uint64_t)cfg->php.max_requests;
        zmq_msg_init(&t.front_id);
        zmq_msg_copy(&t.front_id, &fr.f[0]);
        vc_request_t r = {0};
        r.head = fm->request;
        r.body = fr.f + 2;
        r.nbody = fr.n - 2;
        r.emit = on_emit;
        r.transport = &t;
        char rid[32];
        snprintf(rid, sizeof(rid), "r%llx", (unsigned long long)fm->request->id);
        vc_log_set_context(rid);
        vc_sapi_run(&r);
        if (!r.final_sent) {
            r.ending = 1;
            on_emit(&r, 1);
        }
        vc_log_set_context(NULL);
        free(r.out);
        if (r.resp)
            vc__response_head__free_unpacked(r.resp, NULL);
        zmq_msg_close(&t.front_id);
        vc__front_message__free_unpacked(fm, NULL);
        vc_frames_close(&fr);
        served++;
        if (cfg->php.max_requests > 0 && served >= (uint64_t)cfg->php.max_requests) {
            vc_log(VC_LOG_INFO, "worker", "recycling after %llu requests", (unsigned long long)served);
            break;
        }
        if (!t.done_sent)
            send_ready(sock);
    }
    vc_frames_fini(&fr);
    zmq_close(sock);
    zmq_ctx_term(zctx);
    _exit(0);
}
