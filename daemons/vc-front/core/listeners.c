/*
 * The front's listening sockets: inherited from the supervisor or bound
 * here, and the accept of each client connection, where bans and the
 * connection limits are held.
 */
#include "bans.h"
#include "conn.h"
#include "listeners.h"
#include "peers.h"
#include "readiness.h"
#include "vc_listen.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct listener {
    h2o_socket_t *sock;
    h2o_accept_ctx_t *accept;
    front_t *f;
    int fd;
} listener_t;

static listener_t **listeners; /* each its own allocation: sock->data points at it */
static size_t nlisteners;

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
            if (f->stats.connections >= (uint64_t)f->settings->max_connections && !conn_evict_idle(f)) {
                /* Over the limit with none idle: closed at once, so the
                 * backlog does not fill with clients that wait for nothing. */
                if (f->stats.connections_refused++ % 1000 == 0)
                    vc_log(VC_LOG_WARN, "limits", "%llu connections open (front.max_connections): closing new ones",
                           (unsigned long long)f->stats.connections);
                peers_remove(f->peers, (struct sockaddr *)&peer);
                h2o_socket_close(sock);
                continue;
            }
            conn_state_add(f, sock, fd, &peer);
        }
        h2o_accept(l->accept, sock);
    }
}

/* Listeners come from the supervisor (VC_LISTEN_FDS: the port stays open
 * across our restarts) or, run alone, are bound here. */
int listeners_open(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
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

void listeners_close(void)
{
    for (size_t i = 0; i < nlisteners; i++)
        if (listeners[i]->sock) {
            h2o_socket_read_stop(listeners[i]->sock);
            h2o_socket_close(listeners[i]->sock);
            listeners[i]->sock = NULL;
        }
}
