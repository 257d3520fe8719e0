/*
 * vc-mesh's Prometheus metrics (vc_metrics.h): written once a second to
 * RUN/metrics/vc-mesh.prom, served by the front's /metrics with its own.
 * The figures docs/cluster.md names: nodes up, the link to NATS, how far
 * behind the purges applied here are, and the messages bridged.
 */
#include "mesh.h"
#include "vc_log.h"
#include "vc_metrics.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>

#define EVERY_MS 1000

/* vc-mesh's metrics, one row each: docs/observing.md's table is held to
 * them (integration/test_34_mesh.py). */
enum { NODES, LINK_UP, RECONNECTS, CACHE_HELD, REPLAY_LAG, PURGES, ROOM_MESSAGES, MALFORMED, SCHEDULES };
static const struct {
    const char *name, *kind, *help;
} metrics[] = {
    [NODES] = {"vc_mesh_nodes", "gauge", "Nodes in the roster, by state, as this node sees them."},
    [LINK_UP] = {"vc_mesh_link_up", "gauge", "1 while the link to NATS is connected and set up."},
    [RECONNECTS] = {"vc_mesh_link_reconnects_total", "counter", "Times the link to NATS came back."},
    [CACHE_HELD] = {"vc_mesh_cache_held", "gauge",
                    "1 while this node's cache answers nothing (it may have missed purges)."},
    [REPLAY_LAG] = {"vc_mesh_replay_lag_seconds", "gauge",
                    "Age of the last purge from another node when it was applied."},
    [PURGES] = {"vc_mesh_purges_total", "counter", "Purges sent to the cluster, applied here, or that failed."},
    [ROOM_MESSAGES] = {"vc_mesh_room_messages_total", "counter",
                       "Room messages bridged: sent to the other nodes, received from them, dropped."},
    [MALFORMED] = {"vc_mesh_malformed_total", "counter", "Messages from the cluster dropped as malformed."},
    [SCHEDULES] = {"vc_mesh_schedule_minutes_total", "counter",
                   "Schedule minutes this node's pools said were due: taken here, taken by another node, skipped "
                   "(a run still going on another node), taken over from a node gone mid-run, not run (no link)."},
};

/* Its HELP and TYPE lines; returns its name, for the samples. */
static const char *head(FILE *out, int which)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", metrics[which].name, metrics[which].help, metrics[which].name,
            metrics[which].kind);
    return metrics[which].name;
}

static void write_all(FILE *out, const void *arg)
{
    const mesh_t *m = arg;
    const char *node = m->cfg->node;
    static const char *const states[] = {"up", "suspect", "gone"};
    size_t count[3] = {0};
    for (size_t i = 0; i < m->nnodes; i++)
        count[m->nodes[i].state]++;
    const char *name = head(out, NODES);
    for (int s = 0; s < 3; s++)
        fprintf(out, "%s{node=\"%s\",state=\"%s\"} %zu\n", name, node, states[s], count[s]);
    fprintf(out, "%s{node=\"%s\"} %d\n", head(out, LINK_UP), node, m->connected && m->ready);
    fprintf(out, "%s{node=\"%s\"} %llu\n", head(out, RECONNECTS), node, (unsigned long long)m->reconnects);
    fprintf(out, "%s{node=\"%s\"} %d\n", head(out, CACHE_HELD), node, m->held);
    fprintf(out, "%s{node=\"%s\"} %.3f\n", head(out, REPLAY_LAG), node, (double)m->replay_lag_ms / 1000.0);
    name = head(out, PURGES);
    const char *const ways[] = {"sent", "applied", "failed", "received", "dropped"};
    const uint64_t purges[] = {m->purges_sent, m->purges_applied, m->purges_failed};
    for (int w = 0; w < 3; w++)
        fprintf(out, "%s{node=\"%s\",way=\"%s\"} %llu\n", name, node, ways[w], (unsigned long long)purges[w]);
    name = head(out, ROOM_MESSAGES);
    const uint64_t rooms[] = {m->rooms_sent, m->rooms_received, m->rooms_dropped};
    const char *const room_ways[] = {ways[0], ways[3], ways[4]};
    for (int w = 0; w < 3; w++)
        fprintf(out, "%s{node=\"%s\",way=\"%s\"} %llu\n", name, node, room_ways[w], (unsigned long long)rooms[w]);
    fprintf(out, "%s{node=\"%s\"} %llu\n", head(out, MALFORMED), node, (unsigned long long)m->malformed);
    name = head(out, SCHEDULES);
    static const char *const outcomes[SCHED_COUNTS] = {"taken", "elsewhere", "skipped", "lost", "unreachable"};
    for (int i = 0; i < SCHED_COUNTS; i++)
        fprintf(out, "%s{node=\"%s\",outcome=\"%s\"} %llu\n", name, node, outcomes[i],
                (unsigned long long)m->sched_count[i]);
}

void metrics_tick(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    uint64_t now = vc_mono_ms();
    if (now < m->next_metrics_ms)
        return;
    m->next_metrics_ms = now + EVERY_MS;
    int r = vc_metrics_publish_from(m->d.cfg, "vc-mesh", write_all, m);
    if (r < 0 && m->metrics_failed++ == 0)
        vc_log(VC_LOG_WARN, "metrics", "the metrics could not be written: %s", vc_strerror(r));
}
