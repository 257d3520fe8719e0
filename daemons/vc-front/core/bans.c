/*
 * An open-addressing table keyed by the client's IP address (IPv4-mapped
 * IPv6 counts as IPv4). A lookup probes PROBE slots; inserting where all
 * are taken evicts the one seen longest ago, so a flood of addresses costs
 * memory once and can only push out old entries.
 */
#include "bans.h"
#include "vc_util.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 4096
#define PROBE 8
#define MAX_DOUBLINGS 4

typedef struct entry {
    uint8_t addr[16]; /* IPv6, or IPv4 mapped */
    int used;
    unsigned cuts;      /* inside the window */
    unsigned bans;      /* how many times banned, for doubling */
    uint64_t window_ms; /* when the window of cuts began */
    uint64_t until_ms;  /* banned until */
    uint64_t seen_ms;
} entry_t;

struct bans {
    entry_t e[SLOTS];
};

bans_t *bans_new(void)
{
    return vc_calloc(1, sizeof(bans_t));
}

void bans_free(bans_t *b)
{
    free(b);
}

int bans_addr_key(const struct sockaddr *sa, uint8_t key[16])
{
    memset(key, 0, 16);
    if (sa->sa_family == AF_INET) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return 0;
    }
    return -1;
}

uint32_t bans_addr_hash(const uint8_t key[16])
{
    return vc_hash_bytes(key, 16);
}

/* The entry for key, created if create (evicting the stalest), or NULL. */
static entry_t *find(bans_t *b, const uint8_t key[16], int create, uint64_t now_ms)
{
    uint32_t h = bans_addr_hash(key);
    entry_t *victim = NULL;
    for (int i = 0; i < PROBE; i++) {
        entry_t *e = &b->e[(h + (uint32_t)i) % SLOTS];
        if (e->used && memcmp(e->addr, key, 16) == 0)
            return e;
        if (!victim || !e->used || (victim->used && e->seen_ms < victim->seen_ms))
            victim = e;
    }
    if (!create)
        return NULL;
    memset(victim, 0, sizeof(*victim));
    memcpy(victim->addr, key, 16);
    victim->used = 1;
    victim->window_ms = now_ms;
    victim->seen_ms = now_ms;
    return victim;
}

uint64_t bans_note_cut(bans_t *b, const struct sockaddr *sa, uint64_t now_ms, uint64_t ban_ms)
{
    uint8_t key[16];
    if (ban_ms == 0 || bans_addr_key(sa, key) < 0)
        return 0;
    entry_t *e = find(b, key, 1, now_ms);
    e->seen_ms = now_ms;
    if (now_ms - e->window_ms > BAN_WINDOW_MS) {
        e->window_ms = now_ms;
        e->cuts = 0;
    }
    if (++e->cuts < BAN_CUTS)
        return 0;
    uint64_t len = ban_ms << (e->bans < MAX_DOUBLINGS ? e->bans : MAX_DOUBLINGS);
    e->bans++;
    e->cuts = 0;
    e->window_ms = now_ms;
    e->until_ms = now_ms + len;
    return len;
}

int bans_is_banned(bans_t *b, const struct sockaddr *sa, uint64_t now_ms)
{
    uint8_t key[16];
    if (bans_addr_key(sa, key) < 0)
        return 0;
    entry_t *e = find(b, key, 0, now_ms);
    return e && e->until_ms > now_ms;
}

unsigned bans_active(bans_t *b, uint64_t now_ms)
{
    unsigned n = 0;
    for (size_t i = 0; i < SLOTS; i++)
        n += b->e[i].used && b->e[i].until_ms > now_ms;
    return n;
}
