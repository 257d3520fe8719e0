/*
 * Presence and occupancy across nodes (mesh.h, docs/cluster.md). Each
 * node's vc-bus counts its own fronts' members and rooms, and puts its
 * node's first and last of each on rooms-out; rooms_bridge.c carries
 * them to the other nodes' vc-bus, which count them as the node's. What
 * this file adds is when:
 *  - when a node comes up (joins, or is heard again after a silence),
 *    every node tells all it holds: what was said while it was away went
 *    nowhere, and the others may have forgotten what it held while it
 *    alone thought nothing happened (its own loop stopped). The node that
 *    hears it come up tells all it holds and asks the others to (on
 *    "vc.share.NODE"). These are restores, which change nothing where
 *    they are known;
 *  - a node the roster says is gone loses what it held, on every node:
 *    its members leave, its rooms may be vacated;
 *  - a vc-bus that restarted lost the others' holds: its vc-mesh asks
 *    them to tell all again;
 *  - one node posts the apps' occupancy and presence webhooks, so that
 *    each fires once for the cluster: the first node by name that is up.
 *    A node cut off from the others posts for itself.
 */
#include "mesh.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>

/* vc-bus is told again whether it posts the webhooks this often (it may
 * have restarted, and a new bus posts them). */
#define HOOKS_AGAIN_MS 2000
/* vc-bus answers at once; the loop is not held longer than this. */
#define BUS_TIMEOUT_MS 1000
#define BUS_WARN_MS 10000

void rooms_share_soon(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    m->rooms_share_due = 1;
}

static const char *bus_call(mesh_t *m, const char *verb, const char *arg, char *err, size_t errlen)
{
    const char *why = mesh_call(m, "vc-bus", verb, &arg, arg ? 1 : 0, BUS_TIMEOUT_MS, err, errlen);
    uint64_t now = vc_mono_ms();
    if (why && now >= m->next_bus_warn_ms) {
        m->next_bus_warn_ms = now + BUS_WARN_MS;
        vc_log(VC_LOG_WARN, "rooms", "vc-bus did not take %s%s%s: %s", verb, arg ? " " : "", arg ? arg : "", why);
    }
    return why;
}

void rooms_node_gone(mesh_t *m, const char *node)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    char err[256];
    bus_call(m, "rooms-forget", node, err, sizeof(err));
}

/* Every other node tells all it holds (they hear "vc.share.NODE"). */
static void ask_all(mesh_t *m)
{
    if (!m->connected)
        return;
    char subject[sizeof(VC_MESH_SHARE_SUBJECT) + VC_MESH_NODE_MAX];
    snprintf(subject, sizeof(subject), VC_MESH_SHARE_SUBJECT "%s", m->cfg->node);
    natsConnection_Publish(m->nc, subject, NULL, 0);
}

void rooms_node_up(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    rooms_share_soon(m);
    ask_all(m);
}

void rooms_bus_welcome(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (!m->bus_welcomed) { /* the first: vc-mesh linked to its bus */
        m->bus_welcomed = 1;
        return;
    }
    m->hooks_told = -1;
    rooms_share_soon(m);
    ask_all(m);
    vc_log(VC_LOG_NOTICE, "rooms", "vc-bus restarted: the other nodes are asked what they hold");
}

void rooms_share_heard(mesh_t *m, natsMsg *msg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    const char *subject = natsMsg_GetSubject(msg);
    if (strcmp(subject + strlen(VC_MESH_SHARE_SUBJECT), m->cfg->node) != 0)
        rooms_share_soon(m);
}

/* Whether this node posts the webhooks: no node up before it by name. */
static int hooks_here(const mesh_t *m)
{
    for (size_t i = 0; i < m->nnodes; i++)
        if (m->nodes[i].state == NODE_UP && strcmp(m->nodes[i].name, m->cfg->node) < 0)
            return 0;
    return 1;
}

void rooms_shared_tick(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    char err[256];
    if (m->rooms_share_due && m->connected && m->ready && bus_call(m, "rooms-share", NULL, err, sizeof(err)) == NULL) {
        m->rooms_share_due = 0;
        m->rooms_shared++;
    }
    uint64_t now = vc_mono_ms();
    int here = hooks_here(m);
    if (here == m->hooks_told && now < m->next_hooks_ms)
        return;
    m->next_hooks_ms = now + HOOKS_AGAIN_MS;
    if (bus_call(m, "rooms-hooks", here ? "on" : "off", err, sizeof(err)) == NULL)
        m->hooks_told = here;
}
