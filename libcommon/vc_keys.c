/* A table of the caller's entries found by a 64-bit hash (vc_keys.h). */
#include "vc_keys.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

void vc_keys_init(vc_keys_t *t, size_t buckets)
{
    VC_ASSERT(buckets > 0 && (buckets & (buckets - 1)) == 0);
    t->buckets = vc_calloc(buckets, sizeof(*t->buckets));
    t->mask = buckets - 1;
    t->n = 0;
}

void vc_keys_fini(vc_keys_t *t)
{
    free(t->buckets);
    memset(t, 0, sizeof(*t));
}

void vc_keys_add(vc_keys_t *t, vc_keyed_t *e, uint64_t hash)
{
    vc_keyed_t **b = &t->buckets[hash & t->mask];
    e->hash = hash;
    e->next = *b;
    *b = e;
    t->n++;
}

vc_keyed_t *vc_keys_find(const vc_keys_t *t, uint64_t hash, int (*same)(const vc_keyed_t *e, const void *arg),
                         const void *arg)
{
    for (vc_keyed_t *e = t->buckets[hash & t->mask]; e; e = e->next)
        if (e->hash == hash && (same == NULL || same(e, arg)))
            return e;
    return NULL;
}

int vc_keys_remove(vc_keys_t *t, vc_keyed_t *e)
{
    if (t->buckets == NULL)
        return 0; /* a table already ended */
    for (vc_keyed_t **at = &t->buckets[e->hash & t->mask]; *at; at = &(*at)->next)
        if (*at == e) {
            *at = e->next;
            e->next = NULL;
            t->n--;
            return 1;
        }
    return 0;
}
