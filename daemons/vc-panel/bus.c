/*
 * The panel's subscriptions to the bus's events (bus-out): the
 * dashboard's figures (live.c) and the logs page's events (follow.c),
 * each a ZeroMQ SUB socket read on h2o's loop.
 */
#include "panel.h"
#include "vc_config.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

h2o_socket_t *panel_bus_watch(panel_t *p, void **sub, const char *const *topics, size_t ntopics, h2o_socket_cb cb,
                              void *data)
{
    char *ep = vc_config_endpoint(p->d.cfg, "bus-out");
    *sub = vc_socket(p->d.zctx, ZMQ_SUB, ep, 0);
    free(ep);
    if (*sub == NULL)
        return NULL;
    for (size_t i = 0; i < ntopics; i++)
        zmq_setsockopt(*sub, ZMQ_SUBSCRIBE, topics[i], strlen(topics[i]));
    int fd;
    size_t fdlen = sizeof(fd);
    zmq_getsockopt(*sub, ZMQ_FD, &fd, &fdlen);
    h2o_socket_t *s = h2o_evloop_socket_create(p->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    s->data = data;
    h2o_socket_read_start(s, cb);
    return s;
}

void panel_bus_unwatch(h2o_socket_t **s, void **sub)
{
    if (*s) {
        /* The descriptor is ZeroMQ's: h2o lets go of it without closing. */
        h2o_socket_export_t exp;
        h2o_socket_export(*s, &exp);
        *s = NULL;
    }
    zmq_close(*sub);
    *sub = NULL;
}
