/* A table of entries found by name (vc_names.h), on vc_keys. */
#include "vc_names.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

void vc_names_init(vc_names_t *t, size_t buckets)
{
    vc_keys_init(&t->keys, buckets);
    t->n = 0;
}

static int same_name(const vc_keyed_t *k, const void *name)
{
    return strcmp(VC_CONTAINER(k, vc_named_t, link)->name, name) == 0;
}

void *vc_names_find(const vc_names_t *t, const char *name)
{
    vc_keyed_t *k = vc_keys_find(&t->keys, vc_hash_str(name), same_name, name);
    return k ? VC_CONTAINER(k, vc_named_t, link) : NULL;
}

void *vc_names_get(vc_names_t *t, const char *name, size_t size, int *made)
{
    VC_ASSERT(size >= sizeof(vc_named_t));
    vc_named_t *e = vc_names_find(t, name);
    *made = e == NULL;
    if (e == NULL) {
        e = vc_calloc(1, size);
        e->name = vc_strdup(name);
        vc_keys_add(&t->keys, &e->link, vc_hash_str(name));
        t->n++;
    }
    return e;
}

void vc_names_remove(vc_names_t *t, void *entry)
{
    vc_named_t *e = entry;
    int listed = vc_keys_remove(&t->keys, &e->link);
    VC_ASSERT(listed);
    t->n--;
    free(e->name);
    free(e);
}

void vc_names_each(vc_names_t *t, int (*fn)(void *entry, void *arg), void *arg)
{
    for (size_t b = 0; b <= t->keys.mask; b++)
        for (vc_keyed_t *k = t->keys.buckets[b], *next; k; k = next) {
            next = k->next; /* fn may remove this one */
            if (fn(VC_CONTAINER(k, vc_named_t, link), arg))
                return;
        }
}

void vc_names_fini(vc_names_t *t, void (*drop)(void *entry))
{
    if (t->keys.buckets == NULL)
        return;
    for (size_t b = 0; b <= t->keys.mask; b++)
        for (vc_keyed_t *k = t->keys.buckets[b], *next; k; k = next) {
            next = k->next;
            vc_named_t *e = VC_CONTAINER(k, vc_named_t, link);
            if (drop)
                drop(e);
            free(e->name);
            free(e);
        }
    vc_keys_fini(&t->keys);
    t->n = 0;
}
