#include "occupancy.h"
#include "vc_util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 1024

typedef struct oroom {
    struct oroom *next;
    uint32_t *pids; /* the front processes holding it */
    size_t n;
    char name[];
} oroom_t;

struct occupancy {
    occupancy_fn fn;
    void *arg;
    size_t nrooms;
    oroom_t *buckets[NBUCKETS];
};

occupancy_t *occupancy_new(occupancy_fn fn, void *arg)
{
    occupancy_t *o = vc_calloc(1, sizeof(*o));
    o->fn = fn;
    o->arg = arg;
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
            free(r->pids);
            free(r);
        }
    free(o);
    *op = NULL;
}

size_t occupancy_rooms(const occupancy_t *o)
{
    return o->nrooms;
}

/* The room's last holder went: it is vacated, and forgotten. */
static void vacate(occupancy_t *o, oroom_t **link)
{
    oroom_t *r = *link;
    *link = r->next;
    o->fn(o->arg, r->name, 0);
    free(r->pids);
    free(r);
    o->nrooms--;
}

void occupancy_change(occupancy_t *o, const char *room, const Vc__Occupancy *c)
{
    oroom_t **link = &o->buckets[vc_hash_str(room) & (NBUCKETS - 1)];
    while (*link && strcmp((*link)->name, room) != 0)
        link = &(*link)->next;
    oroom_t *r = *link;
    if (c->occupied) {
        if (r == NULL) {
            size_t n = strlen(room);
            r = vc_calloc(1, sizeof(*r) + n + 1);
            memcpy(r->name, room, n);
            *link = r;
            o->nrooms++;
            if (!c->restore)
                o->fn(o->arg, room, 1);
        }
        for (size_t i = 0; i < r->n; i++)
            if (r->pids[i] == c->pid)
                return;
        r->pids = vc_realloc(r->pids, (r->n + 1) * sizeof(*r->pids));
        r->pids[r->n++] = c->pid;
        return;
    }
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n; i++)
        if (r->pids[i] == c->pid) {
            r->pids[i] = r->pids[--r->n];
            break;
        }
    if (r->n == 0)
        vacate(o, link);
}

void occupancy_sweep(occupancy_t *o)
{
    for (size_t b = 0; b < NBUCKETS; b++)
        for (oroom_t **link = &o->buckets[b]; *link;) {
            oroom_t *r = *link;
            for (size_t i = r->n; i-- > 0;)
                if (kill((pid_t)r->pids[i], 0) != 0 && errno == ESRCH)
                    r->pids[i] = r->pids[--r->n];
            if (r->n == 0)
                vacate(o, link);
            else
                link = &r->next;
        }
}
