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

static void head(FILE *out, const char *name, const char *kind, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind);
}

static void write_all(const mesh_t *m, FILE *out)
{
    const char *node = m->cfg->node;
    static const char *const states[] = {"up", "suspect", "gone"};
    size_t count[3] = {0};
    for (size_t i = 0; i < m->nnodes; i++)
        count[m->nodes[i].state]++;
    head(out, "vc_mesh_nodes", "gauge", "Nodes in the roster, by state, as this node sees them.");
    for (int s = 0; s < 3; s++)
        fprintf(out, "vc_mesh_nodes{node=\"%s\",state=\"%s\"} %zu\n", node, states[s], count[s]);
    head(out, "vc_mesh_link_up", "gauge", "1 while the link to NATS is connected and set up.");
    fprintf(out, "vc_mesh_link_up{node=\"%s\"} %d\n", node, m->connected && m->ready);
    head(out, "vc_mesh_link_reconnects_total", "counter", "Times the link to NATS came back.");
    fprintf(out, "vc_mesh_link_reconnects_total{node=\"%s\"} %llu\n", node, (unsigned long long)m->reconnects);
    head(out, "vc_mesh_cache_held", "gauge", "1 while this node's cache answers nothing (it may have missed purges).");
    fprintf(out, "vc_mesh_cache_held{node=\"%s\"} %d\n", node, m->held);
    head(out, "vc_mesh_replay_lag_seconds", "gauge", "Age of the last purge from another node when it was applied.");
    fprintf(out, "vc_mesh_replay_lag_seconds{node=\"%s\"} %.3f\n", node, (double)m->replay_lag_ms / 1000.0);
    head(out, "vc_mesh_purges_total", "counter", "Purges sent to the cluster, applied here, or that failed.");
    fprintf(out, "vc_mesh_purges_total{node=\"%s\",way=\"sent\"} %llu\n", node, (unsigned long long)m->purges_sent);
    fprintf(out, "vc_mesh_purges_total{node=\"%s\",way=\"applied\"} %llu\n", node,
            (unsigned long long)m->purges_applied);
    fprintf(out, "vc_mesh_purges_total{node=\"%s\",way=\"failed\"} %llu\n", node, (unsigned long long)m->purges_failed);
    head(out, "vc_mesh_room_messages_total", "counter",
         "Room messages bridged: sent to the other nodes, received from them, dropped.");
    fprintf(out, "vc_mesh_room_messages_total{node=\"%s\",way=\"sent\"} %llu\n", node,
            (unsigned long long)m->rooms_sent);
    fprintf(out, "vc_mesh_room_messages_total{node=\"%s\",way=\"received\"} %llu\n", node,
            (unsigned long long)m->rooms_received);
    fprintf(out, "vc_mesh_room_messages_total{node=\"%s\",way=\"dropped\"} %llu\n", node,
            (unsigned long long)m->rooms_dropped);
    head(out, "vc_mesh_malformed_total", "counter", "Messages from the cluster dropped as malformed.");
    fprintf(out, "vc_mesh_malformed_total{node=\"%s\"} %llu\n", node, (unsigned long long)m->malformed);
}

void metrics_tick(mesh_t *m)
{
    uint64_t now = vc_mono_ms();
    if (now < m->next_metrics_ms)
        return;
    m->next_metrics_ms = now + EVERY_MS;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (out == NULL)
        return;
    write_all(m, out);
    fclose(out);
    int r = vc_metrics_publish(m->d.cfg, "vc-mesh", buf, len);
    if (r < 0 && m->metrics_failed++ == 0)
        vc_log(VC_LOG_WARN, "metrics", "the metrics could not be written: %s", vc_strerror(r));
    free(buf);
}
