#include "occupancy.h"
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
    struct oroom *next;
    holder_t *h;
    size_t n;
    char name[];
} oroom_t;

struct occupancy {
    occupancy_calls_t calls;
    size_t nrooms;
    oroom_t *buckets[NBUCKETS];
};

occupancy_t *occupancy_new(occupancy_calls_t calls)
{
    occupancy_t *o = vc_calloc(1, sizeof(*o));
    o->calls = calls;
    return o;
}

void occupancy_destroy(occupancy_t **op)
{
    occupancy_t *o = *op;
    if (o == NULL)
        return;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (oroom_t *r = o->buckets[b], *next; r; r = next) {
            next = r->next;
            free(r->h);
            free(r);
        }
    free(o);
    *op = NULL;
}

size_t occupancy_rooms(const occupancy_t *o)
{
    return o->nrooms;
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
static int after_drop(occupancy_t *o, oroom_t **link, size_t here_before)
{
    oroom_t *r = *link;
    if (here_before > 0 && held_here(r) == 0)
        o->calls.share(o->calls.arg, r->name, 0, 0);
    if (r->n > 0)
        return 0;
    *link = r->next;
    o->calls.hook(o->calls.arg, r->name, 0);
    free(r->h);
    free(r);
    o->nrooms--;
    return 1;
}

static void take(occupancy_t *o, oroom_t **link, const char *room, const Vc__Occupancy *c, unsigned node)
{
    oroom_t *r = *link;
    if (r == NULL) {
        size_t n = strlen(room);
        r = vc_calloc(1, sizeof(*r) + n + 1);
        memcpy(r->name, room, n);
        *link = r;
        o->nrooms++;
        if (!c->restore)
            o->calls.hook(o->calls.arg, room, 1);
    }
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
    oroom_t **link = &o->buckets[vc_hash_str(room) & (NBUCKETS - 1)];
    while (*link && strcmp((*link)->name, room) != 0)
        link = &(*link)->next;
    if (c->occupied) {
        take(o, link, room, c, node);
        return;
    }
    oroom_t *r = *link;
    if (r == NULL)
        return;
    size_t here = held_here(r);
    for (size_t i = 0; i < r->n; i++)
        if (r->h[i].node == node && (node != 0 || r->h[i].pid == c->pid)) {
            r->h[i] = r->h[--r->n];
            after_drop(o, link, here);
            return;
        }
}

/* Drops the holders gone says are gone, in every room. */
static void drop_holders(occupancy_t *o, int (*gone)(const holder_t *h, unsigned node), unsigned node)
{
    for (size_t b = 0; b < NBUCKETS; b++)
        for (oroom_t **link = &o->buckets[b]; *link;) {
            oroom_t *r = *link;
            size_t here = held_here(r), before = r->n;
            for (size_t i = r->n; i-- > 0;)
                if (gone(&r->h[i], node))
                    r->h[i] = r->h[--r->n];
            if (r->n == before || !after_drop(o, link, here))
                link = &r->next;
        }
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

void occupancy_share_all(occupancy_t *o)
{
    for (size_t b = 0; b < NBUCKETS; b++)
        for (oroom_t *r = o->buckets[b]; r; r = r->next)
            if (held_here(r) > 0)
                o->calls.share(o->calls.arg, r->name, 1, 1);
}
