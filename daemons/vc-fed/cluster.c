/*
 * vc-fed in a cluster (fed.h, docs/deploys.md): its own link to NATS,
 * with the same cluster.* settings as vc-mesh. Through it:
 *
 * - the other nodes' vc-fed call this one's verbs on "vc.fed.call.NODE"
 *   (a packed Command, answered with a packed Reply): a libnats thread
 *   hands each to this daemon's own control socket, so a call from a node
 *   runs exactly as one from `vc deploy`, on the daemon's one loop. Only
 *   the verbs that stage a release are taken (PEER_VERBS), and a list
 *   of this node's releases (holders.c); a release is
 *   still believed only with a signature from a key this node trusts;
 * - the "vc_fed" key-value bucket holds each site's release pointer and
 *   what each node made of it (together.c), watched here;
 * - this node's vc-mesh, which hears the roster, says which nodes serve a
 *   site.
 *
 * NATS carries it all, over TLS with the cluster's credentials, as every
 * other message between nodes: no second port, certificate or secret to
 * set up, and a node behind NAT needs no inbound port (docs/deploys.md).
 */
#include "fed.h"
#include "vc_log.h"
#include "vc_nats.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define SETUP_RETRY_MS 500
/* How long a call to another node waits. A node that dies with a call
 * in flight never answers it (NATS tells nothing), so the bound is what a
 * dead node costs: fed.peer_timeout (10 s) for a chunk of a file or a
 * manifest, 2 minutes for a commit, which hashes every file of the
 * release. */
#define FED_SUBJECT_MAX (sizeof(FED_CALL_SUBJECT) + VC_MESH_NODE_MAX)
#define PEER_COMMIT_MS 120000

/* What another node may ask of this one. */
static const char *const PEER_VERBS[] = {"manifest", "stage", "object", "delta", "commit", "spread", "releases"};

struct fed_cluster {
    /* Of cluster.*, copied: a reload replaces the configuration, and the
     * link keeps what it was opened with. */
    char *node;
    int64_t replicas;
    int64_t call_ms; /* fed.peer_timeout */
    vc_nats_inbox_t inbox;
    natsConnection *nc;
    jsCtx *js;
    kvStore *bucket;
    natsSubscription *call_sub, *watch_sub;
    int ready;
    uint64_t next_setup_ms, next_warn_ms;
    void *zctx;   /* the calling threads' sockets to this daemon */
    char *own_ep; /* this daemon's control endpoint */
};

int cluster_on(const fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    return f->cl != NULL;
}

const char *cluster_node(const fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    return f->cl ? f->cl->node : "";
}

/* What another node may call: the staging verbs, and this node's own
 * list of releases ("releases SITE here": never one that asks further). */
static int peer_verb(const Vc__Command *cmd)
{
    if (strcmp(cmd->verb, "releases") == 0)
        return cmd->n_args == 2 && strcmp(cmd->args[1], "here") == 0;
    for (size_t i = 0; i < VC_ARRAY_SIZE(PEER_VERBS); i++)
        if (strcmp(cmd->verb, PEER_VERBS[i]) == 0)
            return 1;
    return 0;
}

static void respond(natsConnection *nc, natsMsg *msg, const Vc__Reply *r)
{
    const char *to = natsMsg_GetReply(msg);
    if (to == NULL)
        return; /* published, not asked: nobody waits */
    size_t len = vc__reply__get_packed_size(r);
    uint8_t *buf = vc_malloc(len ? len : 1);
    vc__reply__pack(r, buf);
    natsConnection_Publish(nc, to, buf, (int)len);
    free(buf);
}

/* On a libnats thread: another node's call, run by this daemon's loop. */
static void on_call(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)sub;
    fed_cluster_t *cl = closure;
    Vc__Command *cmd =
        vc__command__unpack(NULL, (size_t)natsMsg_GetDataLength(msg), (const uint8_t *)natsMsg_GetData(msg));
    Vc__Reply *r = NULL, refused = VC__REPLY__INIT;
    if (cmd == NULL || !peer_verb(cmd)) {
        vc_log(VC_LOG_WARN, "cluster", "refused a call from another node: %s",
               cmd ? "not a verb a node may call" : "not a command");
        refused.message = cmd ? "not a verb another node may call" : "not a command";
    } else {
        int rc = vc_ctl_call_payload(cl->zctx, cl->own_ep, cmd->verb, (const char *const *)cmd->args, cmd->n_args,
                                     cmd->payload.data, cmd->payload.len, PEER_COMMIT_MS, &r);
        if (rc < 0)
            refused.message = (char *)vc_strerror(rc);
    }
    respond(nc, msg, r ? r : &refused);
    if (r)
        vc__reply__free_unpacked(r, NULL);
    if (cmd)
        vc__command__free_unpacked(cmd, NULL);
    natsMsg_Destroy(msg);
}

static void on_bucket_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc, (void)sub;
    vc_nats_inbox_push(&((fed_cluster_t *)closure)->inbox, FED_ITEM_BUCKET, msg);
}

/* A command for node's call subject, packed (the caller frees it). */
static uint8_t *pack_call(const char *node, const char *verb, const char *const *args, size_t nargs,
                          const void *payload, size_t plen, size_t *len, char subject[FED_SUBJECT_MAX])
{
    Vc__Command cmd = vc_ctl_command(verb, args, nargs, payload, plen);
    *len = vc__command__get_packed_size(&cmd);
    uint8_t *buf = vc_malloc(*len ? *len : 1);
    vc__command__pack(&cmd, buf);
    snprintf(subject, FED_SUBJECT_MAX, "%s%s", FED_CALL_SUBJECT, node);
    return buf;
}

int cluster_call(fed_t *f, const char *node, const char *verb, const char *const *args, size_t nargs,
                 const void *payload, size_t plen, Vc__Reply **r, char *why, size_t wlen)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    *r = NULL;
    size_t len;
    char subject[FED_SUBJECT_MAX];
    uint8_t *buf = pack_call(node, verb, args, nargs, payload, plen, &len, subject);
    natsMsg *answer = NULL;
    natsStatus s = natsConnection_Request(&answer, f->cl->nc, subject, buf, (int)len,
                                          strcmp(verb, "commit") ? f->cl->call_ms : PEER_COMMIT_MS);
    free(buf);
    if (s == NATS_OK)
        *r = vc__reply__unpack(NULL, (size_t)natsMsg_GetDataLength(answer), (const uint8_t *)natsMsg_GetData(answer));
    if (answer)
        natsMsg_Destroy(answer);
    if (s != NATS_OK)
        snprintf(why, wlen, "node %s: %s", node,
                 s == NATS_NO_RESPONDERS ? "its vc-fed is not in the cluster" : natsStatus_GetText(s));
    else if (*r == NULL)
        snprintf(why, wlen, "node %s answered what is not a reply", node);
    return *r ? 0 : -1;
}

void cluster_ask(fed_t *f, const char *node, const char *verb, const char *const *args, size_t nargs)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    size_t len;
    char subject[FED_SUBJECT_MAX];
    uint8_t *buf = pack_call(node, verb, args, nargs, NULL, 0, &len, subject);
    natsStatus s = natsConnection_Publish(f->cl->nc, subject, buf, (int)len);
    free(buf);
    if (s != NATS_OK)
        vc_log(VC_LOG_WARN, "cluster", "cannot ask node %s to %s: %s", node, verb, natsStatus_GetText(s));
}

/* The other nodes whose roster entry lists the site, as this node's
 * vc-mesh knows them: it hears every heartbeat. (A listing of the roster
 * bucket's keys missed a node whose entry was rewritten while it was
 * read.) */
int cluster_peers(fed_t *f, const char *site, char ***out, size_t *n, char *why, size_t wlen)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    *out = NULL;
    *n = 0;
    char *ep = vc_config_endpoint(f->d.cfg, "ctl-vc-mesh");
    const char *args[] = {site};
    Vc__Reply *r = NULL;
    int rc = vc_ctl_call(f->d.zctx, ep, "peers", args, 1, 5000, &r);
    free(ep);
    if (rc < 0 || !r->ok) {
        snprintf(why, wlen, "cannot tell which nodes serve site \"%s\": vc-mesh %s", site,
                 rc < 0 ? vc_strerror(rc) : r->message);
        if (r)
            vc__reply__free_unpacked(r, NULL);
        return -1;
    }
    *out = vc_calloc(r->n_records + 1, sizeof(char *));
    for (size_t i = 0; i < r->n_records; i++) {
        const char *node = vc_record_get(r->records[i], "node");
        if (node && vc_mesh_node_name_ok(node))
            (*out)[(*n)++] = vc_strdup(node);
    }
    vc__reply__free_unpacked(r, NULL);
    return 0;
}

void cluster_peers_free(char **peers, size_t n)
{
    for (size_t i = 0; peers && i < n; i++)
        free(peers[i]);
    free(peers);
}

kvStore *cluster_bucket(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    return f->cl && f->cl->ready ? f->cl->bucket : NULL;
}

static natsStatus setup(fed_cluster_t *cl, const char **step)
{
    natsStatus s = NATS_OK;
    if (cl->js == NULL && (*step = "JetStream")) {
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = 2000; /* each call holds the loop this long at most */
        s = natsConnection_JetStream(&cl->js, cl->nc, &jo);
    }
    if (s == NATS_OK && cl->call_sub == NULL && (*step = "this node's call subject")) {
        char subject[FED_SUBJECT_MAX];
        snprintf(subject, sizeof(subject), "%s%s", FED_CALL_SUBJECT, cl->node);
        s = natsConnection_Subscribe(&cl->call_sub, cl->nc, subject, on_call, cl);
    }
    if (s == NATS_OK && cl->bucket == NULL && (*step = "the releases' bucket")) {
        s = vc_nats_kv_bucket(&cl->bucket, cl->js, FED_BUCKET, cl->replicas, 0);
    }
    if (s == NATS_OK && cl->watch_sub == NULL && (*step = "the releases' bucket's subjects")) {
        s = vc_nats_kv_watch(&cl->watch_sub, cl->js, FED_BUCKET, ">", on_bucket_msg, cl);
    }
    return s;
}

void cluster_tick(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    fed_cluster_t *cl = f->cl;
    uint64_t now = vc_mono_ms();
    if (cl == NULL || cl->ready || now < cl->next_setup_ms ||
        natsConnection_Status(cl->nc) != NATS_CONN_STATUS_CONNECTED)
        return;
    cl->next_setup_ms = now + SETUP_RETRY_MS;
    const char *step = "";
    natsStatus s = setup(cl, &step);
    if (s != NATS_OK) {
        if (now >= cl->next_warn_ms) {
            cl->next_warn_ms = now + 10000;
            vc_log(VC_LOG_WARN, "cluster", "setting up %s: %s; trying again every %d ms", step, natsStatus_GetText(s),
                   SETUP_RETRY_MS);
        }
        return;
    }
    cl->ready = 1;
    vc_log(VC_LOG_INFO, "cluster", "in the cluster as \"%s\"", cl->node);
}

int cluster_ready_now(const fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    return f->cl && f->cl->ready;
}

int cluster_open(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    const mesh_settings_t *m = vc_mesh_settings_of(f->d.cfg);
    if (m == NULL || m->node == NULL || m->node[0] == '\0')
        return 0; /* one machine alone: no NATS */
    fed_cluster_t *cl = vc_calloc(1, sizeof(*cl));
    cl->node = vc_strdup(m->node);
    cl->replicas = m->replicas;
    cl->call_ms = f->cfg->peer_timeout_ms;
    cl->zctx = zmq_ctx_new();
    cl->own_ep = vc_config_endpoint(f->d.cfg, "ctl-vc-fed");
    if (vc_nats_inbox_init(&cl->inbox) < 0 || vc_nats_connect(&cl->nc, m, "vc-fed", NULL, NULL) != NATS_OK) {
        f->cl = cl;
        cluster_close(f);
        return -1;
    }
    f->cl = cl;
    return 0;
}

int cluster_fd(const fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    return f->cl ? f->cl->inbox.fd : -1;
}

void cluster_heard(void *arg)
{
    fed_t *f = arg;
    for (vc_nats_item_t *it = vc_nats_inbox_take(&f->cl->inbox), *next; it; it = next) {
        next = it->next;
        if (it->kind == FED_ITEM_BUCKET)
            together_heard(f, it->msg);
        else if (it->kind == FED_ITEM_SPREAD)
            spread_done(f);
        else if (it->kind == FED_ITEM_HOLDERS)
            holders_done(f);
        if (it->msg)
            natsMsg_Destroy(it->msg);
        free(it);
    }
}

void cluster_put_item(fed_t *f, int kind, void *data)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    vc_nats_inbox_put(&f->cl->inbox, kind, data);
}

void cluster_close(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    fed_cluster_t *cl = f->cl;
    if (cl == NULL)
        return;
    /* A call from another node waiting on this daemon returns at once. */
    zmq_ctx_shutdown(cl->zctx);
    if (cl->call_sub)
        natsSubscription_Destroy(cl->call_sub);
    if (cl->watch_sub)
        natsSubscription_Destroy(cl->watch_sub);
    if (cl->bucket)
        kvStore_Destroy(cl->bucket);
    if (cl->js)
        jsCtx_Destroy(cl->js);
    if (cl->nc)
        natsConnection_Close(cl->nc); /* calls under way fail at once */
    spread_fini(f);
    holders_fini(f);
    if (cl->nc)
        natsConnection_Destroy(cl->nc);
    if (cl->inbox.fd > 0)
        vc_nats_inbox_fini(&cl->inbox);
    free(cl->own_ep);
    free(cl->node);
    zmq_ctx_term(cl->zctx);
    free(cl);
    f->cl = NULL;
}
