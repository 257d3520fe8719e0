#include "vc_bus.h"
#include "vc_log.h"
#include "vc_zmq.h"
#include "vc_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct vc_bus {
    void *sock;
    char *source;
    uint64_t seq;
};

vc_bus_t *vc_bus_new(void *zctx, const char *endpoint, const char *source)
{
    /* Events queue here while the bus restarts, up to this many. */
    void *s = vc_socket_hwm(zctx, ZMQ_PUSH, endpoint, 0, 10000, 0);
    if (s == NULL) {
        vc_log(VC_LOG_WARN, "bus", "zmq_connect() failed while joining the bus \"%s\": %s", endpoint,
               zmq_strerror(errno));
        return NULL;
    }
    /* A daemon's last words ("vc-php.stopped") get a moment to leave. */
    int linger = 500;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    vc_bus_t *b = vc_calloc(1, sizeof(*b));
    b->sock = s;
    b->source = vc_strdup(source);
    return b;
}

void vc_bus_destroy(vc_bus_t **pb)
{
    vc_bus_t *b = *pb;
    if (b == NULL)
        return;
    zmq_close(b->sock);
    free(b->source);
    free(b);
    *pb = NULL;
}

int vc_bus_publishv(vc_bus_t *b, const char *topic, Vc__Severity sev, const char *const *kv)
{
    if (b == NULL)
        return -VC_ERR_NOTRUNNING;
    Vc__Envelope env = VC__ENVELOPE__INIT;
    env.topic = (char *)topic;
    env.source = b->source;
    env.pid = (uint32_t)getpid();
    env.time_us = vc_now_us();
    env.severity = sev;
    env.seq = ++b->seq;
    Vc__Field fields[VC_BUS_FIELDS_MAX], *ptrs[VC_BUS_FIELDS_MAX];
    for (size_t i = 0; kv[i] != NULL && env.n_fields < VC_ARRAY_SIZE(fields); i += 2) {
        vc__field__init(&fields[env.n_fields]);
        fields[env.n_fields].key = (char *)kv[i];
        fields[env.n_fields].value = (char *)(kv[i + 1] ? kv[i + 1] : "");
        ptrs[env.n_fields] = &fields[env.n_fields];
        env.n_fields++;
    }
    env.fields = ptrs;
    int r = vc_send_bytes(b->sock, topic, strlen(topic), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (r == 0)
        r = vc_send_proto(b->sock, &env.base, ZMQ_DONTWAIT);
    return r;
}

int vc_bus_publish(vc_bus_t *b, const char *topic, Vc__Severity sev, ...)
{
    const char *kv[2 * VC_BUS_FIELDS_MAX + 1];
    size_t n = 0;
    va_list ap;
    va_start(ap, sev);
    for (const char *k; (k = va_arg(ap, const char *)) != NULL;) {
        const char *v = va_arg(ap, const char *);
        if (n < 2 * VC_BUS_FIELDS_MAX) {
            kv[n++] = k;
            kv[n++] = v;
        }
    }
    va_end(ap);
    kv[n] = NULL;
    return vc_bus_publishv(b, topic, sev, kv);
}

const char *vc_bus_severity_name(Vc__Severity s)
{
    static const char *const names[] = {"debug", "info", "notice", "warning", "error", "critical"};
    return (unsigned)s < VC_ARRAY_SIZE(names) ? names[s] : "unknown";
}
