/*
 * vc-front: the only process that talks to clients. libh2o (evloop):
 * HTTP/1.1, HTTP/2 (ALPN and prior knowledge), TLS with SNI, static files,
 * and PHP through each site's pool (vc-php) over request links
 * (libcommon/vc_link.h; ZeroMQ carries only control and events), all on
 * one event loop.
 */
#include "node_store.h"
#include "sites.h"
#include "access_log.h"
#include "bans.h"
#include "beneath.h"
#include "peers.h"
#include "listeners.h"
#include "release_watch.h"
#include "seam.h"
#include "front.h"
#include "handler.h"
#include "latency.h"
#include "metrics.h"
#include "readiness.h"
#include "tls.h"
#include "watchdog.h"
#include "vc_log.h"
#include "vc_proc.h"
#include "vc_store.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zmq.h>

/* How long SIGTERM waits for requests in flight, and how long it lingers
 * while connections are open, so answers already handed to h2o leave with
 * their "Connection: close". */
#define STOP_GRACE_MS 5000
#define STOP_LINGER_MS 500

static h2o_socket_t *sig_sock, *ctl_sock;

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    front_t *f = arg;
    vc_reply_ok(reply, "vc-front is running");
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "sites", "%zu", f->nsites);
    size_t ncore;
    const seam_counter_t *core = metrics_core_counters(&ncore);
    seam_status(f, core, ncore, reply);
}

static void on_reload(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_reply_ok(reply, "vc-front applies a new configuration when it restarts");
}

static const vc_verb_t verbs[] = {
    {"status", "", "the front's counters and each backend's", on_status},
    {"ping", "", "as status", on_status},
    {"stats", "", "as status", on_status},
    {"reload", "", "nothing: a front is replaced to take a new configuration", on_reload},
};

/* The core's verbs, then the backends' (seam.h: realtime's rooms). */
static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    seam_command(arg, verbs, VC_ARRAY_SIZE(verbs), cmd, reply);
}

static void on_control(h2o_socket_t *sock, const char *err)
{
    front_t *f = sock->data;
    vc_ctl_handle(f->d.ctl);
}

static void on_signal(h2o_socket_t *sock, const char *err)
{
    front_t *f = sock->data;
    for (int sig; (sig = vc_proc_read_signal(f->d.sigfd)) != 0;)
        if (sig == SIGTERM || sig == SIGINT || sig == SIGQUIT)
            f->running = 0;
}

/* Once a second: control commands that slipped past the edge-like
 * ZMQ_FD (a safety net, not the path commands normally take). */
static void on_tick(h2o_timeout_entry_t *entry)
{
    front_t *f = H2O_STRUCT_FROM_MEMBER(front_t, tick, entry);
    vc_ctl_handle(f->d.ctl);
    metrics_tick(f);
    seam_tick(f);
    watchdog_tick(f);
    tls_tickets_refresh(f->tls, f->d.conf_dir != NULL);
    tls_acme_refresh(f->tls);
    h2o_timeout_link(f->ctx.loop, &f->ctx.one_sec_timeout, entry);
}

int main(int argc, char **argv)
{
    static front_t f = {.magic = FRONT_MAGIC};
    vc_daemon_load(&f.d, "vc-front", argc, argv);
    const vc_config_t *cfg = f.d.cfg;
    f.settings = front_settings(cfg);
    signal(SIGPIPE, SIG_IGN);

    h2o_config_init(&f.gc);
    f.gc.server_name = h2o_iovec_init(H2O_STRLIT("")); /* see server_header_register() */
    /* Open static files shared within one turn of the loop (cleared after
     * each, in main's loop): an open, a stat and a close a request fewer
     * under load. h2o's default is no cache. */
    f.gc.filecache.capacity = 256;
    f.gc.max_request_entity_size = (size_t)f.settings->max_body;
    f.gc.http1.req_timeout = (uint64_t)f.settings->idle_timeout_ms;
    f.gc.http2.idle_timeout = (uint64_t)f.settings->idle_timeout_ms;
    f.gc.http2.max_concurrent_requests_per_connection = (size_t)f.settings->h2_max_streams;
    f.bans = bans_new();
    f.peers = peers_new();
    f.main_host = h2o_config_register_host(&f.gc, h2o_iovec_init(H2O_STRLIT("vc-front")), 65535);
    h2o_pathconf_t *main_path = h2o_config_register_path(f.main_host, "/", 0);
    server_header_register(main_path);
    handler_register(&f, main_path);
    f.accept_hosts[0] = f.main_host;
    f.accept_hosts[1] = NULL;
    f.admin_hosts[0] = metrics_register(&f);
    f.admin_hosts[1] = NULL;

    /* Answers past front.response_buffer wait here for slow clients
     * (stream.c). Without it they wait in the worker instead. */
    vc_mkdirs(f.settings->temp_path, 0700);
    f.temp_fd = open(f.settings->temp_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (f.temp_fd < 0)
        vc_log(VC_LOG_ERR, "main",
               "open() failed while opening front.temp_path \"%s\": %s; large answers will hold their worker until "
               "the client reads them",
               f.settings->temp_path, strerror(errno));
    if (access_log_open(&f) < 0)
        return 1;
    const char *secret_dirs[] = {cfg->data_dir, cfg->conf_dir};
    for (size_t i = 0; i < VC_ARRAY_SIZE(secret_dirs); i++)
        if (secret_dirs[i] && (f.never[f.nnever] = realpath(secret_dirs[i], NULL)) != NULL)
            f.nnever++;
    f.nsites = cfg->nsites;
    f.sites = vc_calloc(f.nsites, sizeof(site_rt_t));
    for (size_t i = 0; i < cfg->nsites; i++) {
        site_setup(&f, &f.sites[i], &cfg->sites[i]);
        if (site_load_extras(&f.sites[i], &cfg->sites[i]) < 0)
            return 1;
    }
    /* Before h2o_context_init, which sets up what they register. */
    if (seam_init_sites(&f) < 0)
        return 1;

    if (cfg->ntls_listen > 0 && (f.tls = tls_new(cfg)) == NULL)
        return 1;

    /* A connection is a descriptor: allow as many as the hard limit. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    vc_daemon_start(&f.d, on_command, &f);
    if (f.tls)
        tls_attach(f.tls, front_store(&f), f.d.bus);
    h2o_context_init(&f.ctx, h2o_evloop_create(), &f.gc);
    f.accept_plain = (h2o_accept_ctx_t){.ctx = &f.ctx, .hosts = f.accept_hosts};
    f.accept_admin = (h2o_accept_ctx_t){.ctx = &f.ctx, .hosts = f.admin_hosts};
    f.accept_tls =
        (h2o_accept_ctx_t){.ctx = &f.ctx, .hosts = f.accept_hosts, .ssl_ctx = f.tls ? tls_default_ctx(f.tls) : NULL};
    if (listeners_open(&f) < 0)
        return 1;

    /* The backends' own start: links to the pools, to the bus's rooms. */
    if (seam_start(&f) < 0)
        return 1;

    sig_sock = h2o_evloop_socket_create(f.ctx.loop, f.d.sigfd, H2O_SOCKET_FLAG_DONT_READ);
    sig_sock->data = &f;
    h2o_socket_read_start(sig_sock, on_signal);
    int ctl_fd;
    size_t len = sizeof(ctl_fd);
    zmq_getsockopt(vc_ctl_socket(f.d.ctl), ZMQ_FD, &ctl_fd, &len);
    ctl_sock = h2o_evloop_socket_create(f.ctx.loop, ctl_fd, H2O_SOCKET_FLAG_DONT_READ);
    ctl_sock->data = &f;
    h2o_socket_read_start(ctl_sock, on_control);
    f.tick.cb = on_tick;
    h2o_timeout_link(f.ctx.loop, &f.ctx.one_sec_timeout, &f.tick);
    release_watch_start(&f);

    f.running = 1;
    vc_daemon_ready(&f.d);
    while (f.running) {
        h2o_evloop_run(f.ctx.loop, INT32_MAX);
        /* Static files opened in this turn of the loop are shared by its
         * requests, then closed: a file replaced on disk is served new
         * from the next turn (as h2o's own server does). */
        h2o_filecache_clear(f.ctx.filecache);
        beneath_new_turn();
    }

    /* Stop taking connections (a replacement, or the port's owner, takes
     * them), tell HTTP/2 clients with GOAWAY and HTTP/1 ones with
     * "Connection: close", and let what is in flight finish. */
    listeners_close();
    release_watch_stop();
    h2o_context_request_shutdown(&f.ctx);
    seam_stop(&f); /* WebSockets: 1001, going away */
    readiness_stop(&f.readiness);
    uint64_t start = vc_mono_ms(), deadline = start + STOP_GRACE_MS;
    /* With no connection open there is nothing to linger for: a stop
     * with none (most stops of a test, a container's at night) is quick. */
    while ((seam_inflight(&f) > 0 || (f.conns != NULL && vc_mono_ms() < start + STOP_LINGER_MS)) &&
           vc_mono_ms() < deadline)
        h2o_evloop_run(f.ctx.loop, 50);
    vc_log(VC_LOG_INFO, "main", "stopping");
    return 0;
}
