#ifndef VC_KEYS_H
#define VC_KEYS_H
/*
 * A table of the caller's entries found by a 64-bit hash or id (a request
 * by its id, a cache flight by its key's hash, a peer by its address's):
 * chained buckets, each entry a vc_keyed_t member of the caller's struct
 * (VC_CONTAINER back to it). Where two keys may share a hash, the finder
 * says which entry is the one (same). The entries stay the caller's: the
 * table neither allocates nor frees them. Names have vc_names.h.
 */
#include <stddef.h>
#include <stdint.h>

typedef struct vc_keyed {
    struct vc_keyed *next;
    uint64_t hash;
} vc_keyed_t;

typedef struct vc_keys {
    vc_keyed_t **buckets;
    size_t mask; /* buckets - 1 */
    size_t n;    /* entries */
} vc_keys_t;

/* An empty table of `buckets` chains (a power of two). */
void vc_keys_init(vc_keys_t *t, size_t buckets);
/* Frees the chains (not the entries, which are the caller's). */
void vc_keys_fini(vc_keys_t *t);
/* Adds e under hash (several entries may share one). */
void vc_keys_add(vc_keys_t *t, vc_keyed_t *e, uint64_t hash);
/* The first entry under hash that same(entry, arg) accepts (same NULL:
 * the first under hash), or NULL. */
vc_keyed_t *vc_keys_find(const vc_keys_t *t, uint64_t hash, int (*same)(const vc_keyed_t *e, const void *arg),
                         const void *arg);
/* Takes e out: 1, or 0 if it was not in the table. */
int vc_keys_remove(vc_keys_t *t, vc_keyed_t *e);

/* Every entry, as e (a vc_keyed_t *); none may be added or removed
 * meanwhile. */
#define VC_KEYS_EACH(t, e)                                                                                             \
    for (size_t e##_bucket = 0; e##_bucket <= (t)->mask; e##_bucket++)                                                 \
        for (vc_keyed_t *e = (t)->buckets[e##_bucket]; e; e = e->next)

#endif
