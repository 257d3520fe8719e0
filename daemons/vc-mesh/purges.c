/*
 * Purges across nodes (mesh.h). vc-cache hands each purge done on this
 * node to mesh-in; it goes onto the purge stream with this node as its
 * origin and "origin:id" as its message id, so a publish retried across a
 * reconnection is stored once. Every node reads the stream through its own
 * durable consumer and applies what other nodes did through vc-cache's
 * `replay` verb, then acknowledges it: a purge is acknowledged only once
 * applied, so one that fails, or that arrives while this node's vc-cache
 * is away, comes again. A node's own purges come back to it and are
 * skipped: nothing loops.
 */
#include "mesh.h"
#include "mesh_wire.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PURGE_ACK_WAIT_MS 2000

static void send_one(mesh_t *m, Vc__MeshPurge *p)
{
    char id[96];
    if (p->id[0] == '\0') { /* an invalidation: vc-cache names none */
        snprintf(id, sizeof(id), "%lld-%llu", (long long)m->started_ms, (unsigned long long)m->purges_sent + 1);
        p->id = id;
    }
    p->origin = m->cfg->node;
    size_t len = vc__mesh_purge__get_packed_size(p);
    uint8_t *buf = vc_malloc(len ? len : 1);
    vc__mesh_purge__pack(p, buf);
    char subject[sizeof(VC_MESH_PURGE_SUBJECT) + VC_MESH_NODE_MAX];
    snprintf(subject, sizeof(subject), VC_MESH_PURGE_SUBJECT "%s", m->cfg->node);
    char msgid[VC_MESH_NODE_MAX + 100];
    snprintf(msgid, sizeof(msgid), "%s:%s", m->cfg->node, p->id);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = msgid;
    /* Not stored by then (a stream leader cut off, a new one not elected
     * yet: nothing answers), it goes back to the loop to be sent again,
     * rather than be lost. */
    po.MaxWait = PURGE_ACK_WAIT_MS;
    /* Buffered by libnats while it reconnects; acknowledged later. */
    natsStatus s = m->js ? js_PublishAsync(m->js, subject, buf, (int)len, &po) : NATS_NOT_YET_CONNECTED;
    if (s == NATS_OK) {
        m->purges_sent += strcmp(p->kind, "mark") != 0;
    } else {
        m->purges_failed++;
        vc_log(VC_LOG_WARN, "purges", "purge %s %s not sent to the cluster: %s", p->kind, p->value,
               natsStatus_GetText(s));
    }
    free(buf);
}

void purges_mark(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    Vc__MeshPurge p = VC__MESH_PURGE__INIT;
    char id[64];
    snprintf(id, sizeof(id), "mark-%lld-%llu", (long long)m->started_ms, (unsigned long long)++m->marks);
    snprintf(m->mark, sizeof(m->mark), "%s", id);
    m->mark_seen = 0;
    p.kind = "mark";
    p.value = id;
    p.id = id;
    p.at_ms = vc_wall_ms();
    send_one(m, &p);
}

void purges_from_cache(void *arg)
{
    mesh_t *m = arg;
    vc_zparts_t fr = {0};
    while (vc_zparts_recv(m->in, &fr, ZMQ_DONTWAIT) > 0) {
        Vc__MeshPurge *p =
            fr.n == 1 ? vc__mesh_purge__unpack(NULL, zmq_msg_size(&fr.f[0]), zmq_msg_data(&fr.f[0])) : NULL;
        vc_zparts_close(&fr);
        if (p == NULL) {
            m->malformed++;
            continue;
        }
        char *id = p->id; /* send_one may point it at its own buffer */
        send_one(m, p);
        p->id = id;
        p->origin = NULL; /* not ours to free */
        vc__mesh_purge__free_unpacked(p, NULL);
    }
    vc_zparts_fini(&fr);
}

/* Applies another node's purge here: 0, or -1 (then it comes again). */
static int apply(mesh_t *m, const Vc__MeshPurge *p)
{
    size_t nargs = 5 + p->n_hosts;
    const char **args = vc_calloc(nargs, sizeof(char *));
    args[0] = p->origin;
    args[1] = p->id;
    args[2] = p->kind;
    args[3] = p->value;
    args[4] = p->soft ? "1" : "0";
    for (size_t i = 0; i < p->n_hosts; i++)
        args[5 + i] = p->hosts[i];
    char buf[256];
    const char *err = mesh_call(m, "vc-cache", "replay", args, nargs, MESH_CACHE_TIMEOUT_MS, buf, sizeof(buf));
    free(args);
    if (err) {
        vc_log(VC_LOG_WARN, "purges", "purge %s from %s (%s %s) not applied: %s", p->id, p->origin, p->kind, p->value,
               err);
        vc_bus_publish(m->d.bus, VC_EVENT(MESH_PURGE_FAILED), VC__SEVERITY__WARNING, "origin", p->origin, "id", p->id,
                       "kind", p->kind, "error", err, NULL);
    }
    return err ? -1 : 0;
}

void purges_heard(mesh_t *m, natsMsg *msg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    char why[128];
    Vc__MeshPurge *p = mesh_purge_read(natsMsg_GetData(msg), (size_t)natsMsg_GetDataLength(msg), why, sizeof(why));
    if (p == NULL) {
        if (m->malformed++ == 0)
            vc_log(VC_LOG_WARN, "purges", "dropped a purge from the stream: %s", why);
        natsMsg_Ack(msg, NULL); /* it will not get better */
        return;
    }
    if (strcmp(p->kind, "mark") == 0) { /* purges nothing; this node's says it has read up to it */
        if (strcmp(p->origin, m->cfg->node) == 0 && strcmp(p->value, m->mark) == 0)
            m->mark_seen = 1;
        natsMsg_Ack(msg, NULL);
    } else if (strcmp(p->origin, m->cfg->node) == 0) {
        m->purges_skipped++; /* our own, back from the stream */
        natsMsg_Ack(msg, NULL);
    } else if (apply(m, p) == 0) {
        m->purges_applied++;
        int64_t lag = vc_wall_ms() - p->at_ms;
        m->replay_lag_ms = lag > 0 ? lag : 0;
        natsMsg_Ack(msg, NULL);
    } else {
        natsMsg_NakWithDelay(msg, 1000, NULL); /* ms: vc-cache may be restarting */
    }
    vc__mesh_purge__free_unpacked(p, NULL);
}

/* Purges waiting to be sent again, at most: past it the oldest goes (a
 * stream that refuses this long is down; the others' caches are held). */
#define RESEND_MAX 10000
/* How often they are sent again: a stream with no leader takes seconds
 * to elect one, and a refusal comes back after each send. */
#define RESEND_EVERY_MS 2000

void purges_refused(mesh_t *m, natsMsg *msg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (msg == NULL)
        return;
    if (m->nresend == RESEND_MAX) {
        natsMsg_Destroy(m->resend[0]);
        memmove(m->resend, m->resend + 1, (m->nresend - 1) * sizeof(*m->resend));
        m->nresend--;
        m->purges_failed++;
    }
    /* Said once an episode: each send again comes back refused until the
     * stream has a leader. */
    if (!m->resending) {
        vc_log(VC_LOG_WARN, "purges", "the purge stream did not take a purge; sending it again every %d ms",
               RESEND_EVERY_MS);
        m->resending = 1;
        m->resent = 0;
        m->next_resend_ms = vc_mono_ms() + RESEND_EVERY_MS;
    }
    VC_GROW(m->resend, m->capresend, m->nresend + 1, 16);
    m->resend[m->nresend++] = msg;
}

void purges_resend(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    uint64_t now = vc_mono_ms();
    if (m->js == NULL || !m->connected || !m->resending || now < m->next_resend_ms)
        return;
    m->next_resend_ms = now + RESEND_EVERY_MS;
    if (m->nresend == 0) {
        /* Nothing came back refused since the last round: taken. */
        vc_log(VC_LOG_NOTICE, "purges", "the purge stream takes purges again (%llu sent again)",
               (unsigned long long)m->resent);
        m->resending = 0;
        return;
    }
    m->resent += m->nresend;
    size_t kept = 0;
    jsPubOptions po; /* its message id is in its headers already */
    jsPubOptions_Init(&po);
    po.MaxWait = PURGE_ACK_WAIT_MS;
    for (size_t i = 0; i < m->nresend; i++) {
        natsMsg *msg = m->resend[i];
        /* On success the library owns it again and sets msg to NULL. */
        if (js_PublishMsgAsync(m->js, &msg, &po) != NATS_OK && msg)
            m->resend[kept++] = msg;
    }
    m->nresend = kept;
}

void purges_fini(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    for (size_t i = 0; i < m->nresend; i++)
        natsMsg_Destroy(m->resend[i]);
    free(m->resend);
    m->resend = NULL;
    m->nresend = m->capresend = 0;
}
