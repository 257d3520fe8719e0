#include "rooms.h"
#include "occupancy.h"
#include "presence.h"
#include "realtime.pb-c.h"
#include "vc_bus.h"
#include "vc_log.h"
#include "vc_mesh.h"
#include "vc_store.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Messages relayed per pump, so that control and events get their turn. */
#define BATCH 512
/* A room message on the wire: a Pusher event's data is at most 10 KB,
 * ours is front.realtime_max_message (64 KiB by default). */
#define MAX_MESSAGE (1 << 20)
#define MAX_NAME 256
/* Messages queued for each subscriber (a front, vc-mesh) before more are
 * dropped for it: a burst, or all this node holds told at once
 * (rooms-share, one message a member and room). */
#define OUT_HWM 10000
/* Other nodes counted in presence and occupancy, at most. */
#define MAX_NODES 1024

struct rooms_relay {
    void *in, *out;
    uint64_t next_id, relayed, malformed, refused;
    int ipc; /* rooms-in is an ipc:// socket: senders have a uid */
    vc_store_t *store;
    uint64_t history_max; /* kept per room */
    uint64_t not_kept;    /* history writes that failed (a full disk) */
    presence_t *presence;
    occupancy_t *occupancy;
    webhooks_t *webhooks;
    uint64_t last_sweep_ms;
    vc_zparts_t fr;
    /* In a cluster: this node's own presence and occupancy changes go out
     * on rooms-out for vc-mesh; the other nodes are numbered from 1 as
     * they are first heard (nodes[i - 1]). */
    int clustered;
    char **nodes;
    size_t nnodes, capnodes;
    /* Whether this node posts the apps' occupancy and presence webhooks:
     * in a cluster, vc-mesh says which node does, so that each fires once. */
    int hooks_here;
};

/* [room "\n"][m] on rooms-out. */
static void publish(rooms_relay_t *r, Vc__RoomMessage *m)
{
    size_t rl = strlen(m->room);
    char *topic = vc_malloc(rl + 1);
    memcpy(topic, m->room, rl);
    topic[rl] = '\n';
    vc_send_bytes(r->out, topic, rl + 1, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    vc_send_proto(r->out, &m->base, ZMQ_DONTWAIT);
    free(topic);
}

/* A message for the fronts, given its id here. */
static void send_out(rooms_relay_t *r, Vc__RoomMessage *m)
{
    m->id = r->next_id++;
    publish(r, m);
    r->relayed++;
}

/* presence's member_added and member_removed. */
static void emit(void *arg, const char *room, const char *user_id, int added, const char *data, const char *except,
                 int to)
{
    rooms_relay_t *r = arg;
    if ((to & PRESENCE_HOOKS) && r->hooks_here)
        webhooks_event(r->webhooks, room, added ? "member_added" : "member_removed",
                       json_pack("{s:s}", "user_id", user_id));
    if (!(to & PRESENCE_CLIENTS))
        return;
    Vc__RoomMessage m = VC__ROOM_MESSAGE__INIT;
    m.room = (char *)room;
    m.event = (char *)(added ? "pusher_internal:member_added" : "pusher_internal:member_removed");
    m.data.data = (uint8_t *)data;
    m.data.len = strlen(data);
    m.except = (char *)(except ? except : "");
    m.time_ms = vc_wall_ms();
    send_out(r, &m);
}

/* A room came to be occupied, or vacated (anywhere in a cluster). */
static void on_occupancy(void *arg, const char *room, int occupied)
{
    rooms_relay_t *r = arg;
    if (r->hooks_here)
        webhooks_event(r->webhooks, room, occupied ? "channel_occupied" : "channel_vacated", NULL);
}

/* A change of this node's for the other nodes: out on rooms-out, where
 * vc-mesh hears it (the fronts skip what is not a message). */
static void share_out(rooms_relay_t *r, Vc__RoomMessage *m)
{
    if (r->clustered)
        publish(r, m);
}

static void share_member(void *arg, const char *room, const char *user_id, const char *info, int joined, int restore)
{
    Vc__MemberChange c = VC__MEMBER_CHANGE__INIT;
    c.user_id = (char *)user_id;
    c.info = (char *)info;
    c.joined = joined;
    c.restore = restore;
    Vc__RoomMessage m = VC__ROOM_MESSAGE__INIT;
    m.room = (char *)room;
    m.member = &c;
    share_out(arg, &m);
}

static void share_occupancy(void *arg, const char *room, int occupied, int restore)
{
    Vc__Occupancy c = VC__OCCUPANCY__INIT;
    c.occupied = occupied;
    c.restore = restore;
    Vc__RoomMessage m = VC__ROOM_MESSAGE__INIT;
    m.room = (char *)room;
    m.occupancy = &c;
    share_out(arg, &m);
}

/* Another node's number (from 1), given the first time it is named; 0:
 * this node (no origin), or no room for more (then it is not counted). */
static unsigned node_number(rooms_relay_t *r, const char *origin, int make)
{
    if (origin[0] == '\0')
        return 0;
    for (size_t i = 0; i < r->nnodes; i++)
        if (strcmp(r->nodes[i], origin) == 0)
            return (unsigned)i + 1;
    if (!make || r->nnodes >= MAX_NODES)
        return 0;
    VC_GROW(r->nodes, r->capnodes, r->nnodes + 1, 8);
    r->nodes[r->nnodes++] = vc_strdup(origin);
    return (unsigned)r->nnodes;
}

/* A client event (Pusher's client-*) for the app's webhooks: its sender
 * is the connection it is not sent back to. */
static void client_event(rooms_relay_t *r, const Vc__RoomMessage *m)
{
    json_t *f = json_pack("{s:s, s:s%, s:s}", "event", m->event, "data", (const char *)m->data.data, m->data.len,
                          "socket_id", m->except);
    if (f == NULL) /* data that is not UTF-8: the front sends only text */
        return;
    if (m->user_id[0])
        json_object_set_new(f, "user_id", json_string(m->user_id));
    webhooks_event(r->webhooks, m->room, "client_event", f);
}

typedef struct keep_ctx {
    const char *room;
    size_t room_len;
    uint64_t id, max;
    const void *packed;
    size_t len;
} keep_ctx_t;

/* ROOM "\0" id -> the message; then the room's oldest go past max. */
static int keep_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    keep_ctx_t *c = arg;
    unsigned char *key = vc_malloc(c->room_len + 9);
    memcpy(key, c->room, c->room_len);
    key[c->room_len] = '\0';
    vc_store_u64_key(c->id, key + c->room_len + 1);
    MDB_val k = {c->room_len + 9, key}, v = {c->len, (void *)c->packed};
    int rc = mdb_put(txn, dbi, &k, &v, 0);
    MDB_cursor *cur = NULL;
    if (rc == 0)
        rc = mdb_cursor_open(txn, dbi, &cur);
    uint64_t n = 0;
    /* Counted from the newest back: at most max + 1 steps. */
    for (int op = MDB_SET_KEY; rc == 0 && n <= c->max; op = MDB_PREV) {
        MDB_val ck = k, cv;
        if (mdb_cursor_get(cur, &ck, &cv, (MDB_cursor_op)op) != 0 || ck.mv_size != c->room_len + 9 ||
            memcmp(ck.mv_data, c->room, c->room_len + 1) != 0)
            break;
        if (++n > c->max) /* the oldest kept, and whatever is older */
            while (rc == 0) {
                rc = mdb_cursor_del(cur, 0);
                if (rc || mdb_cursor_get(cur, &ck, &cv, MDB_PREV) != 0 || ck.mv_size != c->room_len + 9 ||
                    memcmp(ck.mv_data, c->room, c->room_len + 1) != 0)
                    break;
            }
    }
    if (cur)
        mdb_cursor_close(cur);
    free(key);
    return rc ? vc_store_err(rc) : 0;
}

int rooms_message_valid(const Vc__RoomMessage *m)
{
    size_t rl = strlen(m->room);
    return rl > 0 && rl <= MAX_NAME && memchr(m->room, '\n', rl) == NULL && strchr(m->room, ':') != NULL &&
           strlen(m->event) <= MAX_NAME && strlen(m->except) <= 64 && strlen(m->user_id) <= MAX_NAME &&
           m->data.len <= MAX_MESSAGE && (m->origin[0] == '\0' || vc_mesh_node_name_ok(m->origin));
}

rooms_relay_t *rooms_relay_open(void *zctx, const vc_config_t *cfg, vc_store_t *store, uint64_t history_max,
                                webhooks_t *webhooks)
{
    rooms_relay_t *r = vc_calloc(1, sizeof(*r));
    r->store = store;
    r->webhooks = webhooks;
    r->history_max = history_max;
    /* Ids rise across restarts of the bus as long as the clock does: a
     * client that reconnects with the last id it saw asks for what came
     * after it. */
    r->next_id = (uint64_t)vc_wall_ms() * 1000;
    char *in_ep = vc_config_endpoint(cfg, "rooms-in"), *out_ep = vc_config_endpoint(cfg, "rooms-out");
    r->in = vc_socket(zctx, ZMQ_PULL, in_ep, 1);
    r->out = vc_socket_hwm(zctx, ZMQ_XPUB, out_ep, 1, OUT_HWM, 0);
    if (r->in) {
        int64_t max = MAX_MESSAGE + 4096;
        zmq_setsockopt(r->in, ZMQ_MAXMSGSIZE, &max, sizeof(max));
    }
    if (r->out)
        zmq_setsockopt(r->out, ZMQ_XPUB_WELCOME_MSG, VC_BUS_WELCOME, strlen(VC_BUS_WELCOME));
    int ok = r->in && r->out;
    if (!ok)
        vc_log(VC_LOG_CRIT, "rooms", "zmq_bind() failed while opening \"%s\" and \"%s\": %s", in_ep, out_ep,
               zmq_strerror(errno));
    /* Only the fronts send here, as the suite's user: the socket keeps
     * the owner-only mode it was made with, and relay_one checks each
     * sender as well. (PHP publishes through its front, which checks the
     * site's app.) */
    r->ipc = strncmp(in_ep, "ipc://", 6) == 0;
    free(in_ep);
    free(out_ep);
    if (!ok)
        rooms_relay_close(&r);
    else {
        r->presence = presence_new(store, (presence_calls_t){emit, share_member, r});
        r->occupancy = occupancy_new((occupancy_calls_t){on_occupancy, share_occupancy, r});
        r->clustered = vc_mesh_settings_of(cfg)->node[0] != '\0';
        r->hooks_here = 1;
    }
    return r;
}

void rooms_relay_close(rooms_relay_t **rp)
{
    rooms_relay_t *r = *rp;
    if (r == NULL)
        return;
    if (r->in)
        zmq_close(r->in);
    if (r->out)
        zmq_close(r->out);
    vc_zparts_fini(&r->fr);
    presence_destroy(&r->presence);
    occupancy_destroy(&r->occupancy);
    for (size_t i = 0; i < r->nnodes; i++)
        free(r->nodes[i]);
    free(r->nodes);
    free(r);
    *rp = NULL;
}

void *rooms_relay_in(const rooms_relay_t *r)
{
    return r->in;
}

void *rooms_relay_out(const rooms_relay_t *r)
{
    return r->out;
}

size_t rooms_relay_occupied(const rooms_relay_t *r)
{
    return occupancy_rooms(r->occupancy);
}

uint64_t rooms_relay_count(const rooms_relay_t *r, uint64_t *malformed)
{
    *malformed = r->malformed;
    return r->relayed;
}

/* [room "\n"][RoomMessage]: checked, given its id, sent on. */
static int relay_one(rooms_relay_t *r)
{
    vc_zparts_t *fr = &r->fr;
    if (vc_zparts_recv(r->in, fr, ZMQ_DONTWAIT) < 0)
        return 0;
    uid_t uid = (uid_t)-1;
    pid_t pid;
    if (r->ipc && (vc_zmsg_peer(&fr->f[0], &uid, &pid) < 0 || (uid != geteuid() && uid != 0))) {
        /* The socket's mode already keeps others out; this holds if a
         * mode is ever loosened again. */
        if (r->refused++ % 1000 == 0)
            vc_log(VC_LOG_WARN, "rooms", "refused a room message from uid %ld: only the fronts send room messages",
                   (long)uid);
        vc_zparts_close(fr);
        return 1;
    }
    Vc__RoomMessage *m = NULL;
    if (fr->n == 2)
        m = vc__room_message__unpack(NULL, zmq_msg_size(&fr->f[1]), zmq_msg_data(&fr->f[1]));
    if (m == NULL || !rooms_message_valid(m)) {
        if (r->malformed++ % 1000 == 0)
            vc_log(VC_LOG_WARN, "rooms", "dropped a malformed room message (%zu frames)", fr->n);
        if (m)
            vc__room_message__free_unpacked(m, NULL);
        vc_zparts_close(fr);
        return 1;
    }
    if (m->member || m->occupancy) {
        /* From a front here, or from another node through vc-mesh. */
        unsigned node = node_number(r, m->origin, 1);
        if (m->origin[0] && node == 0)
            ; /* a node's name too many: not counted */
        else if (m->member)
            presence_change(r->presence, m->room, m->member, node);
        else
            occupancy_change(r->occupancy, m->room, m->occupancy, node);
        vc__room_message__free_unpacked(m, NULL);
        vc_zparts_close(fr);
        return 1;
    }
    if (strncmp(m->event, "client-", 7) == 0 && m->origin[0] == '\0')
        client_event(r, m); /* once, on the node its sender is on */
    m->id = r->next_id;
    size_t rl = strlen(m->room);
    if (m->keep && r->history_max) {
        /* Written before it is sent: whoever joins and then reads the
         * history misses nothing between the two. */
        size_t plen = vc__room_message__get_packed_size(m);
        uint8_t *packed = vc_malloc(plen);
        vc__room_message__pack(m, packed);
        keep_ctx_t kc = {m->room, rl, m->id, r->history_max, packed, plen};
        if (vc_store_write(r->store, VC_DB_ROOM_HISTORY, keep_fn, &kc) < 0 && r->not_kept++ % 1000 == 0)
            vc_log(VC_LOG_ERR, "rooms", "a room message could not be kept for replay (%llu so far); it is still sent",
                   (unsigned long long)r->not_kept);
        free(packed);
    }
    send_out(r, m);
    vc__room_message__free_unpacked(m, NULL);
    vc_zparts_close(fr);
    return 1;
}

void rooms_relay_tick(rooms_relay_t *r)
{
    /* Every 2 s: connections of fronts that died without a word. */
    uint64_t now = vc_mono_ms();
    if (now - r->last_sweep_ms >= 2000) {
        presence_sweep(r->presence);
        occupancy_sweep(r->occupancy);
        r->last_sweep_ms = now;
    }
}

void rooms_relay_forget_node(rooms_relay_t *r, const char *node)
{
    unsigned n = node_number(r, node, 0);
    if (n == 0)
        return;
    presence_forget_node(r->presence, n);
    occupancy_forget_node(r->occupancy, n);
}

void rooms_relay_share(rooms_relay_t *r)
{
    occupancy_share_all(r->occupancy);
    presence_share_all(r->presence);
}

void rooms_relay_set_hooks(rooms_relay_t *r, int here)
{
    r->hooks_here = here;
}

int rooms_relay_hooks(const rooms_relay_t *r)
{
    return r->hooks_here;
}

size_t rooms_relay_nodes(const rooms_relay_t *r)
{
    return r->nnodes;
}

void rooms_relay_pump(rooms_relay_t *r)
{
    for (int i = 0; i < BATCH && relay_one(r); i++)
        ;
    while (vc_zparts_recv(r->out, &r->fr, ZMQ_DONTWAIT) > 0)
        vc_zparts_close(&r->fr);
}
