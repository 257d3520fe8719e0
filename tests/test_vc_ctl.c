#include "vc_ctl.h"
#include "vc_test.h"
#include "vc_util.h"

#include <pthread.h>
#include <zmq.h>

static volatile int stop;

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    int *calls = arg;
    (*calls)++;
    if (!strcmp(cmd->verb, "status")) {
        vc_reply_field(reply, "health", "ok");
        Vc__Record *r = vc_reply_record(reply);
        vc_record_field(r, "pid", "%d", 42);
    } else if (!strcmp(cmd->verb, "echo")) {
        vc_reply_ok(reply, "%s", cmd->n_args ? cmd->args[0] : "");
    }
}

static void *serve(void *arg)
{
    vc_ctl_t *ctl = arg;
    while (!stop) {
        zmq_pollitem_t it = {vc_ctl_socket(ctl), 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, 20) > 0)
            vc_ctl_handle(ctl);
    }
    return NULL;
}

int main(void)
{
    char *dir = vc_test_tmpdir();
    char *ep = vc_asprintf("ipc://%s/ctl.sock", dir);
    void *ctx = zmq_ctx_new();
    Vc__Reply *r = NULL;

    /* Nobody there: says so at once. */
    CHECK(vc_ctl_call(ctx, ep, "ping", NULL, 0, 500, &r) == -VC_ERR_NOTRUNNING);

    int calls = 0;
    vc_ctl_t *ctl = vc_ctl_new(ctx, ep, "vc-test", on_command, &calls);
    CHECK(ctl != NULL && vc_ctl_publish(ctl) == 0);
    CHECK(ctl != NULL);
    pthread_t t;
    pthread_create(&t, NULL, serve, ctl);

    CHECK(vc_ctl_call(ctx, ep, "ping", NULL, 0, 2000, &r) == 0);
    CHECK(r && r->ok);
    CHECK_STR(vc_reply_get(r, "daemon"), "vc-test");
    CHECK(vc_reply_get(r, "pid") && atoi(vc_reply_get(r, "pid")) == getpid());
    CHECK_STR(vc_reply_get(r, "version"), VC_VERSION);
    vc__reply__free_unpacked(r, NULL);

    CHECK(vc_ctl_call(ctx, ep, "status", NULL, 0, 2000, &r) == 0);
    CHECK_STR(vc_reply_get(r, "health"), "ok");
    CHECK(r->n_records == 1 && !strcmp(vc_record_get(r->records[0], "pid"), "42"));
    vc__reply__free_unpacked(r, NULL);

    const char *args[] = {"hello"};
    CHECK(vc_ctl_call(ctx, ep, "echo", args, 1, 2000, &r) == 0);
    CHECK(r->ok);
    CHECK_STR(r->message, "hello");
    vc__reply__free_unpacked(r, NULL);

    CHECK(vc_ctl_call(ctx, ep, "frobnicate", NULL, 0, 2000, &r) == 0);
    CHECK(!r->ok);
    CHECK_STR(r->message, "unknown command \"frobnicate\"");
    vc__reply__free_unpacked(r, NULL);

    /* A malformed command gets an answer, not a crash. */
    void *raw = zmq_socket(ctx, ZMQ_REQ);
    zmq_connect(raw, ep);
    zmq_send(raw, "\xff\xff\xff", 3, 0);
    char buf[256];
    int zero = 0, timeout = 2000;
    zmq_setsockopt(raw, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(raw, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
    int n = zmq_recv(raw, buf, sizeof(buf), 0);
    CHECK(n > 0);
    Vc__Reply *bad = n > 0 ? vc__reply__unpack(NULL, (size_t)n, (uint8_t *)buf) : NULL;
    CHECK(bad && !bad->ok && !strcmp(bad->message, "malformed command"));
    if (bad)
        vc__reply__free_unpacked(bad, NULL);
    zmq_close(raw);
    CHECK(calls == 4);

    stop = 1;
    pthread_join(t, NULL);
    vc_ctl_destroy(&ctl);
    /* The server is gone: the call times out instead of hanging. The ipc
     * file may linger, so it is not "not running". */
    int rc = vc_ctl_call(ctx, ep, "ping", NULL, 0, 200, &r);
    CHECK(rc == -VC_ERR_TIMEOUT || rc == -VC_ERR_NOTRUNNING);
    zmq_ctx_term(ctx);
    free(ep);
    vc_test_rmtree(dir);
    free(dir);
    return vc_test_result("vc_ctl");
}
