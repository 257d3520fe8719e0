/*
 * vc-cache: the response cache's only writer. Fronts serve hits straight
 * from LMDB and push what they may store to "cache-in" (proto/cache.proto);
 * this daemon stores those offers in batches, evicts past cache.max_size,
 * and purges on command (`vc cache purge`, its control endpoint), each
 * purge announced on the bus as cache.purged with its id.
 */
#include "applied.h"
#include "cluster.h"
#include "store.h"
#include "vc_events.h"
#include "vc_confstore.h"
#include "vc_daemon.h"
#include "vc_log.h"
#include "vc_mesh.h"
#include "vc_loop.h"
#include "vc_proc.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <sodium.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Offers stored in one transaction at most: a burst is one commit. */
#define BATCH 256
/* Offers waiting in ZeroMQ's queue per front past this are dropped by the
 * front (a miss offers again). */
#define IN_HWM 10000

typedef struct cache {
    vc_daemon_t d;
    void *in;
    vc_store_t *store;
    cache_store_t *cs;
    uint64_t offers, malformed, purges;
    vc_zparts_t fr;
    cache_cluster_t cluster;
    int held;                /* as vc-mesh last said (it says so again every few seconds) */
    uint64_t repeats;        /* purges from other nodes delivered again, not applied twice */
    uint64_t next_forget_ms; /* monotonic: when the applied purges' records are next pruned */
} cache_t;

/* As purge_kind_t, then "site": everything on a site's hosts ("a,b"). */
static const char *const kinds[] = {"url", "prefix", "tag", "all", "site"};
#define KIND_SITE 4

/* One purge: what, of which hosts' entries (none: any), and who asked:
 * "operator", "php", or "mesh:NODE" for one done on another node (then id
 * is the origin's, and it is not handed back to the cluster). */
typedef struct purge_args {
    size_t kind;
    const char *value;
    int soft;
    char *const *hosts;
    size_t nhosts;
    const char *by;
    const char *id;
} purge_args_t;

/* A purge done: logged and published with its id, and handed to the other
 * nodes when it was done here. */
static void purged(cache_t *c, const purge_args_t *a, long n, uint64_t ms, char *id, size_t idlen)
{
    if (a->id)
        snprintf(id, idlen, "%s", a->id);
    else
        snprintf(id, idlen, "%lld-%d-%llu", (long long)time(NULL), (int)getpid(), (unsigned long long)++c->purges);
    char count[24];
    snprintf(count, sizeof(count), "%ld", n);
    char took[24];
    snprintf(took, sizeof(took), "%llu", (unsigned long long)ms);
    vc_log(VC_LOG_NOTICE, "purge", "purge %s by %s: %s %s%s: %ld entr%s in %llu ms", id, a->by, kinds[a->kind],
           a->value, a->soft ? " (soft)" : "", n, n == 1 ? "y" : "ies", (unsigned long long)ms);
    vc_bus_publish(c->d.bus, VC_EVENT(CACHE_PURGED), VC__SEVERITY__NOTICE, "id", id, "kind", kinds[a->kind], "value",
                   a->value, "soft", a->soft ? "1" : "0", "entries", count, "by", a->by, "ms", took, NULL);
    if (strncmp(a->by, "mesh:", 5) != 0)
        cache_cluster_hand(&c->cluster, id, kinds[a->kind], a->value, strlen(a->value), a->soft, a->hosts, a->nhosts);
}

/* Runs a purge: the entries purged, or a negative error. */
static long run_purge(cache_t *c, const purge_args_t *a, char *id, size_t idlen)
{
    uint64_t t0 = vc_mono_ms();
    long n;
    if (a->kind == KIND_SITE) {
        /* Every entry whose key's host is one of the site's, however many. */
        char *copy = vc_strdup(a->value), *save = NULL;
        char **hosts = vc_calloc(strlen(a->value) / 2 + 1, sizeof(*hosts)); /* "a,b": at most one a two bytes */
        size_t nh = 0;
        for (char *h = strtok_r(copy, ",", &save); h; h = strtok_r(NULL, ",", &save))
            hosts[nh++] = h;
        n = nh ? cache_store_purge_hosts(c->cs, PURGE_ALL, "", a->soft, hosts, nh) : -EINVAL;
        free(hosts);
        free(copy);
    } else if (a->nhosts) {
        n = cache_store_purge_hosts(c->cs, (purge_kind_t)a->kind, a->value, a->soft, a->hosts, a->nhosts);
    } else {
        n = cache_store_purge(c->cs, (purge_kind_t)a->kind, a->value, a->soft);
    }
    if (n >= 0)
        purged(c, a, n, vc_mono_ms() - t0, id, idlen);
    return n;
}

static size_t kind_of(const char *name)
{
    size_t k = 0;
    while (k < VC_ARRAY_SIZE(kinds) && strcmp(name, kinds[k]) != 0)
        k++;
    return k;
}

/* purge KIND VALUE [soft]: the purge runs at once; the reply says how many
 * entries and the purge's id. Once it is answered no front reads what it
 * purged (its transaction has committed). */
static void on_purge(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    cache_t *c = arg;
    size_t k = cmd->n_args ? kind_of(cmd->args[0]) : VC_ARRAY_SIZE(kinds);
    if (k == VC_ARRAY_SIZE(kinds) || (k != PURGE_ALL && cmd->n_args < 2)) {
        vc_reply_fail(reply, "purge: expected url|prefix|tag|site VALUE, or all; then soft if wanted");
        return;
    }
    purge_args_t a = {.kind = k, .value = k == PURGE_ALL ? "" : cmd->args[1], .by = "operator"};
    a.soft = cmd->n_args > (k == PURGE_ALL ? 1u : 2u) && strcmp(cmd->args[cmd->n_args - 1], "soft") == 0;
    uint64_t t0 = vc_mono_ms();
    char id[96];
    long n = run_purge(c, &a, id, sizeof(id));
    if (n < 0) {
        vc_reply_fail(reply, "purge failed: %s",
                      n == -EINVAL ? "expected a URL like https://host/path" : vc_strerror((int)n));
        return;
    }
    vc_reply_ok(reply, "purged %ld entr%s", n, n == 1 ? "y" : "ies");
    vc_reply_field(reply, "id", "%s", id);
    vc_reply_field(reply, "entries", "%ld", n);
    vc_reply_field(reply, "ms", "%llu", (unsigned long long)(vc_mono_ms() - t0));
}

/* replay ORIGIN ID KIND VALUE SOFT [HOST...]: a purge another node did,
 * sent by vc-mesh (kind "key": one entry, an unsafe method's invalidation
 * there). Applied here and announced, never handed back. */
static void on_replay(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    cache_t *c = arg;
    if (cmd->n_args < 5) {
        vc_reply_fail(reply, "replay: expected ORIGIN ID KIND VALUE SOFT [HOST...]");
        return;
    }
    /* Delivered again (an ack lost on the way): applied once only. */
    int seen = applied_seen(c->store, cmd->args[0], cmd->args[1]);
    if (seen == 1) {
        c->repeats++;
        vc_log(VC_LOG_INFO, "cluster", "purge %s from node %s came again: it was applied here already", cmd->args[1],
               cmd->args[0]);
        vc_reply_ok(reply, "already applied");
        return;
    }
    char by[96];
    snprintf(by, sizeof(by), "mesh:%s", cmd->args[0]);
    int soft = strcmp(cmd->args[4], "1") == 0;
    long n;
    if (strcmp(cmd->args[2], "key") == 0) {
        Vc__CacheStore o = VC__CACHE_STORE__INIT, *op = &o;
        o.invalidate = 1;
        o.key.data = (uint8_t *)cmd->args[3];
        o.key.len = strlen(cmd->args[3]);
        n = cache_store_put(c->cs, &op, 1);
    } else {
        size_t k = kind_of(cmd->args[2]);
        if (k == VC_ARRAY_SIZE(kinds)) {
            vc_reply_fail(reply, "replay: \"%s\" is not a kind of purge", cmd->args[2]);
            return;
        }
        purge_args_t a = {k, cmd->args[3], soft, cmd->args + 5, cmd->n_args - 5, by, cmd->args[1]};
        char id[96];
        n = run_purge(c, &a, id, sizeof(id));
    }
    if (n < 0) {
        vc_reply_fail(reply, "replay failed: %s", vc_strerror((int)n));
        return;
    }
    /* After the purge: a crash between the two applies it again at most
     * once more, never loses it. */
    int r = applied_note(c->store, cmd->args[0], cmd->args[1], vc_wall_ms());
    if (r < 0)
        vc_log(VC_LOG_WARN, "cluster", "purge %s from node %s applied, but not noted as applied: %s", cmd->args[1],
               cmd->args[0], vc_strerror(r));
    vc_reply_ok(reply, "replayed: %ld", n);
}

/* hold on | hold until BOOT_MS: vc-mesh holds this node's cache while it
 * may have missed other nodes' purges, and once it has replayed them
 * leases it out, renewing the lease each heartbeat it is linked
 * (VC_CACHE_META_LEASE): a lease not renewed lapses by itself. */
static void on_hold(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    cache_t *c = arg;
    int on = cmd->n_args == 1 && !strcmp(cmd->args[0], "on");
    char *end = NULL;
    unsigned long long until =
        cmd->n_args == 2 && !strcmp(cmd->args[0], "until") ? strtoull(cmd->args[1], &end, 10) : 0;
    /* A lease runs an hour at most: a deadline further off is a mistake. */
    if (!on && (until == 0 || *end || until > vc_boot_ms() + 3600 * 1000ULL)) {
        vc_reply_fail(reply, "hold: expected \"on\", or \"until\" and a CLOCK_BOOTTIME deadline in ms within an hour");
        return;
    }
    int r = cache_store_lease(c->cs, on ? 0 : (uint64_t)until);
    if (r < 0) {
        vc_reply_fail(reply, "hold failed: %s", vc_strerror(r));
        return;
    }
    if (on != c->held)
        vc_log(VC_LOG_NOTICE, "cluster", "the cache %s",
               on ? "is held: every request misses until vc-mesh has replayed "
                    "the other nodes' purges"
                  : "answers again");
    c->held = on;
    vc_reply_ok(reply, "%s", on ? "held" : "answering");
}

/* Tags a site's PHP purged (vc_cache_purge_tags()), on its hosts only. */
static void on_php_purge(cache_t *c, const Vc__CachePurge *p)
{
    if (p->n_hosts == 0)
        return; /* never everyone's */
    for (size_t i = 0; i < p->n_tags && i < VC_CACHE_TAGS_MAX; i++) {
        purge_args_t a = {PURGE_TAG, p->tags[i], p->soft, p->hosts, p->n_hosts, "php", NULL};
        char id[96];
        run_purge(c, &a, id, sizeof(id));
    }
}

static void apply_settings(void *arg, const vc_config_t *cfg)
{
    cache_t *c = arg;
    cache_store_set_settings(c->cs, vc_cache_settings_of(cfg));
}

static void on_reload(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    cache_t *c = arg;
    vc_daemon_reload(&c->d, apply_settings, c, reply);
}

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    cache_t *c = arg;
    cache_counts_t n;
    cache_store_counts(c->cs, &n);
    const cache_settings_t *cfg = vc_cache_settings_of(c->d.cfg);
    vc_reply_ok(reply, "vc-cache is running");
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "entries", "%llu", (unsigned long long)n.entries);
    vc_reply_field(reply, "bytes", "%llu", (unsigned long long)n.bytes);
    vc_reply_field(reply, "max_size", "%lld", (long long)cfg->max_size);
    vc_reply_field(reply, "offers", "%llu", (unsigned long long)c->offers);
    vc_reply_field(reply, "purges_repeated", "%llu", (unsigned long long)c->repeats);
    vc_reply_field(reply, "stored", "%llu", (unsigned long long)n.stored);
    vc_reply_field(reply, "refused", "%llu", (unsigned long long)n.refused);
    vc_reply_field(reply, "malformed", "%llu", (unsigned long long)c->malformed);
    vc_reply_field(reply, "evicted", "%llu", (unsigned long long)n.evicted);
    vc_reply_field(reply, "purged", "%llu", (unsigned long long)n.purged);
    vc_reply_field(reply, "invalidated", "%llu", (unsigned long long)n.invalidated);
    vc_reply_field(reply, "soft_pending", "%llu", (unsigned long long)n.soft_tags);
    if (c->cluster.out) {
        vc_reply_field(reply, "cluster_handed", "%llu", (unsigned long long)c->cluster.handed);
        vc_reply_field(reply, "cluster_dropped", "%llu", (unsigned long long)c->cluster.dropped);
    }
}

static void on_show(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    cache_t *c = arg;
    int r = cmd->n_args == 1 ? cache_store_show(c->cs, cmd->args[0], reply) : -EINVAL;
    if (r < 0)
        vc_reply_fail(reply, "show: %s", r == -EINVAL ? "expected a URL like https://host/path" : vc_strerror(r));
    else
        vc_reply_ok(reply, "%zu stored", reply->n_records);
}

static void on_check(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    cache_t *c = arg;
    char err[512];
    long n = cache_store_check(c->cs, err, sizeof(err));
    if (n < 0)
        vc_reply_fail(reply, "the cache's databases disagree: %s", err);
    else
        vc_reply_ok(reply, "%ld entries, consistent", n);
}

static const vc_verb_t verbs[] = {
    {"status", "", "counts: entries, bytes, stored, refused, evicted, purged", on_status},
    {"ping", "", "as status", on_status},
    {"stats", "", "as status", on_status},
    {"purge", "url|prefix|tag|site VALUE | all [soft]", "drop entries; answered once no front reads them", on_purge},
    {"replay", "ORIGIN ID KIND VALUE SOFT [HOST...]", "a purge another node did (vc-mesh)", on_replay},
    {"hold", "on|until BOOT_MS",
     "no entry answers while held, nor past its lease (vc-mesh: held until it has replayed purges, then leased each "
     "heartbeat)",
     on_hold},
    {"show", "URL", "what is stored for a URL, a record a variant", on_show},
    {"check", "", "whether the cache's databases agree", on_check},
    {"reload", "", "take the stored configuration's cache settings", on_reload},
};

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
}

/* Up to BATCH offers waiting on cache-in, stored in one transaction. */
static void on_offers(void *arg)
{
    cache_t *c = arg;
    Vc__CacheStore *batch[BATCH];
    size_t n = 0;
    while (n < BATCH && vc_zparts_recv(c->in, &c->fr, ZMQ_DONTWAIT) > 0) {
        Vc__CacheStore *o =
            c->fr.n == 1 ? vc__cache_store__unpack(NULL, zmq_msg_size(&c->fr.f[0]), zmq_msg_data(&c->fr.f[0])) : NULL;
        vc_zparts_close(&c->fr);
        c->offers++;
        if (o == NULL) {
            if (c->malformed++ == 0)
                vc_log(VC_LOG_WARN, "offers", "dropped a malformed offer (counted in vc cache stats)");
            continue;
        }
        if (o->invalidate)
            cache_cluster_hand(&c->cluster, "", "key", (const char *)o->key.data, o->key.len, 0, NULL, 0);
        if (o->purge || o->n_touch) {
            /* In order: what the front offered before it is stored first. */
            if (n)
                cache_store_put(c->cs, batch, n);
            while (n > 0)
                vc__cache_store__free_unpacked(batch[--n], NULL);
            if (o->purge)
                on_php_purge(c, o->purge);
            else
                cache_store_touch(c->cs, o->touch, o->n_touch);
            vc__cache_store__free_unpacked(o, NULL);
            continue;
        }
        batch[n++] = o;
    }
    if (n)
        cache_store_put(c->cs, batch, n);
    for (size_t i = 0; i < n; i++)
        vc__cache_store__free_unpacked(batch[i], NULL);
}

/* Once a second: expiry, the size bound, and the store's writes to disk. */
static void maintain(void *arg)
{
    cache_t *c = arg;
    cache_store_maintain(c->cs);
    /* The applied purges are kept as long as the stream keeps a purge. */
    uint64_t now = vc_mono_ms();
    if (c->cluster.out && now >= c->next_forget_ms) {
        c->next_forget_ms = now + 60000;
        long n = applied_forget(c->store, vc_wall_ms() - vc_mesh_settings_of(c->d.cfg)->purge_keep_ms);
        if (n < 0)
            vc_log(VC_LOG_WARN, "cluster", "the applied purges' records could not be pruned: %s", vc_strerror((int)n));
    }
    mdb_env_sync(vc_store_env(c->store), 1);
}

int main(int argc, char **argv)
{
    cache_t c = {0};
    vc_daemon_load(&c.d, "vc-cache", argc, argv);
    if (sodium_init() < 0)
        return 1;
    char err[512] = "";
    c.store = vc_store_open(c.d.cfg->state_dir, (size_t)c.d.cfg->store.map_size, err, sizeof(err));
    if (c.store == NULL) {
        vc_log(VC_LOG_CRIT, "main", "%s", err);
        return 1;
    }
    /* A cache, not a ledger: each commit is not synced; the map is synced
     * once a second. A crash of this process loses nothing committed; a
     * power cut may lose the last second of stores. */
    mdb_env_set_flags(vc_store_env(c.store), MDB_NOSYNC, 1);
    c.cs = cache_store_new(c.store, vc_cache_settings_of(c.d.cfg));
    if (c.cs == NULL) {
        vc_log(VC_LOG_CRIT, "main", "could not open the cache's databases in \"%s\"", c.d.cfg->state_dir);
        return 1;
    }
    vc_daemon_start(&c.d, on_command, &c);
    char *in_ep = vc_config_endpoint(c.d.cfg, "cache-in");
    c.in = vc_socket_hwm(c.d.zctx, ZMQ_PULL, in_ep, 1, 0, IN_HWM);
    if (c.in == NULL) {
        vc_log(VC_LOG_CRIT, "main", "zmq_bind() failed while opening \"%s\": %s", in_ep, zmq_strerror(errno));
        return 1;
    }
    free(in_ep);
    if (cache_cluster_open(&c.cluster, c.d.zctx, c.d.cfg) < 0)
        return 1;
    /* A node starting may have missed purges: held until vc-mesh says. */
    c.held = c.cluster.out != NULL;
    if (c.held && cache_store_lease(c.cs, 0) < 0)
        vc_log(VC_LOG_ERR, "cluster", "could not hold the cache until vc-mesh has replayed purges");
    vc_daemon_ready(&c.d);

    const vc_watch_t watch[] = {{c.in, 0, on_offers}};
    vc_loop_t loop = {.ctl = c.d.ctl, .sigfd = c.d.sigfd, .arg = &c, .watch = watch, .nwatch = 1, .tick = maintain};
    vc_loop_run(&loop);
    vc_log(VC_LOG_INFO, "main", "stopping");
    zmq_close(c.in);
    cache_cluster_close(&c.cluster);
    vc_daemon_fini(&c.d);
    mdb_env_sync(vc_store_env(c.store), 1);
    cache_store_destroy(&c.cs);
    vc_store_destroy(&c.store);
    vc_zparts_fini(&c.fr);
    return 0;
}
