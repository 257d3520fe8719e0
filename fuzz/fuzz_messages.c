/* libFuzzer: every protobuf message our daemons accept from a peer
 * (requests, answers, commands, events, configuration versions, cache offers,
 * room messages), and the
 * listener hand-over string. The first byte picks which. */
#include "cache.pb-c.h"
#include "config.pb-c.h"
#include "control.pb-c.h"
#include "event.pb-c.h"
#include "realtime.pb-c.h"
#include "request.pb-c.h"
#include "vc_config.h"
#include "vc_listen.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    vc_log_set_level(0);
    const unsigned char *p = data + 1;
    size_t n = size - 1;
    switch (data[0] % 8) {
    case 0: {
        Vc__FrontMessage *m = vc__front_message__unpack(NULL, n, p);
        if (m && m->kind_case == VC__FRONT_MESSAGE__KIND_REQUEST) {
            /* What the broker reads of it. */
            volatile size_t l = strlen(m->request->method) + m->request->request_uri.len;
            (void)l;
        }
        if (m)
            vc__front_message__free_unpacked(m, NULL);
        break;
    }
    case 1: {
        Vc__BackMessage *m = vc__back_message__unpack(NULL, n, p);
        if (m)
            vc__back_message__free_unpacked(m, NULL);
        break;
    }
    case 2: {
        Vc__Command *m = vc__command__unpack(NULL, n, p);
        if (m)
            vc__command__free_unpacked(m, NULL);
        break;
    }
    case 7: {
        /* A room message, from a publisher to vc-bus and on to the fronts. */
        Vc__RoomMessage *m = vc__room_message__unpack(NULL, n, p);
        if (m) {
            volatile size_t l = strlen(m->room) + strlen(m->event) + m->data.len;
            (void)l;
            vc__room_message__free_unpacked(m, NULL);
        }
        break;
    }
    case 6: {
        /* An offer from a front to vc-cache. */
        Vc__CacheStore *m = vc__cache_store__unpack(NULL, n, p);
        if (m) {
            volatile size_t l = m->key.len + m->body.len + m->n_headers + m->n_tags;
            (void)l;
            vc__cache_store__free_unpacked(m, NULL);
        }
        break;
    }
    case 3: {
        Vc__Envelope *m = vc__envelope__unpack(NULL, n, p);
        if (m)
            vc__envelope__free_unpacked(m, NULL);
        break;
    }
    case 4: {
        /* A configuration version from the store, parsed as daemons do. */
        Vc__ConfigVersion *v = vc__config_version__unpack(NULL, n, p);
        if (v) {
            char err[256];
            vc_config_t *cfg = vc_config_parse(v, "/tmp/vc-fuzz", err, sizeof(err));
            vc_config_destroy(&cfg);
            vc__config_version__free_unpacked(v, NULL);
        }
        break;
    }
    case 5: {
        char *s = vc_strndup((const char *)p, n);
        vc_listener_t *ls = NULL;
        size_t nl = 0;
        vc_listen_import(s, &ls, &nl);
        vc_listen_free(&ls, &nl, 0);
        free(s);
        break;
    }
    }
    return 0;
}
