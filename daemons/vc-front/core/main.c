/*
 * vc-front: the only process that talks to clients. libh2o (evloop):
 * HTTP/1.1, HTTP/2 (ALPN and prior knowledge), TLS with SNI, static files,
 * and PHP through each site's pool (vc-php) over request links
 * (libcommon/vc_link.h; ZeroMQ carries only control and events), all on
 * one event loop.
 */
#include "access_log.h"
#include "bans.h"
#include "beneath.h"
#include "peers.h"
#include "release_watch.h"
#include "seam.h"
#include "front.h"
#include "handler.h"
#include "latency.h"
#include "metrics.h"
#include "readiness.h"
#include "tls.h"
#include "watchdog.h"
#include "vc_listen.h"
#include "vc_log.h"
#include "vc_proc.h"
#include "vc_store.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

/* How long SIGTERM waits for requests in flight, and how long it lingers
 * while connections are open, so answers already handed to h2o leave with
 * their "Connection: close". */
#define STOP_GRACE_MS 5000
#define STOP_LINGER_MS 500

typedef struct listener {
    h2o_socket_t *sock;
    h2o_accept_ctx_t *accept;
    front_t *f;
    int fd;
} listener_t;

void conn_state_release(conn_state_t *c)
{
    if (--c->refs == 0)
        free(c);
}

static void on_conn_close(void *data)
{
    conn_state_t *c = data;
    c->f->stats.connections--;
    peers_remove(c->f->peers, (struct sockaddr *)&c->peer);
    c->sock = NULL;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->f->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    conn_state_release(c);
}

vc_store_t *front_store(front_t *f)
{
    static vc_store_t *store;
    if (store == NULL) {
        char err[512];
        store = vc_store_open(f->d.cfg->state_dir, (size_t)f->d.cfg->store.map_size, err, sizeof(err));
        if (store == NULL)
            vc_log(VC_LOG_ERR, "store", "the node's state is not read: %s", err);
    }
    return store;
}

conn_state_t *conn_state_of(h2o_socket_t *sock)
{
    /* Only what we set at accept: h2o may use on_close for its own. */
    return sock && sock->on_close.cb == on_conn_close ? sock->on_close.data : NULL;
}

conn_state_t *conn_state_of_req(h2o_req_t *req)
{
    return conn_state_of(req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL);
}

static listener_t **listeners; /* each its own allocation: sock->data points at it */
static size_t nlisteners;
static h2o_socket_t *sig_sock, *ctl_sock;

/* At max_connections, the connection idle the longest (no progress for
 * the most watchdog ticks) makes room for a new client: 20,000 idle ones
 * held every new client out for the idle timeout. Returns 1 if one was
 * cut (it closes on the loop's next turn: the count may pass the limit
 * by the cuts in flight). A walk of every connection, paid only by an
 * accept at the limit, which it then makes room for. */
static int evict_idle(front_t *f)
{
    conn_state_t *pick = NULL;
    for (conn_state_t *c = f->conns; c; c = c->next)
        if (c->sock && !c->cut && !c->php_waiting && c->quiet_s > 0 && (pick == NULL || c->quiet_s > pick->quiet_s))
            pick = c;
    if (pick == NULL)
        return 0;
    pick->cut = 1;
    shutdown(pick->fd, SHUT_RDWR);
    if (f->stats.connections_evicted++ % 1000 == 0)
        vc_log(VC_LOG_NOTICE, "limits", "at front.max_connections: closing the connection idle longest (%u s)",
               pick->quiet_s);
    return 1;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    listener_t *l = listener->data;
    if (err != NULL)
        return;
    /* Accept a batch: one wakeup can carry many connections. */
    front_t *f = l->f;
    for (int i = 0; i < 64; i++) {
        /* accept4() here rather than h2o_evloop_socket_accept(): the front
         * keeps the descriptor, to cut a connection over its budgets. */
        struct sockaddr_storage peer;
        socklen_t peer_len = sizeof(peer);
        int fd = accept4(l->fd, (struct sockaddr *)&peer, &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (l->accept != &f->accept_admin && bans_is_banned(f->bans, (struct sockaddr *)&peer, vc_mono_ms())) {
            /* Closed before h2o sees it: costs a banned client nothing
             * but the handshake. */
            f->stats.connections_banned++;
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        h2o_socket_t *sock = h2o_evloop_socket_create(f->ctx.loop, fd, 0);
        if (l->accept != &f->accept_admin) {
            /* The address's own limit first: a client refused for it must
             * not cost another client its idle connection. */
            if (peers_add(f->peers, (struct sockaddr *)&peer, (unsigned)f->settings->max_connections_per_address) < 0) {
                if (f->stats.connections_refused++ % 1000 == 0)
                    vc_log(VC_LOG_WARN, "limits",
                           "an address has %lld connections open (front.max_connections_per_address): closing its "
                           "new ones",
                           (long long)f->settings->max_connections_per_address);
                h2o_socket_close(sock);
                continue;
            }
            if (f->stats.connections >= (uint64_t)f->settings->max_connections && !evict_idle(f)) {
                /* Over the limit with none idle: closed at once, so the
                 * backlog does not fill with clients that wait for nothing. */
                if (f->stats.connections_refused++ % 1000 == 0)
                    vc_log(VC_LOG_WARN, "limits", "%llu connections open (front.max_connections): closing new ones",
                           (unsigned long long)f->stats.connections);
                peers_remove(f->peers, (struct sockaddr *)&peer);
                h2o_socket_close(sock);
                continue;
            }
            f->stats.connections++;
            conn_state_t *c = vc_calloc(1, sizeof(*c));
            c->f = f;
            c->sock = sock;
            c->fd = fd;
            c->peer = peer;
            c->accepted_ms = vc_mono_ms();
            c->refs = 1;
            c->next = f->conns;
            if (f->conns)
                f->conns->prev = c;
            f->conns = c;
            sock->on_close.cb = on_conn_close;
            sock->on_close.data = c;
        }
        h2o_accept(l->accept, sock);
    }
}

/* Listeners come from the supervisor (VC_LISTEN_FDS: the port stays open
 * across our restarts) or, run alone, are bound here. */
static int open_listeners(front_t *f)
{
    vc_listener_t *ls = NULL;
    size_t n = 0;
    const char *inherited = getenv("VC_LISTEN_FDS");
    if (inherited && *inherited) {
        if (vc_listen_import(inherited, &ls, &n) < 0) {
            vc_log(VC_LOG_CRIT, "listen", "VC_LISTEN_FDS is malformed: \"%s\"", inherited);
            return -1;
        }
    } else {
        const vc_config_t *cfg = f->d.cfg;
        for (size_t i = 0; i < cfg->nlisten; i++)
            if (vc_listen_open(cfg->listen[i], VC_LISTEN_HTTP, &ls, &n) < 0)
                return -1;
        for (size_t i = 0; i < cfg->ntls_listen; i++)
            if (vc_listen_open(cfg->tls_listen[i], VC_LISTEN_HTTPS, &ls, &n) < 0)
                return -1;
        if (cfg->admin_listen && *cfg->admin_listen && vc_listen_open(cfg->admin_listen, VC_LISTEN_ADMIN, &ls, &n) < 0)
            return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int tls = ls[i].kind == VC_LISTEN_HTTPS;
        if (tls && f->tls == NULL) {
            vc_log(VC_LOG_CRIT, "listen", "an HTTPS listener (%s) but no TLS configuration", ls[i].spec);
            return -1;
        }
        const char *colon = strrchr(ls[i].spec, ':');
        if (tls && f->tls_port == 0 && colon)
            f->tls_port = (uint16_t)atoi(colon + 1);
        listener_t *l = vc_calloc(1, sizeof(*l));
        l->f = f;
        listeners = vc_realloc(listeners, (nlisteners + 1) * sizeof(*listeners));
        listeners[nlisteners++] = l;
        l->fd = ls[i].fd;
        l->accept = tls ? &f->accept_tls : ls[i].kind == VC_LISTEN_ADMIN ? &f->accept_admin : &f->accept_plain;
        /* The admin listener answers /ready: its checks run where it is. */
        if (ls[i].kind == VC_LISTEN_ADMIN && f->readiness == NULL)
            f->readiness = readiness_start(f->d.cfg, f->d.zctx);
        l->sock = h2o_evloop_socket_create(f->ctx.loop, ls[i].fd, H2O_SOCKET_FLAG_DONT_READ);
        l->sock->data = l;
        h2o_socket_read_start(l->sock, on_accept);
        static const char *const kinds[] = {"http", "https", "admin: /metrics, /ready"};
        vc_log(VC_LOG_INFO, "listen", "listening on %s (%s%s)", ls[i].spec, kinds[ls[i].kind],
               inherited ? ", from the supervisor" : "");
    }
    vc_listen_free(&ls, &n, 0);
    return 0;
}

static void close_listeners(void)
{
    for (size_t i = 0; i < nlisteners; i++)
        if (listeners[i]->sock) {
            h2o_socket_read_stop(listeners[i]->sock);
            h2o_socket_close(listeners[i]->sock);
            listeners[i]->sock = NULL;
        }
}

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    front_t *f = arg;
    vc_reply_ok(reply, "vc-front is running");
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "requests", "%llu", (unsigned long long)f->stats.requests);
    vc_reply_field(reply, "static", "%llu", (unsigned long long)f->stats.statics);
    vc_reply_field(reply, "redirects", "%llu", (unsigned long long)f->stats.redirects);
    vc_reply_field(reply, "refused", "%llu", (unsigned long long)f->stats.refused);
    vc_reply_field(reply, "sites", "%zu", f->nsites);
    seam_status(f, reply);
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

/* The core's verbs, then those a backend answers (seam.h: realtime's
 * rooms). */
static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    if (!seam_command(arg, cmd, reply))
        vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
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

/* Error pages are read once, at start: "404 /errors/404.html" (relative
 * to the root) or an absolute path. */
static int load_site_extras(site_rt_t *s, const vc_site_t *conf)
{
    for (size_t i = 0; i < conf->nerror_pages; i++) {
        int status = 0;
        char path[1024];
        if (sscanf(conf->error_pages[i], "%d %1023s", &status, path) != 2)
            continue;
        char *full = path[0] == '/' && strncmp(path, conf->root, strlen(conf->root)) != 0
                         ? vc_asprintf("%s%s", conf->root, path)
                         : vc_strdup(path);
        size_t len;
        char *body = vc_read_file(full, &len);
        if (body == NULL) {
            vc_log(VC_LOG_ERR, "site", "open() failed while reading the error page \"%s\" of site \"%s\"", full,
                   conf->name);
            free(full);
            return -1;
        }
        free(full);
        s->errors = vc_realloc(s->errors, (s->nerrors + 1) * sizeof(*s->errors));
        s->errors[s->nerrors++] = (error_page_t){status, h2o_iovec_init(body, len)};
    }
    for (size_t i = 0; i < conf->nredirects; i++) {
        char from[1024], to[2048];
        int status = 301;
        if (sscanf(conf->redirects[i], "%1023s %2047s %d", from, to, &status) < 2)
            continue;
        s->redirects = vc_realloc(s->redirects, (s->nredirects + 1) * sizeof(*s->redirects));
        s->redirects[s->nredirects++] = (redirect_rule_t){vc_strdup(from), vc_strdup(to), status};
    }
    return 0;
}

/* "Server: Velocity" unless the application sent its own, which nginx
 * passes through from php-fpm in place of its own. h2o's protocol layer
 * would add its server_name next to PHP's, so that is left empty and every
 * path adds the header through this filter instead. */
static void on_setup_server_header(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    (void)self;
    if (h2o_find_header(&req->res.headers, H2O_TOKEN_SERVER, -1) == -1)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_SERVER, "Server", H2O_STRLIT("Velocity"));
    h2o_setup_next_ostream(req, slot);
}

void server_header_register(h2o_pathconf_t *pathconf)
{
    h2o_create_filter(pathconf, sizeof(h2o_filter_t))->on_setup_ostream = on_setup_server_header;
}

void front_path_filters(front_t *f, const site_rt_t *s, h2o_pathconf_t *pathconf)
{
    server_header_register(pathconf);
    if (s->conf->gzip && f->settings->gzip) {
        h2o_compress_args_t ca = {.min_size = 256, .gzip = {.quality = 1}, .brotli = {.quality = -1}};
        h2o_compress_register(pathconf, &ca);
    }
    if (f->access_log)
        h2o_access_log_register(pathconf, f->access_log);
    latency_register(pathconf);
}

h2o_pathconf_t *front_site_path(site_rt_t *s, const char *path)
{
    VC_ASSERT(s->hostconf->paths.size < s->hostconf->paths.capacity);
    return h2o_config_register_path(s->hostconf, path, 0);
}

/* The site's part in the core: its h2o host, in which backends register
 * their paths (seam_init_sites), and the path of answers made or
 * streamed. */
static void setup_site(front_t *f, site_rt_t *s, const vc_site_t *conf)
{
    s->conf = conf;
    s->route.root = conf->root;
    s->route.root_len = strlen(conf->root);
    s->route.front_controller = conf->front_controller;
    s->route.entry_scripts = conf->entry_scripts;
    s->route.nentry_scripts = conf->nentry_scripts;
    s->route.deny = conf->deny;
    s->route.ndeny = conf->ndeny;
    s->route.never = (const char *const *)f->never;
    s->route.nnever = f->nnever;
    s->route.base = conf->deploy_to;
    char host[300];
    snprintf(host, sizeof(host), "site.%s.invalid", conf->name);
    s->hostconf = h2o_config_register_host(&f->gc, h2o_iovec_init(host, strlen(host)), 65535);
    h2o_vector_reserve(NULL, &s->hostconf->paths,
                       FRONT_SITE_PATHS + 1 + conf->ninternal_locations + conf->nsendfile_paths);
    s->answer_conf = front_site_path(s, "/.answers");
    front_path_filters(f, s, s->answer_conf);
}

int main(int argc, char **argv)
{
    static front_t f;
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
        setup_site(&f, &f.sites[i], &cfg->sites[i]);
        if (load_site_extras(&f.sites[i], &cfg->sites[i]) < 0)
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
    if (open_listeners(&f) < 0)
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
    close_listeners();
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
