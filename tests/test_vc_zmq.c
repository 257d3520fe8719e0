#include <errno.h>

#include "control.pb-c.h"
#include "vc_zmq.h"
#include "vc_test.h"

int main(void)
{
    void *ctx = zmq_ctx_new();
    void *a = vc_socket(ctx, ZMQ_PAIR, "inproc://msg", 1);
    void *b = vc_socket(ctx, ZMQ_PAIR, "inproc://msg", 0);
    CHECK(a && b);

    /* A protobuf frame and a raw body frame travel as one message. */
    Vc__Command cmd = VC__COMMAND__INIT;
    cmd.verb = "status";
    CHECK(vc_send_proto(a, &cmd.base, ZMQ_SNDMORE) == 0);
    char body[100000];
    memset(body, 'b', sizeof(body));
    CHECK(vc_send_bytes(a, body, sizeof(body), 0) == 0);

    vc_zparts_t fr = {0};
    CHECK(vc_wait_readable(b, 1000) == 1);
    CHECK(vc_zparts_recv(b, &fr, 0) == 2);
    Vc__Command *got = vc__command__unpack(NULL, zmq_msg_size(&fr.f[0]), zmq_msg_data(&fr.f[0]));
    CHECK(got && !strcmp(got->verb, "status"));
    vc__command__free_unpacked(got, NULL);
    CHECK(zmq_msg_size(&fr.f[1]) == sizeof(body));

    /* Forwarding the frames moves them: the receiver gets the same bytes. */
    CHECK(vc_zparts_send(b, &fr, 0, 0) == 0);
    vc_zparts_close(&fr);
    CHECK(vc_zparts_recv(a, &fr, 0) == 2);
    CHECK(zmq_msg_size(&fr.f[1]) == sizeof(body) && !memcmp(zmq_msg_data(&fr.f[1]), body, sizeof(body)));
    vc_zparts_close(&fr);

    /* Nothing waiting: EAGAIN, and the frames stay empty. */
    CHECK(vc_zparts_recv(a, &fr, ZMQ_DONTWAIT) == -EAGAIN);
    CHECK(fr.n == 0);
    CHECK(vc_wait_readable(a, 10) == 0);

    /* Too many frames: refused whole, and the socket is usable after. */
    for (int i = 0; i < VC_MSG_MAX_FRAMES + 5; i++)
        vc_send_bytes(a, "x", 1, ZMQ_SNDMORE);
    vc_send_bytes(a, "end", 3, 0);
    vc_send_bytes(a, "next", 4, 0);
    CHECK(vc_zparts_recv(b, &fr, 0) == -EMSGSIZE);
    CHECK(vc_zparts_recv(b, &fr, 0) == 1);
    CHECK(zmq_msg_size(&fr.f[0]) == 4);
    vc_zparts_fini(&fr);

    /* A bad endpoint: NULL with errno, no crash. */
    CHECK(vc_socket(ctx, ZMQ_PAIR, "nonsense://x", 1) == NULL);
    zmq_close(a);
    zmq_close(b);
    zmq_ctx_term(ctx);
    return vc_test_result("vc_zmq");
}
