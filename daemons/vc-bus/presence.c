#include "presence.h"
#include "vc_log.h"
#include "vc_names.h"
#include "vc_util.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 1024

/* Who holds a member: a front process here (node 0, its pid, its
 * connections), or another node (its number, conns 1 while it holds). */
typedef struct held {
    uint32_t pid;
    unsigned node;
    unsigned conns;
} held_t;

typedef struct member {
    char *user, *info; /* info: JSON text or NULL */
    held_t *held;      /* per front process */
    size_t nheld;
} member_t;

typedef struct proom {
    vc_named_t named; /* the room's name, in the table */
    member_t *m;
    size_t n;
} proom_t;

struct presence {
    vc_store_t *st;
    presence_calls_t calls;
    vc_names_t rooms;
};

static int clear_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    (void)arg;
    return vc_store_err(mdb_drop(txn, dbi, 0));
}

presence_t *presence_new(vc_store_t *st, presence_calls_t calls)
{
    presence_t *p = vc_calloc(1, sizeof(*p));
    p->st = st;
    p->calls = calls;
    vc_names_init(&p->rooms, NBUCKETS);
    vc_store_write(st, VC_DB_PRESENCE, clear_fn, NULL);
    return p;
}

static void member_free(member_t *m)
{
    free(m->user);
    free(m->info);
    free(m->held);
}

static void room_drop(void *entry)
{
    proom_t *r = entry;
    for (size_t i = 0; i < r->n; i++)
        member_free(&r->m[i]);
    free(r->m);
}

void presence_destroy(presence_t **pp)
{
    presence_t *p = *pp;
    if (p == NULL)
        return;
    vc_names_fini(&p->rooms, room_drop);
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
    MDB_val k = {strlen(r->named.name), (void *)r->named.name};
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
        vc_log(VC_LOG_ERR, "presence", "the members of \"%s\" could not be written", r->named.name);
}

static void emit_member(presence_t *p, const proom_t *r, const member_t *m, int added, const char *except, int to)
{
    if (to == 0)
        return;
    json_t *d = json_pack("{s:s}", "user_id", m->user);
    if (added) {
        json_t *info = m->info ? json_loads(m->info, JSON_DECODE_ANY, NULL) : NULL;
        json_object_set_new(d, "user_info", info ? info : json_null());
    }
    char *text = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    p->calls.member(p->calls.arg, r->named.name, m->user, added, text, except, to);
    free(text);
}

/* The member's connections: on this node only (here), or anywhere. */
static unsigned total(const member_t *m, int here)
{
    unsigned n = 0;
    for (size_t i = 0; i < m->nheld; i++)
        if (!here || m->held[i].node == 0)
            n += m->held[i].conns;
    return n;
}

static proom_t *room_of(presence_t *p, const char *room, int make)
{
    int made;
    return make ? vc_names_get(&p->rooms, room, sizeof(proom_t), &made) : vc_names_find(&p->rooms, room);
}

static held_t *holding(member_t *m, uint32_t pid, unsigned node, int make)
{
    for (size_t k = 0; k < m->nheld; k++)
        if (m->held[k].node == node && (node != 0 || m->held[k].pid == pid))
            return &m->held[k];
    if (!make)
        return NULL;
    m->held = vc_realloc(m->held, (m->nheld + 1) * sizeof(*m->held));
    m->held[m->nheld] = (held_t){pid, node, 0};
    return &m->held[m->nheld++];
}

/* Member i's holdings changed (here and everywhere, before): the other
 * nodes hear of this node's first and last connection, the room of the
 * first and last anywhere (then a member with none goes). */
static void after_change(presence_t *p, proom_t *r, size_t i, unsigned here_before, unsigned all_before,
                         const char *except, int to, int restore)
{
    member_t *m = &r->m[i];
    unsigned here = total(m, 1), all = total(m, 0);
    if ((here_before == 0) != (here == 0))
        p->calls.share(p->calls.arg, r->named.name, m->user, m->info ? m->info : "", here > 0, restore);
    if (all_before == 0 && all > 0)
        emit_member(p, r, m, 1, except, to);
    else if (all_before > 0 && all == 0) {
        emit_member(p, r, m, 0, NULL, to);
        member_free(m);
        r->m[i] = r->m[--r->n];
    }
}

void presence_change(presence_t *p, const char *room, const Vc__MemberChange *c, unsigned node)
{
    if (c->user_id[0] == '\0' || strlen(c->user_id) > 128 || strlen(c->info) > 4096)
        return;
    proom_t *r = room_of(p, room, c->joined);
    if (r == NULL)
        return;
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
    unsigned here = total(m, 1), all = total(m, 0);
    held_t *h = holding(m, c->pid, node, c->joined);
    if (h == NULL)
        return;
    if (c->joined) {
        h->conns = node ? 1 : h->conns + 1;
        free(m->info);
        m->info = c->info[0] ? vc_strdup(c->info) : NULL;
    } else if (h->conns > 0) {
        h->conns = node ? 0 : h->conns - 1;
    }
    /* A front's restore changes nothing anyone saw; another node's tells
     * this node's clients what they missed, but the app heard it then. */
    int to = !c->restore ? PRESENCE_CLIENTS | PRESENCE_HOOKS : node ? PRESENCE_CLIENTS : 0;
    after_change(p, r, i, here, all, c->socket_id, to, c->restore);
    save(p, r);
}

/* Sets to 0 the holdings that match (a front process gone, a node gone). */
typedef int (*gone_fn)(const held_t *h, unsigned node);

typedef struct dropping {
    presence_t *p;
    gone_fn gone;
    unsigned node;
} dropping_t;

static int drop_from(void *entry, void *arg)
{
    dropping_t *d = arg;
    proom_t *r = entry;
    int changed = 0;
    for (size_t i = r->n; i-- > 0;) {
        member_t *m = &r->m[i];
        unsigned here = total(m, 1), all = total(m, 0);
        for (size_t k = 0; k < m->nheld; k++)
            if (m->held[k].conns && d->gone(&m->held[k], d->node)) {
                m->held[k].conns = 0;
                changed = 1;
            }
        after_change(d->p, r, i, here, all, NULL, PRESENCE_CLIENTS | PRESENCE_HOOKS, 0);
    }
    if (changed)
        save(d->p, r);
    return 0;
}

static void drop_holdings(presence_t *p, gone_fn gone, unsigned node)
{
    dropping_t d = {p, gone, node};
    vc_names_each(&p->rooms, drop_from, &d);
}

static int front_gone(const held_t *h, unsigned node)
{
    (void)node;
    return h->node == 0 && kill((pid_t)h->pid, 0) != 0 && errno == ESRCH;
}

static int of_node(const held_t *h, unsigned node)
{
    return h->node == node;
}

void presence_sweep(presence_t *p)
{
    drop_holdings(p, front_gone, 0);
}

void presence_forget_node(presence_t *p, unsigned node)
{
    if (node != 0)
        drop_holdings(p, of_node, node);
}

static int share_room(void *entry, void *arg)
{
    presence_t *p = arg;
    proom_t *r = entry;
    for (size_t i = 0; i < r->n; i++)
        if (total(&r->m[i], 1) > 0)
            p->calls.share(p->calls.arg, r->named.name, r->m[i].user, r->m[i].info ? r->m[i].info : "", 1, 1);
    return 0;
}

void presence_share_all(presence_t *p)
{
    vc_names_each(&p->rooms, share_room, p);
}
