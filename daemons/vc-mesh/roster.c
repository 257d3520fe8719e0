/*
 * The roster (mesh.h): each node writes its entry into the roster bucket
 * every cluster.heartbeat, and hears everyone's writes live on the
 * bucket's subjects. A node heard from is up; silent for
 * cluster.suspect_after it is suspect, for cluster.gone_after gone (and
 * the bucket, whose entries live as long, drops it too). Each change is
 * an event on this node's bus. Failure is judged by each node from what
 * it hears, not agreed on: a node cut off sees the others suspect, and
 * they see it so.
 */
#include "mesh.h"
#include "mesh_wire.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[] = {"up", "suspect", "gone"};

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void roster_take(mesh_t *m, const vc_config_t *cfg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    free_list(m->sites, m->nsites);
    m->sites = vc_calloc(cfg->nsites + 2, sizeof(char *));
    m->nsites = 0;
    if (cfg->config_releases) /* it follows the configuration releases: vc-fed hands them here */
        m->sites[m->nsites++] = vc_strdup(VC_CONFIG_RELEASE_SITE);
    for (size_t i = 0; i < cfg->nsites && m->nsites < MESH_SITES_MAX; i++)
        m->sites[m->nsites++] = vc_strdup(cfg->sites[i].name);
    m->config_version = cfg->version;
    m->next_beat_ms = 0; /* told at once */
}

void roster_beat(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    uint64_t now = vc_mono_ms();
    if (!m->ready || now < m->next_beat_ms)
        return;
    m->next_beat_ms = now + (uint64_t)m->cfg->heartbeat_ms;
    const vc_config_t *cfg = m->d.cfg;
    Vc__MeshNode n = VC__MESH_NODE__INIT;
    n.node = m->cfg->node;
    n.version = VC_VERSION;
    n.addresses = cfg->listen;
    n.n_addresses = cfg->nlisten < MESH_ADDRESSES_MAX ? cfg->nlisten : MESH_ADDRESSES_MAX;
    n.sites = m->sites;
    n.n_sites = m->nsites;
    double load[1] = {0};
    if (getloadavg(load, 1) == 1)
        n.load = load[0];
    char version[24];
    snprintf(version, sizeof(version), "%llu", (unsigned long long)m->config_version);
    n.config = version;
    n.at_ms = vc_wall_ms();
    n.started_ms = m->started_ms;
    size_t len = vc__mesh_node__get_packed_size(&n);
    uint8_t *buf = vc_malloc(len ? len : 1);
    vc__mesh_node__pack(&n, buf);
    natsStatus s = kvStore_Put(NULL, m->roster, m->cfg->node, buf, (int)len);
    if (s == NATS_OK)
        m->beat_ok_ms = vc_mono_ms();
    else
        vc_log(VC_LOG_DEBUG, "roster", "heartbeat not written: %s", natsStatus_GetText(s));
    free(buf);
}

static node_t *find(mesh_t *m, const char *name)
{
    for (size_t i = 0; i < m->nnodes; i++)
        if (strcmp(m->nodes[i].name, name) == 0)
            return &m->nodes[i];
    return NULL;
}

static char **copy_list(char *const *v, size_t n)
{
    char **c = vc_calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        c[i] = vc_strdup(v[i]);
    return c;
}

static void take_entry(node_t *d, const Vc__MeshNode *e)
{
    free(d->version);
    free(d->config);
    free_list(d->addresses, d->naddresses);
    free_list(d->sites, d->nsites);
    d->version = vc_strdup(e->version);
    d->config = vc_strdup(e->config);
    d->addresses = copy_list(e->addresses, e->n_addresses);
    d->naddresses = e->n_addresses;
    d->sites = copy_list(e->sites, e->n_sites);
    d->nsites = e->n_sites;
    d->load = e->load;
    d->at_ms = e->at_ms;
    d->started_ms = e->started_ms;
}

void roster_heard(mesh_t *m, natsMsg *msg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    const char *subject = natsMsg_GetSubject(msg);
    const char *prefix = "$KV." VC_MESH_ROSTER ".";
    if (strncmp(subject, prefix, strlen(prefix)) != 0)
        return;
    const char *key = subject + strlen(prefix);
    if (natsMsg_GetDataLength(msg) == 0)
        return; /* a delete or a purge of the key: its silence will tell */
    char why[128];
    Vc__MeshNode *e = mesh_node_read(key, natsMsg_GetData(msg), (size_t)natsMsg_GetDataLength(msg), why, sizeof(why));
    if (e == NULL) {
        if (m->malformed++ == 0)
            vc_log(VC_LOG_WARN, "roster", "dropped a roster entry for \"%.64s\": %s", key, why);
        return;
    }
    node_t *d = find(m, e->node);
    if (d == NULL) {
        VC_GROW(m->nodes, m->capnodes, m->nnodes + 1, 8);
        d = &m->nodes[m->nnodes++];
        memset(d, 0, sizeof(*d));
        snprintf(d->name, sizeof(d->name), "%s", e->node);
        d->state = NODE_GONE; /* so that it joins below */
    }
    take_entry(d, e);
    d->seen_ms = vc_mono_ms();
    if (d->state != NODE_UP) {
        int joined = d->state == NODE_GONE;
        d->state = NODE_UP;
        rooms_node_up(m); /* it missed what was said while it was away */
        certs_node_up(m);
        char *addrs = d->naddresses ? vc_strdup(d->addresses[0]) : vc_strdup("");
        for (size_t i = 1; i < d->naddresses; i++) {
            char *a = vc_asprintf("%s,%s", addrs, d->addresses[i]);
            free(addrs);
            addrs = a;
        }
        if (joined) {
            vc_log(VC_LOG_NOTICE, "roster", "node %s joined (%s)", d->name, addrs);
            vc_bus_publish(m->d.bus, VC_EVENT(MESH_NODE_JOINED), VC__SEVERITY__NOTICE, "node", d->name, "version",
                           d->version, "addresses", addrs, NULL);
        } else {
            vc_log(VC_LOG_NOTICE, "roster", "node %s is heard again", d->name);
        }
        free(addrs);
    }
    vc__mesh_node__free_unpacked(e, NULL);
}

void roster_check(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    uint64_t now = vc_mono_ms();
    /* This process stood still (stopped, a paused machine): the others
     * were not silent for that long, it was not listening (stall.c). */
    uint64_t stalled = stall_since_last(m);
    for (size_t i = 0; i < m->nnodes; i++) /* heard since it woke, or silent since it stalled */
        m->nodes[i].seen_ms = m->nodes[i].seen_ms + stalled < now ? m->nodes[i].seen_ms + stalled : now;
    for (size_t i = 0; i < m->nnodes; i++) {
        node_t *d = &m->nodes[i];
        if (strcmp(d->name, m->cfg->node) == 0 && m->ready)
            continue; /* this node: its own link's state says more */
        uint64_t silent = now - d->seen_ms;
        node_state_t want = silent >= (uint64_t)m->cfg->gone_ms      ? NODE_GONE
                            : silent >= (uint64_t)m->cfg->suspect_ms ? NODE_SUSPECT
                                                                     : NODE_UP;
        if (want <= d->state)
            continue;
        d->state = want;
        char ms[24];
        snprintf(ms, sizeof(ms), "%llu", (unsigned long long)silent);
        vc_log(VC_LOG_WARN, "roster", "node %s is %s: silent for %s ms", d->name, state_names[want], ms);
        vc_bus_publish(m->d.bus, want == NODE_GONE ? VC_EVENT(MESH_NODE_LEFT) : VC_EVENT(MESH_NODE_SUSPECT),
                       VC__SEVERITY__WARNING, "node", d->name, "silent_ms", ms, NULL);
        if (want == NODE_GONE)
            rooms_node_gone(m, d->name);
    }
}

void roster_reply(const mesh_t *m, Vc__Reply *reply)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < m->nnodes; i++) {
        const node_t *d = &m->nodes[i];
        Vc__Record *rec = vc_reply_record(reply);
        vc_record_field(rec, "node", "%s", d->name);
        vc_record_field(rec, "state", "%s", state_names[d->state]);
        vc_record_field(rec, "self", "%d", strcmp(d->name, m->cfg->node) == 0);
        vc_record_field(rec, "silent_ms", "%llu", (unsigned long long)(now - d->seen_ms));
        vc_record_field(rec, "version", "%s", d->version ? d->version : "");
        vc_record_field(rec, "config", "%s", d->config ? d->config : "");
        vc_record_field(rec, "load", "%.2f", d->load);
        vc_record_field(rec, "addresses", "%s", d->naddresses ? d->addresses[0] : "");
        vc_record_field(rec, "sites", "%zu", d->nsites);
        vc_record_field(rec, "started_ms", "%lld", (long long)d->started_ms);
    }
}

void roster_peers_reply(const mesh_t *m, const char *site, Vc__Reply *reply)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    size_t n = 0;
    for (size_t i = 0; i < m->nnodes; i++) {
        const node_t *d = &m->nodes[i];
        if (d->state == NODE_GONE || strcmp(d->name, m->cfg->node) == 0)
            continue;
        for (size_t k = 0; k < d->nsites; k++)
            if (strcmp(d->sites[k], site) == 0) {
                vc_record_field(vc_reply_record(reply), "node", "%s", d->name);
                n++;
                break;
            }
    }
    vc_reply_ok(reply, "%zu other nodes serve site \"%s\"", n, site);
}

void roster_fini(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    for (size_t i = 0; i < m->nnodes; i++) {
        node_t *d = &m->nodes[i];
        free(d->version);
        free(d->config);
        free_list(d->addresses, d->naddresses);
        free_list(d->sites, d->nsites);
    }
    free(m->nodes);
    m->nodes = NULL;
    free_list(m->sites, m->nsites);
    m->sites = NULL;
    m->nnodes = m->capnodes = 0;
}

int roster_node_up(const mesh_t *m, const char *name)
{
    for (size_t i = 0; i < m->nnodes; i++)
        if (strcmp(m->nodes[i].name, name) == 0)
            return m->nodes[i].state != NODE_GONE;
    return 0;
}
