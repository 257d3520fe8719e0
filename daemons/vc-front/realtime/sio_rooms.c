#include "sio_rooms.h"
#include "rooms.h"
#include "vc_log.h"
#include "vc_names.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

/* Buckets of the spaces' table and of each space's rooms (powers of two):
 * every socket is in a room of its own, so a space's table holds a room a
 * socket at least. */
#define SPACE_BUCKETS 256
#define ROOM_BUCKETS 4096
/* Rooms one socket may be in: socket.io sets none, but a front's memory
 * is bounded per connection. */
#define ROOMS_PER_SOCKET 1024
/* Recovery: emits a namespace keeps (a ring), and sockets kept at most. */
#define HIST_CAP 4096
#define KEPT_MAX 65536

/* An emit kept for recovery: whom it chose, and its text with its offset. */
typedef struct sio_hist {
    uint64_t id, at_ms;
    char **rooms, **except;
    size_t nrooms, nexcept;
    char *packet;
} sio_hist_t;

/* A socket cut off, kept for its client to come back. */
typedef struct sio_kept {
    char pid[24], id[24];
    char **rooms;
    size_t nrooms;
    uint64_t until_ms;
} sio_kept_t;

struct sio_room {
    vc_named_t named;
    sio_socket_t **socks;
    size_t n, cap;
    int own; /* a socket's own, its id's */
};

struct sio_space {
    vc_named_t named; /* "~sio:HASH": its room on the bus */
    char *site, *nsp; /* what the hash is of, for the rooms' listing */
    rt_sub_t sub;     /* in that room while a socket of it is here */
    vc_names_t rooms;
    sio_socket_t **all;
    size_t n, cap;
    int64_t recovery_ms; /* the site's socketio.recovery */
    sio_hist_t *hist;    /* a ring of HIST_CAP, made at the first emit kept */
    size_t hhead, hlen;
    sio_kept_t *kept;
    size_t nkept, capkept;
};

static struct {
    const sio_socket_ops_t *ops;
    vc_names_t spaces;
    size_t sockets, rooms;
    uint64_t gen, applied;
} hub;

void sio_rooms_init(const sio_socket_ops_t *ops)
{
    hub.ops = ops;
    if (hub.spaces.keys.buckets == NULL)
        vc_names_init(&hub.spaces, SPACE_BUCKETS);
}

/* "~sio:" and 32 hex digits of a hash of the site's name and the
 * namespace: a room's name on the bus and between nodes is bounded (256
 * bytes), and a namespace may be 256 long by itself. */
static void space_name(char *out, size_t cap, const char *site, const char *nsp)
{
    unsigned char h[16];
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof(h));
    crypto_generichash_update(&st, (const unsigned char *)site, strlen(site) + 1); /* its NUL parts the two */
    crypto_generichash_update(&st, (const unsigned char *)nsp, strlen(nsp));
    crypto_generichash_final(&st, h, sizeof(h));
    char hex[sizeof(h) * 2 + 1];
    sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
    snprintf(out, cap, "~sio:%s", hex);
}

/* rooms.c hands the space's messages here. */
static void apply(sio_space_t *sp, const Vc__SioOp *op, uint64_t id);

static void on_bus(rt_sub_t *s, const Vc__RoomMessage *m, ws_out_t **frame)
{
    (void)frame; /* the frame is made once in apply, for every socket */
    if (m->sio)
        apply(VC_CONTAINER(s, sio_space_t, sub), m->sio, m->id);
}

static const rt_sub_ops_t bus_ops = {.deliver = on_bus};

/* The space of site's nsp, made if need be. */
static sio_space_t *space_get(const char *site, const char *nsp, int64_t recovery_ms)
{
    char name[48];
    space_name(name, sizeof(name), site, nsp);
    int made;
    sio_space_t *sp = vc_names_get(&hub.spaces, name, sizeof(*sp), &made);
    if (made) {
        sp->site = vc_strdup(site);
        sp->nsp = vc_strdup(nsp);
        sp->recovery_ms = recovery_ms;
        vc_names_init(&sp->rooms, ROOM_BUCKETS);
        sp->sub.ops = &bus_ops;
        rooms_join(name, &sp->sub);
    }
    return sp;
}

static sio_socket_t *socket_in(sio_space_t *sp, const char *id, void *owner)
{
    sio_socket_t *s = vc_calloc(1, sizeof(*s));
    s->space = sp;
    snprintf(s->id, sizeof(s->id), "%s", id);
    s->owner = owner;
    VC_GROW(sp->all, sp->cap, sp->n + 1, 16);
    s->all_index = sp->n;
    sp->all[sp->n++] = s;
    hub.sockets++;
    sio_socket_join(s, id);
    ((sio_room_t *)vc_names_find(&sp->rooms, id))->own = 1;
    return s;
}

sio_socket_t *sio_socket_new(const char *site, const char *nsp, const char *id, void *owner, int64_t recovery_ms)
{
    sio_socket_t *s = socket_in(space_get(site, nsp, recovery_ms), id, owner);
    if (recovery_ms > 0) {
        unsigned char raw[15];
        randombytes_buf(raw, sizeof(raw));
        sodium_bin2base64(s->pid, sizeof(s->pid), raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE);
    }
    return s;
}

int sio_socket_join(sio_socket_t *s, const char *room)
{
    for (size_t i = 0; i < s->nin; i++)
        if (strcmp(s->in[i].room->named.name, room) == 0)
            return 0; /* a Set, as socket.io's */
    if (s->nin == ROOMS_PER_SOCKET)
        return -1;
    int made;
    sio_room_t *r = vc_names_get(&s->space->rooms, room, sizeof(*r), &made);
    hub.rooms += made;
    VC_GROW(r->socks, r->cap, r->n + 1, 4);
    VC_GROW(s->in, s->capin, s->nin + 1, 2);
    s->in[s->nin++] = (sio_in_t){r, r->n};
    r->socks[r->n++] = s;
    return 0;
}

/* Takes s out of the room of its k-th entry. */
static void leave_at(sio_socket_t *s, size_t k)
{
    sio_room_t *r = s->in[k].room;
    size_t at = s->in[k].index;
    sio_socket_t *last = r->socks[--r->n];
    r->socks[at] = last;
    if (last != s)
        for (size_t i = 0; i < last->nin; i++)
            if (last->in[i].room == r) {
                last->in[i].index = at;
                break;
            }
    s->in[k] = s->in[--s->nin];
    if (r->n == 0) {
        free(r->socks);
        vc_names_remove(&s->space->rooms, r);
        hub.rooms--;
    }
}

void sio_socket_leave(sio_socket_t *s, const char *room)
{
    for (size_t i = 0; i < s->nin; i++)
        if (strcmp(s->in[i].room->named.name, room) == 0) {
            leave_at(s, i);
            return;
        }
}

void sio_socket_free(sio_socket_t *s)
{
    if (s == NULL)
        return;
    while (s->nin)
        leave_at(s, s->nin - 1);
    free(s->in);
    sio_space_t *sp = s->space;
    sio_socket_t *last = sp->all[--sp->n];
    sp->all[s->all_index] = last;
    last->all_index = s->all_index;
    hub.sockets--;
    free(s);
    /* An empty space stays until the next tick: this may run while the
     * bus's message for it is being delivered (rooms.c walks the room's
     * subscribers then), and a socket may come back to it by then. */
}

static void strings_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static char **strings_copy(char *const *v, size_t n)
{
    char **out = vc_calloc(n ? n : 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] = vc_strdup(v[i]);
    return out;
}

static void hist_drop_oldest(sio_space_t *sp)
{
    sio_hist_t *h = &sp->hist[sp->hhead];
    strings_free(h->rooms, h->nrooms);
    strings_free(h->except, h->nexcept);
    free(h->packet);
    sp->hhead = (sp->hhead + 1) % HIST_CAP;
    sp->hlen--;
}

/* What recovery no longer needs: emits and sockets older than its window. */
static void recovery_expire(sio_space_t *sp, uint64_t now)
{
    while (sp->hlen && sp->hist[sp->hhead].at_ms + (uint64_t)sp->recovery_ms < now)
        hist_drop_oldest(sp);
    for (size_t i = 0; i < sp->nkept;)
        if (sp->kept[i].until_ms < now) {
            strings_free(sp->kept[i].rooms, sp->kept[i].nrooms);
            sp->kept[i] = sp->kept[--sp->nkept];
        } else {
            i++;
        }
}

static int drop_if_empty(void *entry, void *arg)
{
    (void)arg;
    sio_space_t *sp = entry;
    recovery_expire(sp, vc_mono_ms());
    if (sp->n == 0 && sp->nkept == 0) {
        rooms_leave(&sp->sub);
        while (sp->hlen)
            hist_drop_oldest(sp);
        free(sp->hist);
        free(sp->kept);
        free(sp->site);
        free(sp->nsp);
        free(sp->all);
        vc_names_fini(&sp->rooms, NULL);
        vc_names_remove(&hub.spaces, sp);
    }
    return 0;
}

void sio_rooms_tick(void)
{
    if (hub.spaces.keys.buckets)
        vc_names_each(&hub.spaces, drop_if_empty, NULL);
}

/* Sets every socket of the named rooms' mark to gen; with out, gathers
 * those not marked before (each once). */
static void mark_rooms(sio_space_t *sp, char **names, size_t n, uint64_t gen, sio_socket_t ***out, size_t *nout,
                       size_t *cap)
{
    for (size_t i = 0; i < n; i++) {
        sio_room_t *r = vc_names_find(&sp->rooms, names[i]);
        for (size_t k = 0; r && k < r->n; k++) {
            sio_socket_t *s = r->socks[k];
            if (s->mark == gen)
                continue;
            s->mark = gen;
            if (out) {
                VC_GROW(*out, *cap, *nout + 1, 16);
                (*out)[(*nout)++] = s;
            }
        }
    }
}

/* An emit's text with its offset as a last argument ("2[...,\"ID\"]"),
 * kept for recovery. */
static char *hist_add(sio_space_t *sp, const Vc__SioOp *op, uint64_t id)
{
    size_t len = strlen(op->packet);
    char *text = vc_asprintf("%.*s%s\"%llu\"]", (int)(len - 1), op->packet,
                             len >= 2 && op->packet[len - 2] == '[' ? "" : ",", (unsigned long long)id);
    if (sp->hist == NULL)
        sp->hist = vc_calloc(HIST_CAP, sizeof(*sp->hist));
    if (sp->hlen == HIST_CAP)
        hist_drop_oldest(sp);
    sio_hist_t *h = &sp->hist[(sp->hhead + sp->hlen++) % HIST_CAP];
    *h = (sio_hist_t){.id = id,
                      .at_ms = vc_mono_ms(),
                      .rooms = strings_copy(op->rooms, op->n_rooms),
                      .nrooms = op->n_rooms,
                      .except = strings_copy(op->except, op->n_except),
                      .nexcept = op->n_except,
                      .packet = vc_strdup(text)};
    return text;
}

static void apply(sio_space_t *sp, const Vc__SioOp *op, uint64_t id)
{
    uint64_t gen = ++hub.gen;
    /* Those excepted are marked first, so the selection passes them by. */
    mark_rooms(sp, op->except, op->n_except, gen, NULL, NULL, NULL);
    sio_socket_t **sel = NULL;
    size_t n = 0, cap = 0;
    if (op->n_rooms) {
        mark_rooms(sp, op->rooms, op->n_rooms, gen, &sel, &n, &cap);
    } else {
        for (size_t i = 0; i < sp->n; i++)
            if (sp->all[i]->mark != gen) {
                VC_GROW(sel, cap, n + 1, 16);
                sel[n++] = sp->all[i];
            }
    }
    /* The selection is taken before anything changes: joins, leaves and
     * disconnects below do not move who was chosen. A disconnect frees
     * its socket and the space with the last one, so it comes last. */
    ws_out_t *frame = NULL;
    /* With recovery, an emit carries its offset and is kept, whoever
     * it reached here: a socket cut off may come back for it. */
    char *with_offset = sp->recovery_ms > 0 && op->packet[0] && id ? hist_add(sp, op, id) : NULL;
    const char *packet = with_offset ? with_offset : op->packet;
    if (packet[0] && n) {
        size_t len = strlen(packet);
        char *text = vc_malloc(len + 1);
        text[0] = '4'; /* an Engine.IO message */
        memcpy(text + 1, packet, len);
        frame = ws_out_new(VC_WS_OP_TEXT, text, len + 1);
        free(text);
    }
    free(with_offset);
    for (size_t i = 0; i < n; i++) {
        sio_socket_t *s = sel[i];
        if (frame)
            hub.ops->send(s, frame);
        for (size_t k = 0; k < op->n_join; k++)
            if (sio_socket_join(s, op->join[k]) != 0)
                vc_log(VC_LOG_NOTICE, "socketio", "socket %s is in %d rooms: it joins no more", s->id,
                       ROOMS_PER_SOCKET);
        for (size_t k = 0; k < op->n_leave; k++)
            sio_socket_leave(s, op->leave[k]);
    }
    ws_out_unref(frame);
    if (op->disconnect)
        for (size_t i = 0; i < n; i++)
            hub.ops->disconnect(sel[i], op->close);
    free(sel);
    hub.applied++;
}

int sio_rooms_publish(const char *site, const Vc__SioOp *op)
{
    char name[48];
    space_name(name, sizeof(name), site, op->nsp);
    Vc__RoomMessage m = VC__ROOM_MESSAGE__INIT;
    m.room = name;
    m.sio = (Vc__SioOp *)op;
    m.time_ms = vc_wall_ms();
    return rooms_publish(&m);
}

size_t sio_rooms_sockets(size_t *rooms)
{
    *rooms = hub.rooms;
    return hub.sockets;
}

uint64_t sio_rooms_applied(void)
{
    return hub.applied;
}

typedef struct each_arg {
    sio_space_t *sp;
    sio_rooms_cb cb;
    void *arg;
} each_arg_t;

static int each_room(void *entry, void *arg)
{
    sio_room_t *r = entry;
    each_arg_t *e = arg;
    return r->own ? 0 : e->cb(e->sp->site, e->sp->nsp, r->named.name, r->n, e->arg);
}

static int each_space(void *entry, void *arg)
{
    sio_space_t *sp = entry;
    each_arg_t *e = arg;
    if (sp->n == 0)
        return 0;
    if (e->cb(sp->site, sp->nsp, "", sp->n, e->arg))
        return 1;
    each_arg_t inner = {sp, e->cb, e->arg};
    vc_names_each(&sp->rooms, each_room, &inner);
    return 0;
}

void sio_rooms_each(sio_rooms_cb cb, void *arg)
{
    each_arg_t e = {NULL, cb, arg};
    if (hub.spaces.keys.buckets)
        vc_names_each(&hub.spaces, each_space, &e);
}

void sio_socket_keep(sio_socket_t *s, uint64_t until_ms)
{
    sio_space_t *sp = s->space;
    if (!s->pid[0] || sp->recovery_ms <= 0)
        return;
    if (sp->nkept == KEPT_MAX) {
        vc_log(VC_LOG_NOTICE, "socketio", "%zu sockets are kept for recovery already: %s is not", sp->nkept, s->id);
        return;
    }
    VC_GROW(sp->kept, sp->capkept, sp->nkept + 1, 16);
    sio_kept_t *k = &sp->kept[sp->nkept++];
    *k = (sio_kept_t){.until_ms = until_ms};
    snprintf(k->pid, sizeof(k->pid), "%s", s->pid);
    snprintf(k->id, sizeof(k->id), "%s", s->id);
    k->rooms = vc_calloc(s->nin ? s->nin : 1, sizeof(*k->rooms));
    for (size_t i = 0; i < s->nin; i++)
        if (!s->in[i].room->own)
            k->rooms[k->nrooms++] = vc_strdup(s->in[i].room->named.name);
}

/* Whether offset (a decimal id) is one the namespace still keeps, or one
 * at or after its oldest: else what came between is gone. */
static int offset_kept(const sio_space_t *sp, uint64_t offset)
{
    if (sp->hlen == 0)
        return 0;
    return offset + 1 >= sp->hist[sp->hhead].id;
}

sio_socket_t *sio_socket_restore(const char *site, const char *nsp, const char *pid, const char *offset, void *owner)
{
    char name[48];
    space_name(name, sizeof(name), site, nsp);
    sio_space_t *sp = hub.spaces.keys.buckets ? vc_names_find(&hub.spaces, name) : NULL;
    if (sp == NULL)
        return NULL;
    recovery_expire(sp, vc_mono_ms());
    char *end;
    unsigned long long off = strtoull(offset, &end, 10);
    if (*offset == '\0' || *end != '\0' || !offset_kept(sp, off))
        return NULL;
    for (size_t i = 0; i < sp->nkept; i++) {
        sio_kept_t *k = &sp->kept[i];
        if (strcmp(k->pid, pid) != 0)
            continue;
        sio_socket_t *s = socket_in(sp, k->id, owner);
        snprintf(s->pid, sizeof(s->pid), "%s", k->pid);
        for (size_t r = 0; r < k->nrooms; r++)
            sio_socket_join(s, k->rooms[r]);
        strings_free(k->rooms, k->nrooms);
        *k = sp->kept[--sp->nkept];
        return s;
    }
    return NULL;
}

static int in_any(const sio_socket_t *s, char **rooms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < s->nin; k++)
            if (strcmp(s->in[k].room->named.name, rooms[i]) == 0)
                return 1;
    return 0;
}

void sio_socket_replay(sio_socket_t *s, const char *offset)
{
    sio_space_t *sp = s->space;
    uint64_t off = strtoull(offset, NULL, 10);
    for (size_t i = 0; i < sp->hlen; i++) {
        const sio_hist_t *h = &sp->hist[(sp->hhead + i) % HIST_CAP];
        if (h->id <= off || (h->nrooms && !in_any(s, h->rooms, h->nrooms)) || in_any(s, h->except, h->nexcept))
            continue;
        size_t len = strlen(h->packet);
        char *text = vc_malloc(len + 1);
        text[0] = '4';
        memcpy(text + 1, h->packet, len);
        ws_out_t *frame = ws_out_new(VC_WS_OP_TEXT, text, len + 1);
        free(text);
        hub.ops->send(s, frame);
        ws_out_unref(frame);
    }
}
