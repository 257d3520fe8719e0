/* lockout.h: slowing down, then locking out, failed sign-ins. */
#include "lockout.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char key[80]; /* "" : free */
    int64_t failures;
    int64_t last_ms, until_ms;
} entry_t;

struct lockout {
    /* The panel's own pointer to its settings: a reload swaps them and
     * the counts stay. */
    const panel_settings_t *const *cfg;
    entry_t *e; /* LOCKOUT_KEYS, looked up by a walk: a sign-in is rare */
};

lockout_t *lockout_new(const panel_settings_t *const *cfg)
{
    lockout_t *l = vc_calloc(1, sizeof(*l));
    l->cfg = cfg;
    l->e = vc_calloc(LOCKOUT_KEYS, sizeof(entry_t));
    return l;
}

void lockout_destroy(lockout_t **l)
{
    if (*l == NULL)
        return;
    free((*l)->e);
    free(*l);
    *l = NULL;
}

static entry_t *find(lockout_t *l, const char *key, int make, int64_t now)
{
    entry_t *free_one = NULL, *stalest = NULL;
    for (size_t i = 0; i < LOCKOUT_KEYS; i++) {
        entry_t *e = &l->e[i];
        if (e->key[0] == '\0') {
            if (free_one == NULL)
                free_one = e;
            continue;
        }
        if (strncmp(e->key, key, sizeof(e->key) - 1) == 0)
            return e;
        if (now - e->last_ms > (*l->cfg)->lockout_ms && e->until_ms < now && free_one == NULL)
            free_one = e; /* forgotten anyway */
        if (stalest == NULL || e->last_ms < stalest->last_ms)
            stalest = e;
    }
    if (!make)
        return NULL;
    entry_t *e = free_one ? free_one : stalest;
    memset(e, 0, sizeof(*e));
    strncpy(e->key, key, sizeof(e->key) - 1);
    return e;
}

int64_t lockout_wait(lockout_t *l, const char *key, int64_t now_ms, int *locked)
{
    entry_t *e = find(l, key, 0, now_ms);
    *locked = 0;
    if (e == NULL || e->until_ms <= now_ms)
        return 0;
    *locked = e->failures >= (*l->cfg)->lockout_after;
    return e->until_ms - now_ms;
}

void lockout_failed(lockout_t *l, const char *key, int64_t now_ms)
{
    entry_t *e = find(l, key, 1, now_ms);
    if (now_ms - e->last_ms > (*l->cfg)->lockout_ms && e->until_ms < now_ms)
        e->failures = 0;
    e->failures++;
    e->last_ms = now_ms;
    const panel_settings_t *c = *l->cfg;
    if (e->failures >= c->lockout_after) {
        e->until_ms = now_ms + c->lockout_ms;
    } else if (e->failures >= c->slow_after) {
        int64_t shift = e->failures - c->slow_after, wait = 1000;
        while (shift-- > 0 && wait < c->lockout_ms)
            wait *= 2;
        e->until_ms = now_ms + (wait < c->lockout_ms ? wait : c->lockout_ms);
    }
}

void lockout_passed(lockout_t *l, const char *key)
{
    entry_t *e = find(l, key, 0, 0);
    if (e)
        memset(e, 0, sizeof(*e));
}
