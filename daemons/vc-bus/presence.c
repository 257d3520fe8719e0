#include "presence.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 1024

typedef struct held {
    uint32_t pid;
    unsigned conns;
} held_t;

typedef struct member {
    char *user, *info; /* info: JSON text or NULL */
    held_t *held;      /* per front process */
    size_t nheld;
} member_t;

typedef struct proom {
    struct proom *next;
    member_t *m;
    size_t n;
    char name[];
} proom_t;

struct presence {
    vc_store_t *st;
    presence_emit_fn emit;
    void *arg;
    proom_t *buckets[NBUCKETS];
};

static uint32_t hash(const char *s)
{
    return vc_hash_str(s) & (NBUCKETS - 1);
}

static int clear_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    (void)arg;
    return vc_store_err(mdb_drop(txn, dbi, 0));
}

presence_t *presence_new(vc_store_t *st, presence_emit_fn emit, void *arg)
{
    presence_t *p = vc_calloc(1, sizeof(*p));
    p->st = st;
    p->emit = emit;
    p->arg = arg;
    vc_store_write(st, VC_DB_PRESENCE, clear_fn, NULL);
    return p;
}

static void member_free(member_t *m)
{
    free(m->user);
    free(m->info);
    free(m->held);
}

void presence_destroy(presence_t **pp)
{
    presence_t *p = *pp;
    if (p == NULL)
        return;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (proom_t *r = p->buckets[b], *next; r; r = next) {
            next = r->next;
            for (size_t i = 0; i < r->n; i++)
                member_free(&r->m[i]);
            free(r->m);
            free(r);
        }
    free(p);
    *pp = NULL;
}

typedef struct save_ctx {
    const proom_t *r;
} save_ctx_t;

/* The room's members as {user: info} under its name; none: no key. */
static int save_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    const proom_t *r = ((save_ctx_t *)arg)->r;
    MDB_val k = {strlen(r->name), (void *)r->name};
    if (r->n == 0) {
        int rc = mdb_del(txn, dbi, &k, NULL);
        return rc == 0 || rc == MDB_NOTFOUND ? 0 : vc_store_err(rc);
    }
    json_t *o = json_object();
    for (size_t i = 0; i < r->n; i++) {
        json_t *info = r->m[i].info ? json_loads(r->m[i].info, JSON_DECODE_ANY, NULL) : NULL;
        json_object_set_new(o, r->m[i].user, info ? info : json_null());
    }
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    MDB_val v = {strlen(text), text};
    int rc = mdb_put(txn, dbi, &k, &v, 0);
    free(text);
    return rc ? vc_store_err(rc) : 0;
}

static void save(presence_t *p, const proom_t *r)
{
    save_ctx_t c = {r};
    if (vc_store_write(p->st, VC_DB_PRESENCE, save_fn, &c) < 0)
        vc_log(VC_LOG_ERR, "presence", "the members of \"%s\" could not be written", r->name);
}

static void emit_member(presence_t *p, const proom_t *r, const member_t *m, int added, const char *except)
{
    json_t *d = json_pack("{s:s}", "user_id", m->user);
    if (added) {
        json_t *info = m->info ? json_loads(m->info, JSON_DECODE_ANY, NULL) : NULL;
        json_object_set_new(d, "user_info", info ? info : json_null());
    }
    char *text = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    p->emit(p->arg, r->name, m->user, added, text, except);
    free(text);
}

static unsigned total(const member_t *m)
{
    unsigned n = 0;
    for (size_t i = 0; i < m->nheld; i++)
        n += m->held[i].conns;
    return n;
}

/* A member with no connection left goes, and the room hears of it. */
static void drop_if_gone(presence_t *p, proom_t *r, size_t i)
{
    if (total(&r->m[i]) > 0)
        return;
    emit_member(p, r, &r->m[i], 0, NULL);
    member_free(&r->m[i]);
    r->m[i] = r->m[--r->n];
}

void presence_change(presence_t *p, const char *room, const Vc__MemberChange *c)
{
    if (c->user_id[0] == '\0' || strlen(c->user_id) > 128 || strlen(c->info) > 4096)
        return;
    uint32_t b = hash(room);
    proom_t *r = p->buckets[b];
    while (r && strcmp(r->name, room) != 0)
        r = r->next;
    if (r == NULL) {
        if (!c->joined)
            return;
        size_t n = strlen(room);
        r = vc_calloc(1, sizeof(*r) + n + 1);
        memcpy(r->name, room, n);
        r->next = p->buckets[b];
        p->buckets[b] = r;
    }
    size_t i = 0;
    while (i < r->n && strcmp(r->m[i].user, c->user_id) != 0)
        i++;
    if (i == r->n) {
        if (!c->joined)
            return;
        r->m = vc_realloc(r->m, (r->n + 1) * sizeof(*r->m));
        r->m[r->n++] = (member_t){.user = vc_strdup(c->user_id)};
    }
    member_t *m = &r->m[i];
    size_t k = 0;
    while (k < m->nheld && m->held[k].pid != c->pid)
        k++;
    if (c->joined) {
        int first = total(m) == 0;
        if (k == m->nheld) {
            m->held = vc_realloc(m->held, (m->nheld + 1) * sizeof(*m->held));
            m->held[m->nheld++] = (held_t){c->pid, 0};
        }
        m->held[k].conns++;
        free(m->info);
        m->info = c->info[0] ? vc_strdup(c->info) : NULL;
        if (first && !c->restore) /* a restore changes nothing clients saw */
            emit_member(p, r, m, 1, c->socket_id);
    } else if (k < m->nheld && m->held[k].conns > 0) {
        m->held[k].conns--;
        drop_if_gone(p, r, i);
    }
    save(p, r);
}

void presence_sweep(presence_t *p)
{
    for (size_t b = 0; b < NBUCKETS; b++)
        for (proom_t *r = p->buckets[b]; r; r = r->next) {
            int changed = 0;
            for (size_t i = r->n; i-- > 0;) {
                member_t *m = &r->m[i];
                for (size_t k = 0; k < m->nheld; k++)
                    if (m->held[k].conns && kill((pid_t)m->held[k].pid, 0) != 0 && errno == ESRCH) {
                        m->held[k].conns = 0;
                        changed = 1;
                    }
                if (changed)
                    drop_if_gone(p, r, i);
            }
            if (changed)
                save(p, r);
        }
}
