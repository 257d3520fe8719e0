#include "peers.h"
#include "bans.h"
#include "vc_keys.h"
#include "vc_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One entry per address with a connection open, freed with its last
 * one, so the table holds at most max_connections entries. */
#define BUCKETS 4096

typedef struct peer {
    vc_keyed_t link; /* by the address's hash */
    uint8_t addr[16];
    unsigned open;
} peer_t;

struct peers {
    vc_keys_t table;
};

peers_t *peers_new(void)
{
    peers_t *p = vc_calloc(1, sizeof(peers_t));
    vc_keys_init(&p->table, BUCKETS);
    return p;
}

void peers_destroy(peers_t **pp)
{
    peers_t *p = *pp;
    if (p == NULL)
        return;
    for (size_t b = 0; b <= p->table.mask; b++)
        for (vc_keyed_t *k = p->table.buckets[b], *next; k; k = next) {
            next = k->next;
            free(VC_CONTAINER(k, peer_t, link));
        }
    vc_keys_fini(&p->table);
    free(p);
    *pp = NULL;
}

/* Two addresses may share a hash: the entry is the one of the same address. */
static int same_addr(const vc_keyed_t *k, const void *arg)
{
    return memcmp(VC_CONTAINER(k, peer_t, link)->addr, arg, 16) == 0;
}

static peer_t *find(peers_t *p, const uint8_t key[16])
{
    vc_keyed_t *k = vc_keys_find(&p->table, bans_addr_hash(key), same_addr, key);
    return k ? VC_CONTAINER(k, peer_t, link) : NULL;
}

int peers_add(peers_t *p, const struct sockaddr *sa, unsigned limit)
{
    uint8_t key[16];
    if (bans_addr_key(sa, key) < 0)
        return 0;
    peer_t *e = find(p, key);
    if (e == NULL) {
        e = vc_calloc(1, sizeof(peer_t));
        memcpy(e->addr, key, 16);
        vc_keys_add(&p->table, &e->link, bans_addr_hash(key));
    }
    if (e->open >= limit)
        return -1;
    e->open++;
    return 0;
}

void peers_remove(peers_t *p, const struct sockaddr *sa)
{
    uint8_t key[16];
    if (bans_addr_key(sa, key) < 0)
        return;
    peer_t *e = find(p, key);
    VC_ASSERT(e != NULL && e->open > 0); /* each add is removed once */
    if (--e->open == 0) {
        vc_keys_remove(&p->table, &e->link);
        free(e);
    }
}
