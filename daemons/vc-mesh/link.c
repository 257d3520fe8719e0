/* The NATS connection (mesh.h): options from cluster.*, callbacks that
 * only queue, and what is set up once it is up. */
#include "mesh.h"
#include "vc_log.h"
#include "vc_nats.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_link_event(natsConnection *nc, void *closure)
{
    (void)nc;
    vc_nats_inbox_push(&((mesh_t *)closure)->inbox, INBOX_LINK, NULL);
}

static void on_roster_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc, (void)sub;
    vc_nats_inbox_push(&((mesh_t *)closure)->inbox, INBOX_ROSTER, msg);
}

/* JetStream did not store a purge this node published: back to the loop,
 * which sends it again (pae->Msg taken: the library does not free it). */
static void on_publish_failed(jsCtx *js, jsPubAckErr *pae, void *closure)
{
    (void)js;
    vc_nats_inbox_push(&((mesh_t *)closure)->inbox, INBOX_RESEND, pae->Msg);
    pae->Msg = NULL;
}

static void on_purge_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc, (void)sub;
    vc_nats_inbox_push(&((mesh_t *)closure)->inbox, INBOX_PURGE, msg);
}

int link_open(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (vc_nats_connect(&m->nc, m->cfg, "vc-mesh", on_link_event, m) != NATS_OK)
        return -1;
    m->connected = natsConnection_Status(m->nc) == NATS_CONN_STATUS_CONNECTED;
    return 0;
}

void link_durable(const mesh_t *m, char *name, size_t len)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    snprintf(name, len, "purges_%s", m->cfg->node);
}

/* The purge stream: every node's purges, kept purge_keep, a purge's id
 * remembered for duplicates as long (a retried publish is stored once). */
static natsStatus purge_stream(mesh_t *m)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    const char *subjects[] = {VC_MESH_PURGE_SUBJECT ">"};
    sc.Name = VC_MESH_PURGES;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.MaxAge = m->cfg->purge_keep_ms * 1000000; /* ns */
    sc.Duplicates = (m->cfg->purge_keep_ms < 120000 ? m->cfg->purge_keep_ms : 120000) * 1000000;
    sc.Storage = js_FileStorage;
    sc.Replicas = m->cfg->replicas;
    jsErrCode je = 0;
    natsStatus s = js_AddStream(NULL, m->js, &sc, NULL, &je);
    if (s != NATS_OK && je == JSStreamNameExistErr)
        s = js_UpdateStream(NULL, m->js, &sc, NULL, &je);
    return s;
}

/* This node's durable consumer: across restarts of vc-mesh and outages of
 * the link, it resumes where it stopped, so what was missed is replayed. */
static natsStatus purge_consumer(mesh_t *m)
{
    char durable[VC_MESH_NODE_MAX + 8];
    link_durable(m, durable, sizeof(durable));
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = VC_MESH_PURGES;
    so.ManualAck = true;
    so.Config.Durable = durable;
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.DeliverPolicy = js_DeliverAll;
    so.Config.AckWait = 30LL * 1000000000;
    jsErrCode je = 0;
    return js_Subscribe(&m->purge_sub, m->js, VC_MESH_PURGE_SUBJECT ">", on_purge_msg, m, NULL, &so, &je);
}

/* How often the setup is tried again while JetStream is not there yet (a
 * cluster of servers elects its leader first), and how often it says so. */
#define SETUP_RETRY_MS 500
#define SETUP_WARN_MS 10000

void link_setup(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    uint64_t now = vc_mono_ms();
    if (m->ready || !m->connected || now < m->next_setup_ms)
        return;
    m->next_setup_ms = now + SETUP_RETRY_MS;
    natsStatus s = NATS_OK;
    const char *step = "JetStream";
    if (m->js == NULL) {
        /* Each call waits this long at most: the loop is not held longer. */
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = 1000;
        jo.PublishAsync.ErrHandler = on_publish_failed;
        jo.PublishAsync.ErrHandlerClosure = m;
        s = natsConnection_JetStream(&m->js, m->nc, &jo);
    }
    /* Rooms first: whoever hears this node's first heartbeat may tell it
     * what it holds at once. */
    if (s == NATS_OK && m->room_sub == NULL && (step = "the rooms' subjects"))
        s = rooms_bridge_subscribe(m);
    if (s == NATS_OK && m->roster == NULL) {
        step = "the roster bucket";
        kvStore *made = NULL; /* a silent node's entry goes after gone_after */
        s = vc_nats_kv_bucket(&made, m->js, VC_MESH_ROSTER, m->cfg->replicas, m->cfg->gone_ms);
        if (made)
            kvStore_Destroy(made);
        /* Through a context of its own that waits a heartbeat at most: a
         * heartbeat JetStream does not store (a leader cut off) must not
         * hold the loop longer, nor the cache hold that follows. */
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = m->cfg->heartbeat_ms;
        if (s == NATS_OK && m->js_beat == NULL)
            s = natsConnection_JetStream(&m->js_beat, m->nc, &jo);
        if (s == NATS_OK)
            s = js_KeyValue(&m->roster, m->js_beat, VC_MESH_ROSTER);
    }
    /* Live heartbeats, as the bucket stores them (its subjects). */
    if (s == NATS_OK && m->roster_sub == NULL && (step = "the roster's subjects"))
        s = natsConnection_Subscribe(&m->roster_sub, m->nc, "$KV." VC_MESH_ROSTER ".>", on_roster_msg, m);
    if (s == NATS_OK && (step = "the purge stream"))
        s = purge_stream(m);
    if (s == NATS_OK && (step = "the certificates' bucket"))
        s = certs_setup(m);
    if (s == NATS_OK && (step = "the schedules' bucket"))
        s = schedules_setup(m);
    if (s == NATS_OK && m->purge_sub == NULL && (step = "this node's purge consumer")) {
        catchup_before_consumer(m);
        s = purge_consumer(m);
    }
    if (s != NATS_OK) {
        if (now >= m->next_setup_warn_ms) {
            m->next_setup_warn_ms = now + SETUP_WARN_MS;
            const char *detail = nats_GetLastError(NULL);
            vc_log(VC_LOG_WARN, "link", "setting up %s: %s%s%s%s; trying again every %d ms", step,
                   natsStatus_GetText(s), detail ? " (" : "", detail ? detail : "", detail ? ")" : "", SETUP_RETRY_MS);
        }
        return;
    }
    m->ready = 1;
    rooms_share_soon(m);
    vc_log(VC_LOG_INFO, "link", "in the cluster as \"%s\"", m->cfg->node);
}

const char *link_state(const mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (m->nc == NULL)
        return "closed";
    switch (natsConnection_Status(m->nc)) {
    case NATS_CONN_STATUS_CONNECTED: return m->ready ? "connected" : "setting-up";
    case NATS_CONN_STATUS_CONNECTING: return "connecting";
    case NATS_CONN_STATUS_RECONNECTING: return "reconnecting";
    case NATS_CONN_STATUS_DISCONNECTED: return "disconnected";
    default: return "closed";
    }
}

void link_close(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (m->roster_sub)
        natsSubscription_Destroy(m->roster_sub);
    if (m->purge_sub) /* unsubscribing would delete the durable consumer */
        natsSubscription_Destroy(m->purge_sub);
    if (m->room_sub)
        natsSubscription_Destroy(m->room_sub);
    if (m->share_sub)
        natsSubscription_Destroy(m->share_sub);
    if (m->roster)
        kvStore_Destroy(m->roster);
    if (m->js)
        jsCtx_Destroy(m->js);
    if (m->js_beat)
        jsCtx_Destroy(m->js_beat);
    m->js_beat = NULL;
    if (m->nc) {
        natsConnection_Close(m->nc);
        natsConnection_Destroy(m->nc);
    }
    m->roster_sub = m->purge_sub = m->room_sub = m->share_sub = NULL;
    m->roster = NULL;
    m->js = NULL;
    m->nc = NULL;
}
