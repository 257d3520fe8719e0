/* A table of entries found by name (vc_names.h). */
#include "vc_names.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

void vc_names_init(vc_names_t *t, size_t buckets)
{
    VC_ASSERT(buckets > 0 && (buckets & (buckets - 1)) == 0);
    t->buckets = vc_calloc(buckets, sizeof(*t->buckets));
    t->mask = buckets - 1;
    t->n = 0;
}

static vc_named_t **slot(const vc_names_t *t, const char *name)
{
    vc_named_t **at = &t->buckets[vc_hash_str(name) & t->mask];
    while (*at && strcmp((*at)->name, name) != 0)
        at = &(*at)->next;
    return at;
}

void *vc_names_find(const vc_names_t *t, const char *name)
{
    return *slot(t, name);
}

void *vc_names_get(vc_names_t *t, const char *name, size_t size, int *made)
{
    VC_ASSERT(size >= sizeof(vc_named_t));
    vc_named_t **at = slot(t, name);
    *made = *at == NULL;
    if (*at == NULL) {
        vc_named_t *e = vc_calloc(1, size);
        e->name = vc_strdup(name);
        *at = e; /* at the chain's end */
        t->n++;
    }
    return *at;
}

void vc_names_remove(vc_names_t *t, void *entry)
{
    vc_named_t *e = entry, **at = slot(t, e->name);
    VC_ASSERT(*at == e);
    *at = e->next;
    t->n--;
    free(e->name);
    free(e);
}

void vc_names_each(vc_names_t *t, int (*fn)(void *entry, void *arg), void *arg)
{
    for (size_t b = 0; b <= t->mask; b++)
        for (vc_named_t *e = t->buckets[b], *next; e; e = next) {
            next = e->next; /* fn may remove e */
            if (fn(e, arg))
                return;
        }
}

void vc_names_fini(vc_names_t *t, void (*drop)(void *entry))
{
    if (t->buckets == NULL)
        return;
    for (size_t b = 0; b <= t->mask; b++)
        for (vc_named_t *e = t->buckets[b], *next; e; e = next) {
            next = e->next;
            if (drop)
                drop(e);
            free(e->name);
            free(e);
        }
    free(t->buckets);
    memset(t, 0, sizeof(*t));
}
