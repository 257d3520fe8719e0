/*
 * Room messages across nodes (mesh.h, docs/cluster.md). vc-mesh listens to
 * its node's vc-bus like a front does (rooms-out), and sends each message
 * published on this node to the others on the core subject
 * "vc.room.NODE", stamped with this node as its origin. What it hears from
 * the others it hands to its vc-bus (rooms-in), which gives it to every
 * front here as one of its own; their origin keeps it from going out
 * again. At most once, as within a node: a node cut off misses what was
 * said meanwhile (Mercure's history on each node keeps what it heard).
 *
 * This node's presence and occupancy changes go the same way: vc-bus
 * puts them on rooms-out (rooms_shared.c says when all are told again).
 * vc-bus's own pusher_internal:* events are not sent: each node's vc-bus
 * makes its own from the changes.
 */
#include "mesh.h"
#include "mesh_wire.h"
#include "realtime.pb-c.h"
#include "vc_bus.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Room messages this node may have queued for its vc-bus, at most. */
#define PUSH_HWM 10000
/* And from it: vc-bus tells all this node holds at once (rooms-share)
 * while vc-mesh waits for its answer, one message a member and room. */
#define SUB_HWM 1000000

static void on_room_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc, (void)sub;
    vc_nats_inbox_push(&((mesh_t *)closure)->inbox, INBOX_ROOM, msg);
}

static void on_share_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc, (void)sub;
    vc_nats_inbox_push(&((mesh_t *)closure)->inbox, INBOX_SHARE, msg);
}

natsStatus rooms_bridge_subscribe(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    natsStatus s = natsConnection_Subscribe(&m->room_sub, m->nc, VC_MESH_ROOM_SUBJECT ">", on_room_msg, m);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(&m->share_sub, m->nc, VC_MESH_SHARE_SUBJECT ">", on_share_msg, m);
    return s;
}

int rooms_bridge_open(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    char *out = vc_config_endpoint(m->d.cfg, "rooms-out"), *in = vc_config_endpoint(m->d.cfg, "rooms-in");
    m->rooms_sub = vc_socket_hwm(m->d.zctx, ZMQ_SUB, out, 0, 0, SUB_HWM);
    m->rooms_push = vc_socket_hwm(m->d.zctx, ZMQ_PUSH, in, 0, PUSH_HWM, 0);
    int ok = m->rooms_sub && m->rooms_push;
    if (!ok)
        vc_log(VC_LOG_CRIT, "rooms", "cannot link to vc-bus's rooms (\"%s\", \"%s\"): %s", out, in,
               zmq_strerror(errno));
    else
        zmq_setsockopt(m->rooms_sub, ZMQ_SUBSCRIBE, "", 0);
    free(out);
    free(in);
    return ok ? 0 : -1;
}

/* Whether a message vc-bus sent out goes to the other nodes. */
static int goes_out(const Vc__RoomMessage *rm)
{
    return rm->origin[0] == '\0' && strncmp(rm->event, "pusher_internal:", 16) != 0;
}

void rooms_from_bus(void *arg)
{
    mesh_t *m = arg;
    vc_zparts_t fr = {0};
    char subject[sizeof(VC_MESH_ROOM_SUBJECT) + VC_MESH_NODE_MAX];
    snprintf(subject, sizeof(subject), VC_MESH_ROOM_SUBJECT "%s", m->cfg->node);
    int n;
    while ((n = vc_zparts_recv(m->rooms_sub, &fr, ZMQ_DONTWAIT)) > 0) {
        if (n == 1) /* the bus's welcome */
            rooms_bus_welcome(m);
        Vc__RoomMessage *rm =
            fr.n == 2 ? vc__room_message__unpack(NULL, zmq_msg_size(&fr.f[1]), zmq_msg_data(&fr.f[1])) : NULL;
        vc_zparts_close(&fr);
        if (rm == NULL || !goes_out(rm) || !m->connected) {
            if (rm)
                vc__room_message__free_unpacked(rm, NULL);
            continue;
        }
        char *empty = rm->origin;
        rm->origin = m->cfg->node;
        rm->id = 0; /* each node's vc-bus numbers its own */
        size_t len = vc__room_message__get_packed_size(rm);
        uint8_t *buf = vc_malloc(len ? len : 1);
        vc__room_message__pack(rm, buf);
        if (natsConnection_Publish(m->nc, subject, buf, (int)len) == NATS_OK)
            m->rooms_sent++;
        else
            m->rooms_dropped++;
        free(buf);
        rm->origin = empty;
        vc__room_message__free_unpacked(rm, NULL);
    }
    vc_zparts_fini(&fr);
}

void rooms_heard(mesh_t *m, natsMsg *msg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    char why[128];
    Vc__RoomMessage *rm = mesh_room_read(natsMsg_GetData(msg), (size_t)natsMsg_GetDataLength(msg), why, sizeof(why));
    if (rm == NULL) {
        if (m->malformed++ == 0)
            vc_log(VC_LOG_WARN, "rooms", "dropped a room message from the cluster: %s", why);
        return;
    }
    if (strcmp(rm->origin, m->cfg->node) != 0) {
        size_t rl = strlen(rm->room);
        char *topic = vc_malloc(rl + 1);
        memcpy(topic, rm->room, rl);
        topic[rl] = '\n';
        if (vc_send_bytes(m->rooms_push, topic, rl + 1, ZMQ_SNDMORE | ZMQ_DONTWAIT) == 0 &&
            vc_send_proto(m->rooms_push, &rm->base, ZMQ_DONTWAIT) == 0)
            m->rooms_received++;
        else
            m->rooms_dropped++;
        free(topic);
    }
    vc__room_message__free_unpacked(rm, NULL);
}

void rooms_bridge_close(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (m->rooms_sub)
        zmq_close(m->rooms_sub);
    if (m->rooms_push)
        zmq_close(m->rooms_push);
    m->rooms_sub = m->rooms_push = NULL;
}
