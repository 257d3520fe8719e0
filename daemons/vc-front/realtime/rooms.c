#include "rooms.h"
#include "vc_bus.h"
#include "core/node_store.h"
#include "vc_names.h"
#include "vc_log.h"
#include "vc_store.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Buckets of the room table: a power of two. A chain is a few rooms even
 * with 100,000 of them. */
#define NBUCKETS 16384
/* How long start waits for rooms-out's welcome, so that what is published
 * once the front is ready reaches it (the bus answers in microseconds). */
#define WELCOME_WAIT_MS 2000
/* Room messages queued to and from the bus, at most, each way. */
#define ROOMS_HWM 100000

struct rt_room {
    vc_named_t named;          /* the room's name, in the table */
#define ROOM_MAGIC 0x726f6f6du /* "room" */
    unsigned magic;
    rt_sub_t **subs;
    size_t nsubs, cap;
    rt_member_t *members;
    size_t nmembers;
};

static struct {
    front_t *f;
    void *push, *sub;
    h2o_socket_t *watch; /* a dup of sub's ZMQ_FD on the loop */
    vc_names_t rooms;
    size_t nsubs;
    uint64_t delivered, malformed;
    void (*on_kept)(const Vc__RoomMessage *m);
    vc_zparts_t fr;
} room_hub;

void rooms_on_kept(void (*cb)(const Vc__RoomMessage *m))
{
    room_hub.on_kept = cb;
}

/* Made at first use: a room may be looked up before the bus is linked. */
static vc_names_t *table(void)
{
    if (room_hub.rooms.keys.buckets == NULL)
        vc_names_init(&room_hub.rooms, NBUCKETS);
    return &room_hub.rooms;
}

rt_room_t *rooms_find(const char *name)
{
    return vc_names_find(table(), name);
}

const char *rooms_name(const rt_room_t *r)
{
    VC_CHECK_OBJ(r, ROOM_MAGIC);
    return r->named.name;
}

size_t rooms_subscribers(const rt_room_t *r)
{
    VC_CHECK_OBJ(r, ROOM_MAGIC);
    return r->nsubs;
}

size_t rooms_count(size_t *subscriptions)
{
    *subscriptions = room_hub.nsubs;
    return table()->n;
}

typedef struct each_room {
    int (*cb)(rt_room_t *r, void *arg);
    void *arg;
} each_room_t;

static int each_one(void *entry, void *arg)
{
    each_room_t *e = arg;
    return e->cb(entry, e->arg);
}

void rooms_each(int (*cb)(rt_room_t *r, void *arg), void *arg)
{
    each_room_t e = {cb, arg};
    vc_names_each(table(), each_one, &e);
}

/* The bus counts the front processes that hold each room (the apps'
 * channel_occupied and channel_vacated webhooks). */
static void occupancy(const char *room, int occupied, int restore)
{
    Vc__Occupancy o = VC__OCCUPANCY__INIT;
    o.occupied = occupied;
    o.pid = (uint32_t)getpid();
    o.restore = restore;
    Vc__RoomMessage m = VC__ROOM_MESSAGE__INIT;
    m.room = (char *)room;
    m.occupancy = &o;
    rooms_publish(&m);
}

void rooms_join(const char *name, rt_sub_t *s)
{
    int made;
    rt_room_t *r = vc_names_get(table(), name, sizeof(*r), &made);
    if (made) {
        r->magic = ROOM_MAGIC;
        occupancy(name, 1, 0);
    }
    VC_GROW(r->subs, r->cap, r->nsubs + 1, 4);
    s->room = r;
    s->index = r->nsubs;
    r->subs[r->nsubs++] = s;
    room_hub.nsubs++;
}

static void room_free(rt_room_t *r)
{
    r->magic = 0;
    for (size_t i = 0; i < r->nmembers; i++) {
        free(r->members[i].user_id);
        free(r->members[i].info);
    }
    free(r->members);
    free(r->subs);
    vc_names_remove(table(), r);
}

void rooms_leave(rt_sub_t *s)
{
    rt_room_t *r = s->room;
    if (r == NULL)
        return;
    /* The last one takes its place: order among subscribers is not kept. */
    rt_sub_t *last = r->subs[--r->nsubs];
    r->subs[s->index] = last;
    last->index = s->index;
    s->room = NULL;
    room_hub.nsubs--;
    if (r->nsubs == 0) {
        occupancy(r->named.name, 0, 0);
        room_free(r);
    }
}

static rt_member_t *member_find(rt_room_t *r, const char *user_id)
{
    for (size_t i = 0; i < r->nmembers; i++)
        if (strcmp(r->members[i].user_id, user_id) == 0)
            return &r->members[i];
    return NULL;
}

int rooms_member_add(rt_room_t *r, const char *user_id, const char *info)
{
    VC_CHECK_OBJ(r, ROOM_MAGIC);
    rt_member_t *m = member_find(r, user_id);
    int first = m == NULL;
    if (first) {
        r->members = vc_realloc(r->members, (r->nmembers + 1) * sizeof(*r->members));
        m = &r->members[r->nmembers++];
        *m = (rt_member_t){.user_id = vc_strdup(user_id)};
    }
    free(m->info);
    m->info = info ? vc_strdup(info) : NULL;
    m->conns++;
    return first;
}

int rooms_member_remove(rt_room_t *r, const char *user_id)
{
    VC_CHECK_OBJ(r, ROOM_MAGIC);
    rt_member_t *m = member_find(r, user_id);
    if (m == NULL || --m->conns > 0)
        return 0;
    free(m->user_id);
    free(m->info);
    *m = r->members[--r->nmembers];
    return 1;
}

const rt_member_t *rooms_members(const rt_room_t *r, size_t *n)
{
    VC_CHECK_OBJ(r, ROOM_MAGIC);
    *n = r->nmembers;
    return r->members;
}

uint64_t rooms_delivered(uint64_t *malformed)
{
    *malformed = room_hub.malformed;
    return room_hub.delivered;
}

int rooms_publish(const Vc__RoomMessage *m)
{
    if (room_hub.push == NULL)
        return -1;
    size_t rl = strlen(m->room);
    char topic[512];
    if (rl + 1 > sizeof(topic))
        return -1;
    memcpy(topic, m->room, rl);
    topic[rl] = '\n';
    if (vc_send_bytes(room_hub.push, topic, rl + 1, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return -1;
    return vc_send_proto(room_hub.push, &m->base, ZMQ_DONTWAIT) < 0 ? -1 : 0;
}

/* Every subscriber of the message's room here, but the one it excepts. */
static void deliver(const Vc__RoomMessage *m)
{
    rt_room_t *r = rooms_find(m->room);
    if (r == NULL)
        return;
    /* One frame per protocol: the first subscriber of each makes it. */
    const rt_sub_ops_t *ops[4] = {0};
    ws_out_t *frames[4] = {0};
    size_t nops = 0;
    for (size_t i = 0; i < r->nsubs; i++) {
        rt_sub_t *s = r->subs[i];
        if (m->except[0] && s->socket_id && strcmp(s->socket_id, m->except) == 0)
            continue;
        size_t k = 0;
        while (k < nops && ops[k] != s->ops)
            k++;
        if (k == nops && nops < 4)
            ops[nops++] = s->ops;
        s->ops->deliver(s, m, k < 4 ? &frames[k] : NULL);
    }
    for (size_t k = 0; k < nops; k++)
        ws_out_unref(frames[k]);
    room_hub.delivered++;
}

static int member_change(const char *room, const char *user_id, const char *info, int joined, const char *socket_id,
                         int restore)
{
    Vc__MemberChange c = VC__MEMBER_CHANGE__INIT;
    c.restore = restore;
    c.user_id = (char *)user_id;
    c.info = (char *)(info ? info : "");
    c.joined = joined;
    c.pid = (uint32_t)getpid();
    c.socket_id = (char *)(socket_id ? socket_id : "");
    Vc__RoomMessage m = VC__ROOM_MESSAGE__INIT;
    m.room = (char *)room;
    m.member = &c;
    return rooms_publish(&m);
}

int rooms_member_change(const char *room, const char *user_id, const char *info, int joined, const char *socket_id)
{
    return member_change(room, user_id, info, joined, socket_id, 0);
}

/* The bus said welcome: on a first link nothing is held yet; after the
 * bus restarted (its presence and occupancy are gone), every room here
 * and every connection of a presence member here is told again. */
static int announce_room(rt_room_t *r, void *arg)
{
    (void)arg;
    occupancy(r->named.name, 1, 1);
    for (size_t i = 0; i < r->nmembers; i++)
        for (unsigned k = 0; k < r->members[i].conns; k++)
            member_change(r->named.name, r->members[i].user_id, r->members[i].info, 1, NULL, 1);
    return 0;
}

static void announce_members(void)
{
    rooms_each(announce_room, NULL);
}

static void drain(void)
{
    for (;;) {
        int n = vc_zparts_recv(room_hub.sub, &room_hub.fr, ZMQ_DONTWAIT);
        if (n < 0)
            return;
        if (n == 2) {
            Vc__RoomMessage *m =
                vc__room_message__unpack(NULL, zmq_msg_size(&room_hub.fr.f[1]), zmq_msg_data(&room_hub.fr.f[1]));
            if (m && (m->member || m->occupancy)) {
                /* A node's presence or occupancy change, for vc-mesh (a cluster). */
                vc__room_message__free_unpacked(m, NULL);
            } else if (m) {
                if (m->keep && room_hub.on_kept)
                    room_hub.on_kept(m);
                deliver(m);
                vc__room_message__free_unpacked(m, NULL);
            } else {
                room_hub.malformed++;
            }
        } else if (n == 1) { /* the bus's welcome: a first link, or the bus is back */
            announce_members();
        }
        vc_zparts_close(&room_hub.fr);
    }
}

static void on_readable(h2o_socket_t *sock, const char *err)
{
    (void)sock;
    (void)err;
    drain();
}

int rooms_start(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    room_hub.f = f;
    char *in_ep = vc_config_endpoint(f->d.cfg, "rooms-in"), *out_ep = vc_config_endpoint(f->d.cfg, "rooms-out");
    /* Publishing never blocks the loop: with the bus gone long enough to
     * fill this, a message is dropped and the publisher told. */
    room_hub.push = vc_socket_hwm(f->d.zctx, ZMQ_PUSH, in_ep, 0, ROOMS_HWM, 0);
    room_hub.sub = vc_socket_hwm(f->d.zctx, ZMQ_SUB, out_ep, 0, 0, ROOMS_HWM);
    int ok = room_hub.push && room_hub.sub;
    if (ok) {
        zmq_setsockopt(room_hub.sub, ZMQ_SUBSCRIBE, "", 0);
        int fd;
        size_t len = sizeof(fd);
        ok = zmq_getsockopt(room_hub.sub, ZMQ_FD, &fd, &len) == 0;
        if (ok && vc_wait_readable(room_hub.sub, WELCOME_WAIT_MS) <= 0)
            vc_log(VC_LOG_WARN, "rooms", "no welcome from \"%s\" in %d ms: is vc-bus running?", out_ep,
                   WELCOME_WAIT_MS);
        if (ok) {
            room_hub.watch = h2o_evloop_socket_create(f->ctx.loop, dup(fd), H2O_SOCKET_FLAG_DONT_READ);
            h2o_socket_read_start(room_hub.watch, on_readable);
            drain();
        }
    }
    if (!ok)
        vc_log(VC_LOG_ERR, "rooms", "zmq_connect() failed while linking to \"%s\" and \"%s\": %s", in_ep, out_ep,
               zmq_strerror(errno));
    free(in_ep);
    free(out_ep);
    return ok ? 0 : -1;
}

/* ZMQ_FD signals edges only: what arrived while it was not watched (or in
 * the turn that read its edge) is read here too, once a second. */
void rooms_tick(void)
{
    if (room_hub.sub)
        drain();
}

/* A read transaction on the node's state with db's handle, which is opened
 * once and kept (the transaction that opens it is committed, never
 * aborted: that would close it). NULL if the state cannot be read, or db
 * is not there yet (its writer has written nothing). */
static MDB_txn *read_db(front_t *f, const char *db, MDB_dbi *dbi, int *opened)
{
    vc_store_t *store = front_store(f);
    if (store == NULL)
        return NULL;
    MDB_env *env = vc_store_env(store);
    MDB_txn *txn;
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc == MDB_MAP_RESIZED && mdb_env_set_mapsize(env, 0) == 0)
        rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc != 0)
        return NULL;
    if (!*opened && mdb_dbi_open(txn, db, 0, dbi) != 0) {
        mdb_txn_abort(txn);
        return NULL;
    }
    *opened = 1;
    return txn;
}

int rooms_history(front_t *f, const char *room, uint64_t after_id, rooms_history_cb cb, void *arg)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    static MDB_dbi dbi;
    static int opened;
    MDB_txn *txn = read_db(f, VC_DB_ROOM_HISTORY, &dbi, &opened);
    if (txn == NULL)
        return 0;
    size_t rl = strlen(room);
    unsigned char *key = vc_malloc(rl + 9);
    memcpy(key, room, rl + 1);
    vc_store_u64_key(after_id + 1, key + rl + 1);
    MDB_cursor *cur;
    int n = 0;
    if (mdb_cursor_open(txn, dbi, &cur) == 0) {
        MDB_val k = {rl + 9, key}, v;
        for (int op = MDB_SET_RANGE; mdb_cursor_get(cur, &k, &v, (MDB_cursor_op)op) == 0; op = MDB_NEXT) {
            if (k.mv_size != rl + 9 || memcmp(k.mv_data, room, rl + 1) != 0)
                break;
            Vc__RoomMessage *m = vc__room_message__unpack(NULL, v.mv_size, v.mv_data);
            if (m == NULL)
                continue;
            int stop = cb(m, arg);
            vc__room_message__free_unpacked(m, NULL);
            n++;
            if (stop)
                break;
        }
        mdb_cursor_close(cur);
    }
    mdb_txn_commit(txn);
    free(key);
    return n;
}

char *rooms_presence_read(front_t *f, const char *room)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    static MDB_dbi dbi;
    static int opened;
    MDB_txn *txn = read_db(f, VC_DB_PRESENCE, &dbi, &opened);
    if (txn == NULL)
        return NULL;
    MDB_val k = {strlen(room), (void *)room}, v;
    char *out = mdb_get(txn, dbi, &k, &v) == 0 ? vc_strndup(v.mv_data, v.mv_size) : NULL;
    mdb_txn_commit(txn);
    return out;
}
