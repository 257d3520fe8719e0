#include "vc_bus.h"
#include "vc_zmq.h"
#include "vc_test.h"

int main(void)
{
    void *ctx = zmq_ctx_new();
    /* The publisher comes up before the bus: events wait in its queue. */
    vc_bus_t *bus = vc_bus_new(ctx, "inproc://bus-in", "vc-test");
    CHECK(bus != NULL);
    CHECK(vc_bus_publish(bus, "test.early", VC__SEVERITY__INFO, "k", "v", NULL) == 0);
    void *pull = vc_socket(ctx, ZMQ_PULL, "inproc://bus-in", 1);
    CHECK(pull != NULL);
    CHECK(vc_bus_publish(bus, "test.later", VC__SEVERITY__WARNING, "a", "1", "b", NULL, NULL) == 0);

    vc_zparts_t fr = {0};
    const char *want[] = {"test.early", "test.later"};
    for (int i = 0; i < 2; i++) {
        CHECK(vc_wait_readable(pull, 2000) == 1);
        CHECK(vc_zparts_recv(pull, &fr, 0) == 2);
        CHECK(zmq_msg_size(&fr.f[0]) == strlen(want[i]) && !memcmp(zmq_msg_data(&fr.f[0]), want[i], strlen(want[i])));
        Vc__Envelope *e = vc__envelope__unpack(NULL, zmq_msg_size(&fr.f[1]), zmq_msg_data(&fr.f[1]));
        CHECK(e != NULL);
        if (e) {
            CHECK_STR(e->topic, want[i]);
            CHECK_STR(e->source, "vc-test");
            CHECK(e->pid == (uint32_t)getpid());
            CHECK(e->seq == (uint64_t)i + 1);
            CHECK(e->time_us > 0);
            if (i == 1) {
                CHECK(e->severity == VC__SEVERITY__WARNING);
                CHECK(e->n_fields == 2);
                CHECK_STR(e->fields[1]->key, "b");
                CHECK_STR(e->fields[1]->value, ""); /* NULL value: empty */
            }
            vc__envelope__free_unpacked(e, NULL);
        }
        vc_zparts_close(&fr);
    }
    CHECK_STR(vc_bus_severity_name(VC__SEVERITY__ERROR), "error");
    CHECK(vc_bus_publish(NULL, "x", VC__SEVERITY__INFO, NULL) < 0);
    vc_zparts_fini(&fr);
    vc_bus_destroy(&bus);
    CHECK(bus == NULL);
    zmq_close(pull);
    zmq_ctx_term(ctx);
    return vc_test_result("vc_bus");
}
