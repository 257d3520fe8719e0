/*
 * vc_events: every event topic the suite publishes, declared once, with
 * its fields and when it happens. Publishers name a topic by its entry
 * (VC_EVENT(PHP_WORKER_CRASHED)), so a misspelt one does not build;
 * `vc events --list` prints the table; and a test holds docs/observing.md
 * to it (integration/test_33_tables.py).
 *
 * A topic is "area.thing.what". DAEMON_STARTED and DAEMON_STOPPED are a
 * family: each daemon's short name in place of "*" (bus.started,
 * php.started, front.stopped, ...).
 */
#ifndef VC_EVENTS_H
#define VC_EVENTS_H

#include <stddef.h>

/* X(NAME, "topic", "its fields", "when") */
#define VC_EVENT_LIST(X)                                                                                               \
    X(DAEMON_STARTED, "*.started", "daemon pid version", "a daemon is ready (bus, php, front, cache, acme, mesh)")     \
    X(DAEMON_STOPPED, "*.stopped", "daemon", "a daemon stops")                                                         \
    X(VC_STARTED, "vc.started", "data", "the supervisor has started every daemon")                                     \
    X(VC_DAEMON_EXITED, "vc.daemon.exited", "daemon pid status restart_in_ms",                                         \
      "the supervisor saw a daemon die; it restarts it after restart_in_ms")                                           \
    X(VC_DAEMON_RESTARTED, "vc.daemon.restarted", "daemon pid restarts", "the supervisor brought a daemon back")       \
    X(VC_DAEMON_REPLACED, "vc.daemon.replaced", "daemon old_pid pid",                                                  \
      "a daemon was replaced by a fresh process (reload, `vc restart front`)")                                         \
    X(VC_DAEMON_REPLACE_FAILED, "vc.daemon.replace_failed", "daemon reason",                                           \
      "a replacement did not become ready; the old process serves on")                                                 \
    X(CONFIG_CHANGED, "config.changed", "version", "`vc reload` stored a new configuration version")                   \
    X(CONFIG_REFUSED, "config.refused", "reason", "`vc reload` refused a configuration (the running one serves on)")   \
    X(BUS_JOURNAL_RESUMED, "bus.journal.resumed", "dropped",                                                           \
      "the journal takes events again after dropped ones could not be written")                                        \
    X(PHP_WORKER_STARTED, "php.worker.started", "pid", "a PHP worker came")                                            \
    X(PHP_WORKER_EXITED, "php.worker.exited", "pid status request script", "a PHP worker went")                        \
    X(PHP_WORKER_RECYCLED, "php.worker.recycled", "pid status request script",                                         \
      "a worker reached max_requests or max_memory and was replaced")                                                  \
    X(PHP_WORKER_CRASHED, "php.worker.crashed", "pid status request script action",                                    \
      "a worker died; action says what its request got: retried, 502, 504, aborted, none")                             \
    X(PHP_POOL_SCALED, "php.pool.scaled", "workers why", "the pool size changed (grown, shrunk, set by `vc scale`)")   \
    X(PHP_RELOADED, "php.reloaded", "generation", "a new zygote generation took over")                                 \
    X(PHP_RELOAD_FAILED, "php.reload.failed", "reason", "a new zygote did not boot; the old one keeps serving")        \
    X(PHP_BACKGROUND_STARTED, "php.background.started", "site name pid status", "a site's background process started") \
    X(PHP_BACKGROUND_EXITED, "php.background.exited", "site name pid status",                                          \
      "a background process exited or was stopped")                                                                    \
    X(PHP_BACKGROUND_RESTARTED, "php.background.restarted", "site name pid status",                                    \
      "a background process that exited by itself is started again (at once, or after its backoff)")                   \
    X(PHP_BACKGROUND_FAILED, "php.background.failed", "site name pid status",                                          \
      "a background process failed start_retries starts in a row: left until `vc bg start`")                           \
    X(PHP_SCHEDULE_STARTED, "php.schedule.started", "site name pid status", "a schedule entry's run started")          \
    X(PHP_SCHEDULE_SKIPPED, "php.schedule.skipped", "site name pid status",                                            \
      "a schedule entry's minute came while its last run still ran: no second run")                                    \
    X(PHP_SCHEDULE_FINISHED, "php.schedule.finished", "site name pid status ms",                                       \
      "a schedule entry's run ended with exit 0")                                                                      \
    X(PHP_SCHEDULE_FAILED, "php.schedule.failed", "site name pid status ms",                                           \
      "a schedule entry's run failed (a non-zero exit, a signal, schedule_timeout)")                                   \
    X(PHP_HOOK_OUTPUT, "php.hook.output", "site id line",                                                              \
      "a line a release hook printed (its run's id, as hook-run answered): `vc deploy` shows them as they come "       \
      "(live only, not journaled)")                                                                                    \
    X(PHP_SCHEDULE_DUE, "php.schedule.due", "site name minute",                                                        \
      "in a cluster: a schedule entry's minute came on this node; vc-mesh takes the entry's lock, and the node that "  \
      "holds it runs it")                                                                                              \
    X(FRONT_METRICS, "front.metrics",                                                                                  \
      "requests static p50_ms p99_ms s2xx s3xx s4xx s5xx php errors_5xx inflight cache_hits cache_misses",             \
      "each second with traffic: requests, static files, time to the answer's head (p50, p99), answers by status "     \
      "class, PHP, PHP's 5xx, in flight, cache hits and misses (live only, not journaled)")                            \
    X(FRONT_CLIENT_BANNED, "front.client.banned", "address seconds",                                                   \
      "an address is refused for seconds after its connections were cut for resets or stalls")                         \
    X(REALTIME_METRICS, "realtime.metrics", "connections opened published delivered subscriptions",                    \
      "each second with room traffic (live only, not journaled)")                                                      \
    X(TLS_ON_DEMAND_WANTED, "tls.on_demand.wanted", "host", "on-demand TLS: a front wants a certificate for host")     \
    X(CACHE_PURGED, "cache.purged", "id kind value soft entries by ms",                                                \
      "vc-cache purged entries (by an operator, a site's PHP, a PURGE)")                                               \
    X(CACHE_WARM_PROGRESS, "cache.warm.progress", "id done total stored already uncacheable errors",                   \
      "a warm-up started from the panel (`vc cache warm --events ID`), once a second (live only, not journaled)")      \
    X(CACHE_WARM_DONE, "cache.warm.done", "id done total stored already uncacheable errors result",                    \
      "that warm-up ended: result is ok or why it could not run")                                                      \
    X(ACME_ORDER_STARTED, "acme.order.started", "site hosts", "vc-acme began an order")                                \
    X(ACME_CERT_ISSUED, "acme.cert.issued", "site hosts challenge not_after round_trips", "a certificate was issued")  \
    X(ACME_CERT_RENEWED, "acme.cert.renewed", "site hosts challenge not_after round_trips",                            \
      "a certificate was renewed")                                                                                     \
    X(ACME_CERT_FAILED, "acme.cert.failed", "site hosts error retry_at rate_limited problem",                          \
      "an order failed; it is tried again at retry_at")                                                                \
    X(ACME_CERT_SHARED, "acme.cert.shared", "site hosts origin not_after",                                             \
      "in a cluster: a certificate another node ordered was installed")                                                \
    X(ACME_CERT_REVOKED, "acme.cert.revoked", "site reason", "a certificate was revoked")                              \
    X(ACME_REVOKE_FAILED, "acme.revoke.failed", "site error", "a revocation failed")                                   \
    X(ACME_ON_DEMAND_REFUSED, "acme.on_demand.refused", "host why", "vc-acme refused an on-demand certificate")        \
    X(MESH_NODE_JOINED, "mesh.node.joined", "node version addresses",                                                  \
      "a node's heartbeat reached this one, the first or after it was gone")                                           \
    X(MESH_NODE_SUSPECT, "mesh.node.suspect", "node silent_ms", "no heartbeat from a node for cluster.suspect_after")  \
    X(MESH_NODE_LEFT, "mesh.node.left", "node silent_ms",                                                              \
      "no heartbeat from a node for cluster.gone_after: it is gone")                                                   \
    X(MESH_LINK_CHANGED, "mesh.link.changed", "state", "this node's link to NATS went down or came back")              \
    X(MESH_PURGE_FAILED, "mesh.purge.failed", "origin id kind error",                                                  \
      "a purge from another node could not be applied here; it is tried again")                                        \
    X(MESH_SCHEDULE_TAKEN, "mesh.schedule.taken", "site name minute",                                                  \
      "this node took a schedule entry's minute: it runs there and on no other node")                                  \
    X(MESH_SCHEDULE_LOST, "mesh.schedule.lost", "site name minute node",                                               \
      "a schedule entry's run on a node that went away mid-run: its end is unknown, and the next minute runs here")    \
    X(FED_RELEASE_STAGING, "fed.release.staging", "site release key files need",                                       \
      "a signed release is being staged: files to link from earlier releases, and to receive")                         \
    X(FED_RELEASE_STAGED, "fed.release.staged", "site release bytes_received files_linked",                            \
      "every file of a release was checked against its manifest")                                                      \
    X(FED_RELEASE_SWITCHED, "fed.release.switched", "site release previous",                                           \
      "a site's current release changed, and its pool booted a new generation")                                        \
    X(FED_RELEASE_ROLLED_BACK, "fed.release.rolled_back", "site release from",                                         \
      "a site went back to an earlier release")                                                                        \
    X(FED_RELEASE_FAILED, "fed.release.failed", "site release error", "a release was refused or could not be staged")  \
    X(PANEL_AUDIT, "panel.audit", "user action target from result",                                                    \
      "a sign-in or a change in the panel: who, what, from which address; result is ok or why not")

typedef enum vc_event {
#define VC_EVENT_ENUM(name, topic, fields, when) VC_EV_##name,
    VC_EVENT_LIST(VC_EVENT_ENUM)
#undef VC_EVENT_ENUM
        VC_EV_COUNT
} vc_event_t;

typedef struct vc_event_def {
    const char *topic;  /* "*.started" for a family */
    const char *fields; /* space-separated */
    const char *when;
} vc_event_def_t;

extern const vc_event_def_t vc_event_defs[VC_EV_COUNT];

/* The topic of an event of the table, by its name. */
#define VC_EVENT(name) (vc_event_defs[VC_EV_##name].topic)

/* A family's topic for one member: "*.started" and "php" make
 * "php.started", in buf. */
const char *vc_event_topic_of(vc_event_t e, const char *member, char *buf, size_t len);

#endif
