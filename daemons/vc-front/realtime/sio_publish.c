/*
 * vc_socketio_*() from a request of the site (daemons/vc-php/socketio_api.c):
 * checked here, where the site is known, then sent to the bus for every
 * front and node (sio_rooms.h).
 */
#include "sio_session.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_ws.h"

#include <stdlib.h>
#include <string.h>

/* A room name as vc_socketio_*() checks it: the worker is the site's
 * own, but what it sends is read as outside input. */
static int rooms_ok(char **rooms, size_t n)
{
    if (n > 100)
        return 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(rooms[i]);
        if (len == 0 || len > 512 || vc_ws_utf8_feed(0, (const uint8_t *)rooms[i], len) != 0)
            return 0;
    }
    return 1;
}

void socketio_php_publish(rt_site_t *rs, const Vc__SioOp *op)
{
    const vc_site_t *s = rs->site->conf;
    const char *why = NULL;
    size_t plen = strlen(op->packet);
    if (s->socketio_path == NULL)
        why = "the site takes no Socket.IO clients (site.socketio)";
    else if (!sio_nsp_listed(s, op->nsp))
        why = "the site serves no such namespace (site.socketio.namespaces)";
    else if (!rooms_ok(op->rooms, op->n_rooms) || !rooms_ok(op->except, op->n_except) ||
             !rooms_ok(op->join, op->n_join) || !rooms_ok(op->leave, op->n_leave))
        why = "a room's name is not 1 to 512 bytes of UTF-8, or more than 100 are named";
    else if (plen && (op->packet[0] != '[' || op->packet[plen - 1] != ']' ||
                      vc_ws_utf8_feed(0, (const uint8_t *)op->packet, plen) != 0))
        why = "the event is not a JSON array of UTF-8";
    if (why) {
        vc_log(VC_LOG_NOTICE, "socketio", "vc_socketio_*() for namespace \"%.256s\" dropped: %s", op->nsp, why);
        return;
    }
    Vc__SioOp out = *op;
    char *packet = NULL;
    if (plen) { /* [EVENT, ...ARGS] written as the namespace's EVENT packet */
        size_t len;
        packet = sio_encode(SIO_EVENT, 0, op->nsp, 0, 0, op->packet, plen, &len);
        out.packet = packet;
    }
    if (sio_rooms_publish(s->name, &out) == 0)
        rt_stats.php_published++;
    else
        rt_stats.publish_dropped++;
    free(packet);
}
