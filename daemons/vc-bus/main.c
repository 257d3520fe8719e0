/*
 * vc-bus: the event bus. Every daemon pushes its events into "bus-in" (a
 * PULL socket: see vc_bus.h for why not XSUB), every subscriber reads from
 * "bus-out" (XPUB, filtered by topic prefix), and each event is also kept
 * in a bounded journal in LMDB for `vc events --since`.
 */
#include "journal.h"
#include "work_metrics.h"
#include "vc_events.h"
#include "rooms.h"
#include "senders.h"
#include "vc_bus_settings.h"
#include "vc_confstore.h"
#include "vc_daemon.h"
#include "vc_log.h"
#include "vc_mesh.h"
#include "vc_loop.h"
#include "vc_zmq.h"
#include "vc_proc.h"
#include "vc_store.h"
#include "vc_util.h"

#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

/* How long the bus waits for its own start or stop event to come through
 * bus-in before going on anyway (it takes well under a millisecond). */
#define OWN_EVENT_WAIT_MS 2000

typedef struct bus {
    vc_daemon_t d;
    void *in, *out;
    vc_store_t *store;
    journal_t *journal;
    rooms_relay_t *rooms;
    webhooks_t *webhooks;
    senders_t *senders;
    work_metrics_t *work;
    uint64_t forwarded, malformed;
    uint64_t not_journaled;       /* events the journal could not take since it last could */
    uint64_t not_journaled_total; /* ever */
    const char *own_awaited;      /* our own event, "bus.started" or "bus.stopped", awaited on bus-in */
    int own_seen;                 /* it came through */
    vc_zparts_t fr;
} bus_t;

/* A reload brings the apps' webhooks up to date; the rest of the bus's
 * settings take a restart. */
static void apply_settings(void *arg, const vc_config_t *cfg)
{
    bus_t *b = arg;
    webhooks_configure(b->webhooks, cfg);
    senders_configure(b->senders, cfg);
    work_metrics_configure(b->work, cfg);
}

static void on_reload(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    bus_t *b = arg;
    vc_daemon_reload(&b->d, apply_settings, b, reply);
}

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    bus_t *b = arg;
    vc_reply_ok(reply, "vc-bus is running");
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "forwarded", "%llu", (unsigned long long)b->forwarded);
    vc_reply_field(reply, "malformed", "%llu", (unsigned long long)b->malformed);
    vc_reply_field(reply, "refused", "%llu", (unsigned long long)senders_refused(b->senders));
    vc_reply_field(reply, "journaled", "%llu", (unsigned long long)journal_appended(b->journal));
    vc_reply_field(reply, "journal_entries", "%llu", (unsigned long long)journal_count(b->journal));
    vc_reply_field(reply, "journal_dropped", "%llu", (unsigned long long)b->not_journaled_total);
    uint64_t bad, relayed = rooms_relay_count(b->rooms, &bad);
    vc_reply_field(reply, "room_messages", "%llu", (unsigned long long)relayed);
    vc_reply_field(reply, "room_messages_malformed", "%llu", (unsigned long long)bad);
    vc_reply_field(reply, "rooms_occupied", "%zu", rooms_relay_occupied(b->rooms));
    vc_reply_field(reply, "rooms_nodes", "%zu", rooms_relay_nodes(b->rooms));
    vc_reply_field(reply, "room_webhooks_here", "%s", rooms_relay_hooks(b->rooms) ? "yes" : "no");
    webhooks_counts_t wc;
    webhooks_counts(b->webhooks, &wc);
    vc_reply_field(reply, "webhooks_posted", "%llu", (unsigned long long)wc.posted);
    vc_reply_field(reply, "webhooks_failed", "%llu", (unsigned long long)wc.failed);
    vc_reply_field(reply, "webhooks_dropped", "%llu", (unsigned long long)wc.dropped);
    vc_reply_field(reply, "webhooks_queued", "%llu", (unsigned long long)wc.queued);
}

/* The cluster's verbs, vc-mesh's (rooms.h). */
static void on_rooms_forget(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    bus_t *b = arg;
    if (cmd->n_args != 1 || !vc_mesh_node_name_ok(cmd->args[0])) {
        vc_reply_fail(reply, "rooms-forget: expected a node's name");
        return;
    }
    rooms_relay_forget_node(b->rooms, cmd->args[0]);
    vc_reply_ok(reply, "forgot what %s held", cmd->args[0]);
}

static void on_rooms_share(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)cmd;
    rooms_relay_share(((bus_t *)arg)->rooms);
    vc_reply_ok(reply, "shared");
}

static void on_rooms_hooks(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    int on = cmd->n_args == 1 && !strcmp(cmd->args[0], "on");
    if (cmd->n_args != 1 || (!on && strcmp(cmd->args[0], "off"))) {
        vc_reply_fail(reply, "rooms-hooks: expected on or off");
        return;
    }
    bus_t *b = arg;
    if (rooms_relay_hooks(b->rooms) != on)
        vc_log(VC_LOG_NOTICE, "rooms", "this node %s the apps' occupancy and presence webhooks",
               on ? "posts" : "leaves to another node");
    rooms_relay_set_hooks(b->rooms, on);
    vc_reply_ok(reply, "%s", on ? "on" : "off");
}

static const vc_verb_t verbs[] = {
    {"status", "", "counts: events forwarded, refused, journaled; room messages; webhooks", on_status},
    {"ping", "", "as status", on_status},
    {"stats", "", "as status", on_status},
    {"reload", "", "take the stored configuration (journal size, webhooks)", on_reload},
    {"rooms-forget", "NODE", "drop the presence members and rooms another node held (vc-mesh: it is gone)",
     on_rooms_forget},
    {"rooms-share", "", "tell the other nodes again every member and room held here (vc-mesh)", on_rooms_share},
    {"rooms-hooks", "on|off", "whether this node posts occupancy and presence webhooks (vc-mesh: one node does)",
     on_rooms_hooks},
};

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
}

/* One event from a publisher: [topic][Envelope]. Forwarded as it is, and
 * journaled if the envelope decodes. */
static void on_event(bus_t *b)
{
    vc_zparts_t *fr = &b->fr;
    if (vc_zparts_recv(b->in, fr, ZMQ_DONTWAIT) < 0)
        return;
    Vc__Envelope *env = NULL;
    if (fr->n == 2)
        env = vc__envelope__unpack(NULL, zmq_msg_size(&fr->f[1]), zmq_msg_data(&fr->f[1]));
    if (env == NULL) {
        if (b->malformed++ % 1000 == 0)
            vc_log(VC_LOG_WARN, "proxy", "dropped a malformed event (%zu frames)", fr->n);
        vc_zparts_close(fr);
        return;
    }
    if (!senders_allow(b->senders, &fr->f[0], env)) {
        vc__envelope__free_unpacked(env, NULL);
        vc_zparts_close(fr);
        return;
    }
    /* Per-second metrics, progress and a hook's output lines go to live
     * subscribers only: in the journal they would push out the events
     * worth keeping (a hook's output is kept in its release's log). */
    static const char *const live_only[] = {".metrics", ".progress", ".output"};
    size_t tl = strlen(env->topic);
    int journal = 1;
    for (size_t i = 0; i < VC_ARRAY_SIZE(live_only); i++) {
        size_t sl = strlen(live_only[i]);
        if (tl >= sl && strcmp(env->topic + tl - sl, live_only[i]) == 0)
            journal = 0;
    }
    int r = journal ? journal_append(b->journal, env->time_us, zmq_msg_data(&fr->f[1]), zmq_msg_size(&fr->f[1])) : 0;
    if (r < 0) {
        /* A full disk fails every write: said once, then counted. The
         * event still reaches live subscribers. */
        if (b->not_journaled++ == 0)
            vc_log(VC_LOG_ERR, "journal",
                   "mdb_put() failed while journaling \"%s\": %s; events are forwarded but not journaled until it "
                   "works again",
                   env->topic, vc_strerror(r));
        b->not_journaled_total++;
    } else if (journal && b->not_journaled) {
        char n[24];
        snprintf(n, sizeof(n), "%llu", (unsigned long long)b->not_journaled);
        vc_log(VC_LOG_NOTICE, "journal", "journaling again: %s events before this one were not journaled", n);
        vc_bus_publish(b->d.bus, VC_EVENT(BUS_JOURNAL_RESUMED), VC__SEVERITY__WARNING, "dropped", n, NULL);
        b->not_journaled = 0;
    }
    /* Only while we wait for our own event: then every event passes by. */
    if (b->own_awaited && env->pid == (uint32_t)getpid() && strcmp(env->topic, b->own_awaited) == 0)
        b->own_seen = 1;
    work_metrics_count(b->work, env);
    vc__envelope__free_unpacked(env, NULL);
    /* XPUB drops for slow subscribers past their high-water mark rather
     * than blocking the bus. */
    vc_zparts_send(b->out, fr, 0, 0);
    vc_zparts_close(fr);
    b->forwarded++;
}

/* Subscriptions arrive on the XPUB as messages; XPUB filters by itself, so
 * they are only read to keep the queue empty. */
static void on_subscription(void *arg)
{
    bus_t *b = arg;
    vc_zparts_t *fr = &b->fr;
    while (vc_zparts_recv(b->out, fr, ZMQ_DONTWAIT) > 0)
        vc_zparts_close(fr);
}

/* What bus-in holds, a batch at a time: the loop comes back for more. */
static void on_events(void *arg)
{
    bus_t *b = arg;
    for (int i = 0; i < 256; i++) {
        uint64_t before = b->forwarded + b->malformed;
        on_event(b);
        if (b->forwarded + b->malformed == before)
            break;
    }
}

static void on_rooms(void *arg)
{
    bus_t *b = arg;
    rooms_relay_pump(b->rooms);
}

static int after_turn(void *arg)
{
    bus_t *b = arg;
    rooms_relay_tick(b->rooms);
    return 0;
}

/* The journal's writes reach the disk at most a second late. */
static void sync_store(void *arg)
{
    bus_t *b = arg;
    mdb_env_sync(vc_store_env(b->store), 1);
    work_metrics_tick(b->work, b->d.cfg);
}

/* Our own start or stop, said through bus-in like anyone's, read back so
 * that it is journaled and forwarded before we go on (well under a
 * millisecond; OWN_EVENT_WAIT_MS at most, with a warning). */
static void await_own(bus_t *b, vc_event_t kind)
{
    char topic[32];
    b->own_awaited = vc_event_topic_of(kind, "bus", topic, sizeof(topic));
    b->own_seen = 0;
    for (uint64_t until = vc_mono_ms() + OWN_EVENT_WAIT_MS; !b->own_seen && vc_mono_ms() < until;) {
        zmq_pollitem_t in = {b->in, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&in, 1, (long)(until - vc_mono_ms())) > 0)
            on_event(b);
    }
    if (!b->own_seen)
        vc_log(VC_LOG_WARN, "main", "our own \"%s\" did not reach bus-in in %d ms", topic, OWN_EVENT_WAIT_MS);
    b->own_awaited = NULL;
}

int main(int argc, char **argv)
{
    bus_t b = {0};
    vc_daemon_load(&b.d, "vc-bus", argc, argv);
    char err[512] = "";
    b.store = vc_store_open(b.d.cfg->state_dir, (size_t)b.d.cfg->store.map_size, err, sizeof(err));
    if (b.store == NULL) {
        vc_log(VC_LOG_CRIT, "main", "%s", err);
        return 1;
    }
    /* The journal is history, not a ledger: losing the last second of it to
     * a power cut is fine, an fsync per event is not. */
    mdb_env_set_flags(vc_store_env(b.store), MDB_NOSYNC, 1);
    b.journal = journal_new(b.store, (uint64_t)bus_settings(b.d.cfg)->journal_max);

    b.d.binds_bus = 1;
    vc_daemon_start(&b.d, on_command, &b);
    char *in_ep = vc_config_endpoint(b.d.cfg, "bus-in");
    char *out_ep = vc_config_endpoint(b.d.cfg, "bus-out");
    b.in = vc_socket(b.d.zctx, ZMQ_PULL, in_ep, 1);
    b.out = vc_socket(b.d.zctx, ZMQ_XPUB, out_ep, 1);
    /* Each subscriber that asks for it gets this one-frame message once its
     * link is up (vc events --follow says it follows then). */
    if (b.out)
        zmq_setsockopt(b.out, ZMQ_XPUB_WELCOME_MSG, VC_BUS_WELCOME, strlen(VC_BUS_WELCOME));
    if (b.in == NULL || b.out == NULL) {
        vc_log(VC_LOG_CRIT, "main", "zmq_bind() failed while opening \"%s\" and \"%s\": %s", in_ep, out_ep,
               zmq_strerror(errno));
        return 1;
    }
    /* Every daemon publishes, the pools too, which run as other users:
     * bus-in is open to every local user (its directory can be crossed,
     * not listed), and senders.c believes each only as far as it is
     * trusted. */
    int ipc = strncmp(in_ep, "ipc://", 6) == 0;
    if (ipc)
        chmod(in_ep + 6, 0666);
    b.senders = senders_new(b.d.cfg, ipc);
    b.work = work_metrics_new();
    work_metrics_configure(b.work, b.d.cfg);
    free(in_ep);
    free(out_ep);
    b.webhooks = webhooks_new(b.d.cfg);
    if ((b.rooms = rooms_relay_open(b.d.zctx, b.d.cfg, b.store, (uint64_t)bus_settings(b.d.cfg)->room_history,
                                    b.webhooks)) == NULL)
        return 1;
    /* Our own publisher connects once bus-in is bound (connected before,
     * ZeroMQ retries only after its reconnect interval), and our own start
     * is in the journal before we say we are ready: whoever waited for the
     * suite reads the journal next. */
    vc_daemon_connect_bus(&b.d);
    vc_daemon_announce(&b.d);
    await_own(&b, VC_EV_DAEMON_STARTED);
    vc_daemon_ready(&b.d);

    const vc_watch_t watch[] = {
        {b.in, 0, on_events},
        {b.out, 0, on_subscription},
        {rooms_relay_in(b.rooms), 0, on_rooms},
        {rooms_relay_out(b.rooms), 0, on_rooms},
    };
    vc_loop_t loop = {.ctl = b.d.ctl,
                      .sigfd = b.d.sigfd,
                      .arg = &b,
                      .watch = watch,
                      .nwatch = VC_ARRAY_SIZE(watch),
                      .after = after_turn,
                      .tick = sync_store};
    vc_loop_run(&loop);
    vc_log(VC_LOG_INFO, "main", "stopping");
    /* Our own stop goes in the journal like any daemon's, read back before
     * bus-in closes: said after, it waited out its linger and was lost. */
    char stopped[32];
    vc_bus_publish(b.d.bus, vc_event_topic_of(VC_EV_DAEMON_STOPPED, "bus", stopped, sizeof(stopped)),
                   VC__SEVERITY__INFO, "daemon", b.d.name, NULL);
    await_own(&b, VC_EV_DAEMON_STOPPED);
    vc_bus_destroy(&b.d.bus);
    /* Sockets close before the context terminates, or it waits for them. */
    zmq_close(b.in);
    zmq_close(b.out);
    rooms_relay_close(&b.rooms);
    webhooks_destroy(&b.webhooks);
    senders_destroy(&b.senders);
    work_metrics_free(&b.work);
    vc_daemon_fini(&b.d);
    mdb_env_sync(vc_store_env(b.store), 1);
    journal_destroy(&b.journal);
    vc_store_destroy(&b.store);
    vc_zparts_fini(&b.fr);
    return 0;
}
