/*
 * Whether this node's cache may answer (mesh.h, docs/cluster.md). A node's
 * cache is trusted only while it is known to have every purge the other
 * nodes did:
 *  - at start, vc-cache holds it (every request misses, and PHP answers);
 *    vc-mesh lets it answer once every purge it missed while away is
 *    applied: a marker it puts on the stream has come back through its own
 *    consumer, and the consumer has nothing pending. What a consumer's
 *    info says is what the member that answers knows, right after a
 *    partition heals perhaps less than the others stored meanwhile; a
 *    marker is stored only with a quorum, after every purge stored before
 *    it, so its coming back through the consumer is proof;
 *  - if the stream no longer has what it missed (away longer than
 *    cluster.purge_keep), or it never read the stream, the cache is
 *    dropped first: nothing can say which pages are out of date;
 *  - cut off from NATS past cluster.suspect_after, it is held again until
 *    the link is back and the stream replayed;
 *  - while it answers, it does so on a lease (VC_CACHE_META_LEASE) that
 *    ends suspect_after past the last heartbeat the cluster stored,
 *    renewed each heartbeat: the fronts check it at every hit, so a node
 *    whose processes all stood still (a VM paused, a stall) answers
 *    nothing from its cache when it wakes, before vc-mesh has run again.
 * So a node serves a page another node purged for at most suspect_after
 * plus a heartbeat's tick after the purge, cut off, paused or not.
 */
#include "mesh.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdio.h>

/* How often the consumer's progress is asked while catching up. */
#define CATCHUP_POLL_MS 200
/* A marker that has not come back by then is put again (it may have been
 * lost with a leader). */
#define MARK_AGAIN_MS 3000

void catchup_before_consumer(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    char durable[VC_MESH_NODE_MAX + 8];
    link_durable(m, durable, sizeof(durable));
    jsConsumerInfo *ci = NULL;
    jsStreamInfo *si = NULL;
    jsErrCode je = 0;
    natsStatus s = js_GetConsumerInfo(&ci, m->js, VC_MESH_PURGES, durable, NULL, &je);
    if (s == NATS_NOT_FOUND || je == JSConsumerNotFoundErr) {
        m->must_drop = 1;
        vc_log(VC_LOG_NOTICE, "catchup", "this node never read the purge stream: its cache is dropped first");
    } else if (s == NATS_OK && js_GetStreamInfo(&si, m->js, VC_MESH_PURGES, NULL, &je) == NATS_OK) {
        uint64_t seen = ci->AckFloor.Stream, first = si->State.FirstSeq, last = si->State.LastSeq;
        if (last > seen && first > seen + 1) {
            m->must_drop = 1;
            vc_log(VC_LOG_WARN, "catchup",
                   "purges %llu to %llu are gone from the stream (kept cluster.purge_keep): this node's cache is "
                   "dropped",
                   (unsigned long long)seen + 1, (unsigned long long)first - 1);
        }
    }
    if (ci)
        jsConsumerInfo_Destroy(ci);
    if (si)
        jsStreamInfo_Destroy(si);
}

/* on: held. Else leased: the lease ends cluster.suspect_after after this
 * node's last heartbeat the cluster stored, as a hold would come then. */
static int hold(mesh_t *m, int on)
{
    char err[256], until[24];
    uint64_t since_beat = m->beat_ok_ms ? vc_mono_ms() - m->beat_ok_ms : 0;
    snprintf(until, sizeof(until), "%llu",
             (unsigned long long)(vc_boot_ms() - since_beat + (uint64_t)m->cfg->suspect_ms));
    const char *args[2] = {on ? "on" : "until", until};
    const char *why = mesh_call(m, "vc-cache", "hold", args, on ? 1 : 2, MESH_CACHE_TIMEOUT_MS, err, sizeof(err));
    if (why) {
        vc_log(VC_LOG_WARN, "catchup", "vc-cache did not take hold %s: %s", args[0], why);
        return -1;
    }
    if (m->held != on)
        vc_log(VC_LOG_NOTICE, "catchup", "this node's cache %s", on ? "is held" : "answers again");
    if (on) { /* a new marker, once linked again */
        m->mark[0] = '\0';
        m->mark_seen = 0;
    }
    m->held = on;
    return 0;
}

/* Every purge the stream had for this node is applied. */
static int caught_up(mesh_t *m)
{
    char durable[VC_MESH_NODE_MAX + 8];
    link_durable(m, durable, sizeof(durable));
    jsConsumerInfo *ci = NULL;
    jsErrCode je = 0;
    if (js_GetConsumerInfo(&ci, m->js, VC_MESH_PURGES, durable, NULL, &je) != NATS_OK)
        return 0;
    int done = ci->NumPending == 0 && ci->NumAckPending == 0;
    jsConsumerInfo_Destroy(ci);
    return done;
}

void catchup_tick(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    uint64_t now = vc_mono_ms();
    if (!m->connected && m->cut_since_ms == 0)
        m->cut_since_ms = now;
    else if (m->connected)
        m->cut_since_ms = 0;
    /* Linked to a NATS server that is itself cut off from the others (no
     * quorum for the roster) is cut off too: its heartbeats fail. */
    uint64_t cut_for = m->cut_since_ms ? now - m->cut_since_ms : m->ready && m->beat_ok_ms ? now - m->beat_ok_ms : 0;
    if (cut_for >= (uint64_t)m->cfg->suspect_ms) {
        if (!m->held)
            hold(m, 1);
        return;
    }
    if (!m->connected || !m->ready || now < m->next_catchup_ms)
        return;
    /* Held: its progress asked often. Leased: the lease renewed each
     * heartbeat (it lapses suspect_after past the last heartbeat stored). */
    m->next_catchup_ms = now + (m->held ? CATCHUP_POLL_MS : (uint64_t)m->cfg->heartbeat_ms);
    if (m->held && !m->mark_seen && (m->mark[0] == '\0' || now - m->mark_ms >= MARK_AGAIN_MS)) {
        purges_mark(m);
        m->mark_ms = now;
    }
    if (m->held && (!m->mark_seen || !caught_up(m)))
        return;
    if (m->must_drop) {
        char err[256];
        const char *args[] = {m->cfg->node, "catchup", "all", "", "0"};
        if (mesh_call(m, "vc-cache", "replay", args, 5, MESH_CACHE_TIMEOUT_MS, err, sizeof(err)) != NULL)
            return;
        m->must_drop = 0;
    }
    hold(m, 0);
}
