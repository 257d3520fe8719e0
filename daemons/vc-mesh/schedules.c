/*
 * Schedules across the cluster (docs/background.md, "In a cluster"): each
 * site.schedule entry runs on one node a minute. Every node's vc-php says
 * when a minute of an entry is due (php.schedule.due, on this node's bus);
 * this module takes the entry's key in the vc_schedules bucket by
 * compare-and-set and, when it got it, asks its pool to run that minute
 * (vc-php's schedule-run). A pool holds no credential of the cluster's, so
 * the lock is taken here, and the pool is asked back over its control
 * socket, as vc-fed asks it to run a release hook.
 *
 * An entry's key ("s.HEX": a hash of the site and its cron line, so that
 * the same line on every node is one key) holds who ran which minute:
 *   "NODE MINUTE running STARTED_MS"   or   "NODE MINUTE done STARTED_MS"
 * A minute already taken by any node is not run again. A run still going
 * on a node that is up is not overlapped (the minute is skipped, as on one
 * node). A run on a node that went away mid-run is noticed
 * (mesh.schedule.lost) and the minute goes ahead here. A run's end
 * (php.schedule.finished or .failed from its pool) marks it done; a run
 * older than its site's schedule_timeout and a minute is taken as over
 * (its pool stopped it then), whatever the key says (with no timeout, a
 * run on a node that is up is never taken as over).
 *
 * Only one node tries for an entry: its home, the node (up or suspect in
 * the roster, serving the site) that ranks first for the entry's key by a
 * hash of the key and the node's name (rendezvous hashing), so the entries
 * spread over the nodes and a node's going moves only its own. The
 * compare-and-set guards the moments the nodes' rosters disagree; it is
 * not enough alone with Debian 12's nats-server 2.9.10, whose replicated
 * streams may accept two updates made at the same revision at once
 * (nats-server issue 4320, fixed in 2.9.21): three nodes racing for every
 * minute ran some twice in our tests.
 */
#include "mesh.h"
#include "mesh_wire.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* A pool answers schedule-run at once (it only forks). */
#define RUN_CALL_MS 3000
/* Keys untouched this long go: an entry removed leaves nothing behind. */
#define BUCKET_TTL_MS (8LL * 24 * 3600 * 1000)

/* One schedule entry of a site, as this node's configuration has it. */
struct mesh_entry {
    char *site, *name, *pool; /* name: vc-php's ("schedule:N"); pool: its daemon ("vc-php", "vc-php.NAME") */
    char key[2 + 2 * 16 + 1];
    int64_t timeout_ms;
};

static void forget(mesh_t *m)
{
    for (size_t i = 0; i < m->nsched; i++) {
        free(m->sched[i].site);
        free(m->sched[i].name);
        free(m->sched[i].pool);
    }
    free(m->sched);
    m->sched = NULL;
    m->nsched = 0;
}

void schedules_take(mesh_t *m, const vc_config_t *cfg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    forget(m);
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        for (size_t k = 0; k < s->nschedule; k++) {
            m->sched = vc_realloc(m->sched, (m->nsched + 1) * sizeof(*m->sched));
            mesh_entry_t *e = &m->sched[m->nsched++];
            e->site = vc_strdup(s->name);
            e->name = vc_asprintf("schedule:%zu", k + 1);
            int named = s->pool && strcmp(s->pool, "default") != 0;
            e->pool = vc_asprintf("vc-php%s%s", named ? "." : "", named ? s->pool : "");
            e->timeout_ms = s->schedule_timeout_ms;
            unsigned char h[16];
            crypto_generichash_state st;
            crypto_generichash_init(&st, NULL, 0, sizeof(h));
            crypto_generichash_update(&st, (const unsigned char *)s->name, strlen(s->name) + 1);
            crypto_generichash_update(&st, (const unsigned char *)s->schedule[k], strlen(s->schedule[k]));
            crypto_generichash_final(&st, h, sizeof(h));
            memcpy(e->key, "s.", 2);
            sodium_bin2hex(e->key + 2, sizeof(e->key) - 2, h, sizeof(h));
        }
    }
}

int schedules_open(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    char *out = vc_config_endpoint(m->d.cfg, "bus-out");
    m->sched_sub = vc_socket(m->d.zctx, ZMQ_SUB, out, 0);
    if (m->sched_sub == NULL) {
        vc_log(VC_LOG_CRIT, "schedule", "cannot read vc-bus's events (\"%s\"): %s", out, zmq_strerror(errno));
        free(out);
        return -1;
    }
    free(out);
    const char *const topics[] = {VC_EVENT(PHP_SCHEDULE_DUE), VC_EVENT(PHP_SCHEDULE_FINISHED),
                                  VC_EVENT(PHP_SCHEDULE_FAILED)};
    for (size_t i = 0; i < VC_ARRAY_SIZE(topics); i++)
        zmq_setsockopt(m->sched_sub, ZMQ_SUBSCRIBE, topics[i], strlen(topics[i]));
    return 0;
}

natsStatus schedules_setup(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (m->schedules)
        return NATS_OK;
    return vc_nats_kv_bucket(&m->schedules, m->js, VC_MESH_SCHEDULES, m->cfg->replicas, BUCKET_TTL_MS);
}

/* The entry an event names, if its sender is that entry's pool (the bus
 * has checked the sender is the pool it says). */
static const mesh_entry_t *entry_of(const mesh_t *m, const Vc__Envelope *ev, const char *site, const char *name)
{
    for (size_t i = 0; i < m->nsched; i++) {
        const mesh_entry_t *e = &m->sched[i];
        if (!strcmp(e->site, site) && !strcmp(e->name, name))
            return strcmp(e->pool, ev->source) == 0 ? e : NULL;
    }
    return NULL;
}

/* The key's value (mesh_wire.h): 0, or -1 if it is not one this module
 * writes (then it is taken over). */
static int held_read(kvEntry *k, mesh_sched_value_t *h)
{
    return mesh_sched_read(kvEntry_Value(k), (size_t)kvEntry_ValueLen(k), h);
}

static void count(mesh_t *m, int which)
{
    m->sched_count[which]++;
}

/* Takes minute of e for this node: 1 if it is this node's to run. */
static int take(mesh_t *m, const mesh_entry_t *e, long long minute)
{
    const char *me = m->cfg->node;
    long long now = (long long)vc_wall_ms();
    mesh_sched_value_t mine = {.minute = minute, .started_ms = now, .running = 1};
    snprintf(mine.node, sizeof(mine.node), "%s", me);
    char value[MESH_SCHED_VALUE_MAX];
    mesh_sched_write(&mine, value, sizeof(value));
    uint64_t rev = 0;
    kvEntry *k = NULL;
    natsStatus s = kvStore_Get(&k, m->schedules, e->key);
    if (s == NATS_NOT_FOUND)
        return kvStore_Create(&rev, m->schedules, e->key, value, (int)strlen(value)) == NATS_OK;
    if (s != NATS_OK) {
        vc_log(VC_LOG_WARN, "schedule", "%s/%s: minute %lld not run here: the cluster's lock could not be read (%s)",
               e->site, e->name, minute, natsStatus_GetText(s));
        count(m, SCHED_UNREACHABLE);
        return 0;
    }
    mesh_sched_value_t h = {0};
    int known = held_read(k, &h) == 0, won = 0;
    if (known && h.minute >= minute) {
        count(m, SCHED_ELSEWHERE); /* taken already (by this node or another) */
    } else if (known && h.running && strcmp(h.node, me) != 0 && roster_node_up(m, h.node) &&
               (e->timeout_ms == 0 || now - h.started_ms < e->timeout_ms + 60000)) {
        count(m, SCHED_SKIPPED);
        vc_log(VC_LOG_WARN, "schedule", "%s/%s skipped minute %lld: its run of minute %lld still runs on node %s",
               e->site, e->name, minute, h.minute, h.node);
    } else {
        won = kvStore_Update(&rev, m->schedules, e->key, value, (int)strlen(value), kvEntry_Revision(k)) == NATS_OK;
        if (won && known && h.running && strcmp(h.node, me) != 0 && !roster_node_up(m, h.node)) {
            char hm[24];
            snprintf(hm, sizeof(hm), "%lld", h.minute);
            count(m, SCHED_LOST);
            vc_log(VC_LOG_WARN, "schedule",
                   "%s/%s: its run of minute %lld on node %s did not end before that node went away; minute %lld runs "
                   "here",
                   e->site, e->name, h.minute, h.node, minute);
            vc_bus_publish(m->d.bus, VC_EVENT(MESH_SCHEDULE_LOST), VC__SEVERITY__WARNING, "site", e->site, "name",
                           e->name, "minute", hm, "node", h.node, NULL);
        }
        if (!won)
            count(m, SCHED_ELSEWHERE); /* another node updated it first */
    }
    kvEntry_Destroy(k);
    return won;
}

/* How entry e ranks node for its home (higher first). */
static uint64_t rank(const mesh_entry_t *e, const char *node)
{
    unsigned char h[8];
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof(h));
    crypto_generichash_update(&st, (const unsigned char *)e->key, strlen(e->key) + 1);
    crypto_generichash_update(&st, (const unsigned char *)node, strlen(node));
    crypto_generichash_final(&st, h, sizeof(h));
    uint64_t r = 0;
    for (size_t i = 0; i < sizeof(h); i++)
        r = r << 8 | h[i];
    return r;
}

/* Whether this node is e's home: no other node that serves its site and
 * is not gone ranks above it. */
static int home(const mesh_t *m, const mesh_entry_t *e)
{
    uint64_t mine = rank(e, m->cfg->node);
    for (size_t i = 0; i < m->nnodes; i++) {
        const node_t *d = &m->nodes[i];
        if (d->state == NODE_GONE || strcmp(d->name, m->cfg->node) == 0)
            continue;
        for (size_t k = 0; k < d->nsites; k++)
            if (strcmp(d->sites[k], e->site) == 0) {
                uint64_t theirs = rank(e, d->name);
                if (theirs > mine || (theirs == mine && strcmp(d->name, m->cfg->node) < 0))
                    return 0;
                break;
            }
    }
    return 1;
}

/* A minute due on this node. */
static void due(mesh_t *m, const mesh_entry_t *e, const char *minute_text)
{
    char *end = NULL;
    long long minute = strtoll(minute_text, &end, 10);
    if (*end || minute <= 0)
        return;
    if (m->schedules == NULL || !m->ready || !m->connected) {
        count(m, SCHED_UNREACHABLE);
        vc_log(VC_LOG_WARN, "schedule", "%s/%s: minute %lld not run here: this node is not linked to the cluster",
               e->site, e->name, minute);
        return;
    }
    if (!home(m, e)) {
        count(m, SCHED_ELSEWHERE);
        return;
    }
    if (!take(m, e, minute))
        return;
    count(m, SCHED_TAKEN);
    vc_log(VC_LOG_INFO, "schedule", "%s/%s: minute %lld runs on this node", e->site, e->name, minute);
    vc_bus_publish(m->d.bus, VC_EVENT(MESH_SCHEDULE_TAKEN), VC__SEVERITY__INFO, "site", e->site, "name", e->name,
                   "minute", minute_text, NULL);
    const char *args[3] = {e->site, e->name, minute_text};
    char err[256];
    if (mesh_call(m, e->pool, "schedule-run", args, 3, RUN_CALL_MS, err, sizeof(err)) != NULL) {
        vc_log(VC_LOG_WARN, "schedule", "%s/%s: minute %lld was this node's, but %s did not run it: %s", e->site,
               e->name, minute, e->pool, err);
        schedules_ended(m, e); /* nothing runs: the next minute need not wait */
    }
}

void schedules_ended(mesh_t *m, const mesh_entry_t *e)
{
    if (m->schedules == NULL)
        return;
    kvEntry *k = NULL;
    mesh_sched_value_t h = {0};
    if (kvStore_Get(&k, m->schedules, e->key) != NATS_OK)
        return;
    if (held_read(k, &h) == 0 && h.running && strcmp(h.node, m->cfg->node) == 0) {
        char value[MESH_SCHED_VALUE_MAX];
        uint64_t rev = 0;
        h.running = 0;
        mesh_sched_write(&h, value, sizeof(value));
        kvStore_Update(&rev, m->schedules, e->key, value, (int)strlen(value), kvEntry_Revision(k));
    }
    kvEntry_Destroy(k);
}

static const char *field(const Vc__Envelope *ev, const char *key)
{
    for (size_t i = 0; i < ev->n_fields; i++)
        if (strcmp(ev->fields[i]->key, key) == 0)
            return ev->fields[i]->value;
    return NULL;
}

static void on_event(mesh_t *m, const char *topic, const Vc__Envelope *ev)
{
    const char *site = field(ev, "site"), *name = field(ev, "name");
    const mesh_entry_t *e = site && name ? entry_of(m, ev, site, name) : NULL;
    if (e == NULL)
        return; /* not an entry of this node's configuration, or not from its pool */
    if (strcmp(topic, VC_EVENT(PHP_SCHEDULE_DUE)) == 0) {
        const char *minute = field(ev, "minute");
        if (minute)
            due(m, e, minute);
    } else {
        schedules_ended(m, e);
    }
}

void schedules_from_bus(void *arg)
{
    mesh_t *m = arg;
    vc_zparts_t fr = {0};
    int n;
    while ((n = vc_zparts_recv(m->sched_sub, &fr, ZMQ_DONTWAIT)) > 0) {
        if (n == 2) { /* the topic, then the envelope (one frame: the bus's welcome) */
            char topic[64];
            size_t tl = zmq_msg_size(&fr.f[0]);
            snprintf(topic, sizeof(topic), "%.*s", (int)(tl < sizeof(topic) ? tl : sizeof(topic) - 1),
                     (const char *)zmq_msg_data(&fr.f[0]));
            Vc__Envelope *ev = vc__envelope__unpack(NULL, zmq_msg_size(&fr.f[1]), zmq_msg_data(&fr.f[1]));
            if (ev) {
                on_event(m, topic, ev);
                vc__envelope__free_unpacked(ev, NULL);
            }
        }
        vc_zparts_close(&fr);
    }
    vc_zparts_fini(&fr);
}

void schedules_fini(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    forget(m);
    if (m->sched_sub)
        zmq_close(m->sched_sub);
    m->sched_sub = NULL;
    if (m->schedules)
        kvStore_Destroy(m->schedules);
    m->schedules = NULL;
}
