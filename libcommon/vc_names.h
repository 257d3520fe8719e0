#ifndef VC_NAMES_H
#define VC_NAMES_H
/*
 * A table of entries found by name (a room's, a channel's), on vc_keys
 * (the names' vc_hash_str). An entry is the caller's struct with a
 * vc_named_t as its first member; the table makes it (zeroed, its name
 * copied) and frees it, and never moves it, so a pointer to one stays
 * good until it is removed.
 */
#include "vc_keys.h"

#include <stddef.h>

typedef struct vc_named {
    vc_keyed_t link;
    char *name;
} vc_named_t;

typedef struct vc_names {
    vc_keys_t keys;
    size_t n; /* entries */
} vc_names_t;

/* An empty table of `buckets` chains (a power of two). */
void vc_names_init(vc_names_t *t, size_t buckets);
/* Frees every entry, after drop(entry) if drop is not NULL, and the table. */
void vc_names_fini(vc_names_t *t, void (*drop)(void *entry));
/* The entry named name, or NULL. */
void *vc_names_find(const vc_names_t *t, const char *name);
/* The entry named name; if none, a new one of size bytes (zeroed, its name
 * set), and *made is set to 1 (else 0). */
void *vc_names_get(vc_names_t *t, const char *name, size_t size, int *made);
/* Takes entry out of the table and frees it (what it holds is the
 * caller's to free first). */
void vc_names_remove(vc_names_t *t, void *entry);
/* Calls fn(entry, arg) for each entry, in no order, until fn returns
 * nonzero; fn may remove the entry it is given (and no other). */
void vc_names_each(vc_names_t *t, int (*fn)(void *entry, void *arg), void *arg);

#endif
