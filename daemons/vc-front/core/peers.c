#include "peers.h"
#include "bans.h"
#include "vc_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Chained: one entry per address with a connection open, freed with its
 * last one, so the table holds at most max_connections entries. */
#define BUCKETS 4096

typedef struct peer {
    uint8_t addr[16];
    unsigned open;
    struct peer *next;
} peer_t;

struct peers {
    peer_t *bucket[BUCKETS];
};

peers_t *peers_new(void)
{
    return vc_calloc(1, sizeof(peers_t));
}

void peers_destroy(peers_t **pp)
{
    peers_t *p = *pp;
    if (p == NULL)
        return;
    for (size_t i = 0; i < BUCKETS; i++)
        for (peer_t *e = p->bucket[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(p);
    *pp = NULL;
}

static peer_t **slot_of(peers_t *p, const uint8_t key[16])
{
    peer_t **s = &p->bucket[bans_addr_hash(key) % BUCKETS];
    while (*s && memcmp((*s)->addr, key, 16) != 0)
        s = &(*s)->next;
    return s;
}

int peers_add(peers_t *p, const struct sockaddr *sa, unsigned limit)
{
    uint8_t key[16];
    if (bans_addr_key(sa, key) < 0)
        return 0;
    peer_t **s = slot_of(p, key);
    if (*s == NULL) {
        *s = vc_calloc(1, sizeof(peer_t));
        memcpy((*s)->addr, key, 16);
    }
    if ((*s)->open >= limit)
        return -1;
    (*s)->open++;
    return 0;
}

void peers_remove(peers_t *p, const struct sockaddr *sa)
{
    uint8_t key[16];
    if (bans_addr_key(sa, key) < 0)
        return;
    peer_t **s = slot_of(p, key);
    VC_ASSERT(*s != NULL && (*s)->open > 0); /* each add is removed once */
    if (--(*s)->open == 0) {
        peer_t *e = *s;
        *s = e->next;
        free(e);
    }
}
