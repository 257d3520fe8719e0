/*
 * vc-mesh: this node in the cluster (mesh.h, docs/cluster.md). Run by
 * `vc up` only when cluster.node is set.
 */
#include "mesh.h"
#include "vc_confstore.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_loop.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* Purges vc-cache may queue while this daemon is busy. */
#define IN_HWM 100000

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)cmd;
    mesh_t *m = arg;
    size_t up = 0;
    for (size_t i = 0; i < m->nnodes; i++)
        up += m->nodes[i].state == NODE_UP;
    vc_reply_ok(reply, "vc-mesh is running: node %s, NATS %s, %zu of %zu nodes up", m->cfg->node, link_state(m), up,
                m->nnodes);
    /* Healthy when it runs: a node cut off from NATS serves on, and says
     * so in nats and in the message. */
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "node", "%s", m->cfg->node);
    vc_reply_field(reply, "nats", "%s", link_state(m));
    vc_reply_field(reply, "nodes_up", "%zu", up);
    vc_reply_field(reply, "nodes_known", "%zu", m->nnodes);
    vc_reply_field(reply, "reconnects", "%llu", (unsigned long long)m->reconnects);
    vc_reply_field(reply, "purges_sent", "%llu", (unsigned long long)m->purges_sent);
    vc_reply_field(reply, "purges_applied", "%llu", (unsigned long long)m->purges_applied);
    vc_reply_field(reply, "purges_failed", "%llu", (unsigned long long)m->purges_failed);
    vc_reply_field(reply, "rooms_sent", "%llu", (unsigned long long)m->rooms_sent);
    vc_reply_field(reply, "rooms_shared", "%llu", (unsigned long long)m->rooms_shared);
    vc_reply_field(reply, "room_webhooks_here", "%s", m->hooks_told == 1 ? "yes" : "no");
    vc_reply_field(reply, "rooms_received", "%llu", (unsigned long long)m->rooms_received);
    vc_reply_field(reply, "rooms_dropped", "%llu", (unsigned long long)m->rooms_dropped);
    vc_reply_field(reply, "malformed", "%llu", (unsigned long long)m->malformed);
    vc_reply_field(reply, "replay_lag_ms", "%lld", (long long)m->replay_lag_ms);
    vc_reply_field(reply, "cache_held", "%d", m->held);
    vc_reply_field(reply, "certs_shared", "%llu", (unsigned long long)m->certs_shared);
    vc_reply_field(reply, "certs_handed", "%llu", (unsigned long long)m->certs_handed);
    vc_reply_field(reply, "answers_sent", "%llu", (unsigned long long)m->answers_sent);
    vc_reply_field(reply, "answers_applied", "%llu", (unsigned long long)m->answers_applied);
    static const char *const sched[SCHED_COUNTS] = {"schedule_taken", "schedule_elsewhere", "schedule_skipped",
                                                    "schedule_lost", "schedule_unreachable"};
    for (int i = 0; i < SCHED_COUNTS; i++)
        vc_reply_field(reply, sched[i], "%llu", (unsigned long long)m->sched_count[i]);
    /* What the purge stream still keeps (asked of JetStream: a second at
     * most, for a status only). */
    jsStreamInfo *si = NULL;
    if (m->ready && js_GetStreamInfo(&si, m->js, VC_MESH_PURGES, NULL, NULL) == NATS_OK) {
        vc_reply_field(reply, "purges_kept", "%llu", (unsigned long long)si->State.Msgs);
        jsStreamInfo_Destroy(si);
    }
}

static void on_nodes(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)cmd;
    mesh_t *m = arg;
    vc_reply_ok(reply, "%zu nodes known; NATS %s", m->nnodes, link_state(m));
    vc_reply_field(reply, "nats", "%s", link_state(m));
    roster_reply(m, reply);
}

static void on_peers(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    if (cmd->n_args != 1) {
        vc_reply_fail(reply, "usage: peers SITE");
        return;
    }
    roster_peers_reply(arg, cmd->args[0], reply);
}

/* The sites this node lists in the roster follow the stored configuration
 * at once; the link's settings (cluster.*) apply at a restart, as do the
 * rest: the link and its buckets are set up with them. */
static void on_reload(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)cmd;
    mesh_t *m = arg;
    char err[512];
    vc_config_t *cfg = vc_confstore_load(m->d.data_dir, err, sizeof(err));
    if (cfg == NULL) {
        vc_reply_fail(reply, "%s", err);
        return;
    }
    roster_take(m, cfg);
    schedules_take(m, cfg);
    vc_config_destroy(&cfg);
    vc_reply_ok(reply, "the roster lists this node's %zu sites; cluster.* settings apply at a restart", m->nsites);
}

static const vc_verb_t verbs[] = {
    {"status", "", "this node, its link to NATS, the nodes up, purges sent and applied", on_status},
    {"ping", "", "as status", on_status},
    {"nodes", "", "the roster: each node, its state, when last heard", on_nodes},
    {"reload", "", "list the stored configuration's sites in the roster", on_reload},
    {"peers", "SITE", "(vc-fed) the other nodes, up or suspect, that serve SITE", on_peers},
    {"cert-lock", "SITE HOSTS NOT_AFTER", "(vc-acme) may this node order SITE's certificate: held, busy or have",
     certs_lock_verb},
    {"cert-unlock", "SITE", "(vc-acme) this node's order of SITE's certificate is over", certs_unlock_verb},
    {"cert-answer", "put|del TYPE NAME [VALUE]", "(vc-acme) a challenge's answer, for every node", certs_answer_verb},
    {"cert-answered", "ASK", "(vc-acme) how many nodes have the answer cert-answer sent", certs_answered_verb},
    {"cert-share", "SITE HOSTS NOT_AFTER CERT KEY", "(vc-acme) an issued pair, for every node", certs_share_verb},
};

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
}

static void link_changed(mesh_t *m)
{
    int now = natsConnection_Status(m->nc) == NATS_CONN_STATUS_CONNECTED;
    if (now == m->connected)
        return;
    m->connected = now;
    m->reconnects += now;
    vc_log(now ? VC_LOG_NOTICE : VC_LOG_WARN, "link", "NATS %s", now ? "connected" : "lost; reconnecting");
    vc_bus_publish(m->d.bus, VC_EVENT(MESH_LINK_CHANGED), now ? VC__SEVERITY__NOTICE : VC__SEVERITY__WARNING, "state",
                   now ? "connected" : "disconnected", NULL);
    if (now) {
        link_setup(m);
        m->next_beat_ms = 0; /* say so at once */
        roster_beat(m);
        rooms_share_soon(m); /* what was said while away is lost (core subjects) */
    }
}

/* What libnats's threads queued. */
static void on_inbox(void *arg)
{
    mesh_t *m = arg;
    for (vc_nats_item_t *it = vc_nats_inbox_take(&m->inbox), *next; it; it = next) {
        next = it->next;
        switch (it->kind) {
        case INBOX_LINK: link_changed(m); break;
        case INBOX_ROSTER: roster_heard(m, it->msg); break;
        case INBOX_PURGE: purges_heard(m, it->msg); break;
        case INBOX_ROOM: rooms_heard(m, it->msg); break;
        case INBOX_SHARE: rooms_share_heard(m, it->msg); break;
        case INBOX_CERT: certs_heard(m, it->msg); break;
        case INBOX_ANSWER: certs_answer_heard(m, it->msg); break;
        case INBOX_ANSWER_REPLY: certs_reply_heard(m, it->msg); break;
        case INBOX_RESEND:
            purges_refused(m, it->msg);
            it->msg = NULL;
            break;
        }
        if (it->msg)
            natsMsg_Destroy(it->msg);
        free(it);
    }
}

static void tick(void *arg)
{
    mesh_t *m = arg;
    link_setup(m);
    roster_beat(m);
    roster_check(m);
    catchup_tick(m);
    purges_resend(m);
    rooms_shared_tick(m);
    certs_answers_tick(m);
    metrics_tick(m);
}

int main(int argc, char **argv)
{
    mesh_t m = {.magic = MESH_MAGIC};
    vc_daemon_load(&m.d, "vc-mesh", argc, argv);
    if (sodium_init() < 0)
        return 1;
    m.cfg = vc_mesh_settings_of(m.d.cfg);
    if (m.cfg->node[0] == '\0') {
        vc_log(VC_LOG_CRIT, "main", "cluster.node is not set: this machine is not in a cluster");
        return 1;
    }
    m.started_ms = vc_wall_ms();
    roster_take(&m, m.d.cfg);
    schedules_take(&m, m.d.cfg);
    m.held = 1; /* vc-cache starts held in a cluster */
    m.hooks_told = -1;
    char why[512];
    m.can_seal = vc_mesh_seal_key(m.cfg, m.seal_key, why, sizeof(why)) == 0;
    if (!m.can_seal && m.cfg->secret_file[0])
        vc_log(VC_LOG_ERR, "certs", "certificates are not shared with the other nodes: %s", why);
    if (vc_nats_inbox_init(&m.inbox) < 0) {
        vc_log(VC_LOG_CRIT, "main", "eventfd() failed: %m");
        return 1;
    }
    vc_daemon_start(&m.d, on_command, &m);
    char *in_ep = vc_config_endpoint(m.d.cfg, "mesh-in");
    m.in = vc_socket_hwm(m.d.zctx, ZMQ_PULL, in_ep, 1, 0, IN_HWM);
    if (m.in == NULL) {
        vc_log(VC_LOG_CRIT, "main", "zmq_bind() failed while opening \"%s\": %s", in_ep, zmq_strerror(errno));
        return 1;
    }
    free(in_ep);
    if (rooms_bridge_open(&m) < 0 || schedules_open(&m) < 0 || link_open(&m) < 0)
        return 1;
    if (stall_start(&m) < 0) {
        vc_log(VC_LOG_CRIT, "main", "pthread_create() failed");
        return 1;
    }
    vc_daemon_ready(&m.d); /* the link sets itself up from the loop */

    const vc_watch_t watch[] = {{NULL, m.inbox.fd, on_inbox},
                                {m.in, 0, purges_from_cache},
                                {m.rooms_sub, 0, rooms_from_bus},
                                {m.sched_sub, 0, schedules_from_bus}};
    /* The tick is the heartbeat's grain: a tenth of it, so silence is seen
     * within a tenth of the bounds. */
    unsigned grain = (unsigned)(m.cfg->heartbeat_ms / 10 > 50 ? m.cfg->heartbeat_ms / 10 : 50);
    vc_loop_t loop = {.ctl = m.d.ctl,
                      .sigfd = m.d.sigfd,
                      .arg = &m,
                      .watch = watch,
                      .nwatch = VC_ARRAY_SIZE(watch),
                      .tick = tick,
                      .tick_ms = grain};
    vc_loop_run(&loop);
    vc_log(VC_LOG_INFO, "main", "stopping");
    stall_stop(&m);
    certs_fini(&m);
    schedules_fini(&m);
    link_close(&m);
    vc_nats_inbox_fini(&m.inbox);
    rooms_bridge_close(&m);
    purges_fini(&m);
    roster_fini(&m);
    zmq_close(m.in);
    vc_daemon_fini(&m.d);
    nats_Close();
    return 0;
}
