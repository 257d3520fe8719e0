#include "occupancy.h"
#include "vc_names.h"
#include "vc_util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 1024

/* A room's holder: a front process here (node 0, its pid), or a node. */
typedef struct holder {
    uint32_t pid;
    unsigned node;
} holder_t;

typedef struct oroom {
    vc_named_t named; /* the room's name, in the table */
    holder_t *h;
    size_t n;
} oroom_t;

struct occupancy {
    occupancy_calls_t calls;
    vc_names_t rooms;
};

occupancy_t *occupancy_new(occupancy_calls_t calls)
{
    occupancy_t *o = vc_calloc(1, sizeof(*o));
    o->calls = calls;
    vc_names_init(&o->rooms, NBUCKETS);
    return o;
}

static void room_drop(void *entry)
{
    free(((oroom_t *)entry)->h);
}

void occupancy_destroy(occupancy_t **op)
{
    occupancy_t *o = *op;
    if (o == NULL)
        return;
    vc_names_fini(&o->rooms, room_drop);
    free(o);
    *op = NULL;
}

size_t occupancy_rooms(const occupancy_t *o)
{
    return o->rooms.n;
}

static size_t held_here(const oroom_t *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->h[i].node == 0;
    return n;
}

/* Holders were dropped from the room (here_before of them were this
 * node's): the other nodes hear if none is left here; with no holder
 * left anywhere the room is vacated, and forgotten (then 1). */
static int after_drop(occupancy_t *o, oroom_t *r, size_t here_before)
{
    if (here_before > 0 && held_here(r) == 0)
        o->calls.share(o->calls.arg, r->named.name, 0, 0);
    if (r->n > 0)
        return 0;
    o->calls.hook(o->calls.arg, r->named.name, 0);
    room_drop(r);
    vc_names_remove(&o->rooms, r);
    return 1;
}

static void take(occupancy_t *o, const char *room, const Vc__Occupancy *c, unsigned node)
{
    int made;
    oroom_t *r = vc_names_get(&o->rooms, room, sizeof(*r), &made);
    if (made && !c->restore)
        o->calls.hook(o->calls.arg, room, 1);
    for (size_t i = 0; i < r->n; i++)
        if (r->h[i].node == node && (node != 0 || r->h[i].pid == c->pid))
            return;
    if (node == 0 && held_here(r) == 0)
        o->calls.share(o->calls.arg, room, 1, c->restore);
    r->h = vc_realloc(r->h, (r->n + 1) * sizeof(*r->h));
    r->h[r->n++] = (holder_t){node ? 0 : c->pid, node};
}

void occupancy_change(occupancy_t *o, const char *room, const Vc__Occupancy *c, unsigned node)
{
    if (c->occupied) {
        take(o, room, c, node);
        return;
    }
    oroom_t *r = vc_names_find(&o->rooms, room);
    if (r == NULL)
        return;
    size_t here = held_here(r);
    for (size_t i = 0; i < r->n; i++)
        if (r->h[i].node == node && (node != 0 || r->h[i].pid == c->pid)) {
            r->h[i] = r->h[--r->n];
            after_drop(o, r, here);
            return;
        }
}

typedef struct dropping {
    occupancy_t *o;
    int (*gone)(const holder_t *h, unsigned node);
    unsigned node;
} dropping_t;

static int drop_from(void *entry, void *arg)
{
    dropping_t *d = arg;
    oroom_t *r = entry;
    size_t here = held_here(r), before = r->n;
    for (size_t i = r->n; i-- > 0;)
        if (d->gone(&r->h[i], d->node))
            r->h[i] = r->h[--r->n];
    if (r->n != before)
        after_drop(d->o, r, here);
    return 0;
}

/* Drops the holders gone says are gone, in every room. */
static void drop_holders(occupancy_t *o, int (*gone)(const holder_t *h, unsigned node), unsigned node)
{
    dropping_t d = {o, gone, node};
    vc_names_each(&o->rooms, drop_from, &d);
}

static int front_gone(const holder_t *h, unsigned node)
{
    (void)node;
    return h->node == 0 && kill((pid_t)h->pid, 0) != 0 && errno == ESRCH;
}

static int of_node(const holder_t *h, unsigned node)
{
    return h->node == node;
}

void occupancy_sweep(occupancy_t *o)
{
    drop_holders(o, front_gone, 0);
}

void occupancy_forget_node(occupancy_t *o, unsigned node)
{
    if (node != 0)
        drop_holders(o, of_node, node);
}

static int share_one(void *entry, void *arg)
{
    occupancy_t *o = arg;
    oroom_t *r = entry;
    if (held_here(r) > 0)
        o->calls.share(o->calls.arg, r->named.name, 1, 1);
    return 0;
}

void occupancy_share_all(occupancy_t *o)
{
    vc_names_each(&o->rooms, share_one, o);
}
