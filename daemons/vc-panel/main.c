/*
 * vc-panel: arguments, configuration, the HTTPS listener, the control
 * verbs and the loop (libh2o's, as the front's). See panel.h.
 */
#include "follow.h"
#include "live.h"
#include "lockout.h"
#include "panel.h"
#include "records.h"
#include "sessions.h"
#include "terminal.h"
#include "users.h"
#include "warm.h"
#include "vc_ctl.h"
#include "vc_listen.h"
#include "vc_log.h"
#include "vc_proc.h"
#include "vc_selfsigned.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <h2o/http2.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    panel_t *p = arg;
    vc_reply_ok(reply, "vc-panel is running on https://%s/: %zu users, %zu dashboards open", p->cfg->listen,
                users_count(p), live_clients(p->live));
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "listen", "%s", p->cfg->listen);
    vc_reply_field(reply, "users", "%zu", users_count(p));
    vc_reply_field(reply, "dashboards", "%zu", live_clients(p->live));
    vc_reply_field(reply, "followers", "%zu", follow_clients(p->follow));
    vc_reply_field(reply, "terminals", "%zu", terminal_count());
    vc_reply_field(reply, "requests", "%llu", (unsigned long long)p->served);
    vc_reply_field(reply, "refused", "%llu", (unsigned long long)p->refused);
    vc_reply_field(reply, "signins", "%llu", (unsigned long long)p->signins);
    vc_reply_field(reply, "failed_signins", "%llu", (unsigned long long)p->failed_signins);
}

static void on_reload(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    panel_t *p = arg;
    vc_daemon_reload(&p->d, NULL, NULL, reply);
    /* Listen address and certificate are taken at start; the limits
     * and proxies now. lockout.c reads its limits through p->cfg. */
    p->cfg = vc_config_section(p->d.cfg, &vc_panel_settings);
    free(p->proxies);
    p->nproxies = p->cfg->ntrusted_proxies;
    p->proxies = vc_calloc(p->nproxies + 1, sizeof(vc_cidr_t));
    for (size_t i = 0; i < p->nproxies; i++)
        vc_cidr_parse(p->cfg->trusted_proxies[i], &p->proxies[i]); /* checked by validate */
}

/* passwd USER [+ the password]: sets it (a random one, answered, if none
 * comes), makes the user an admin if new, and asks for a new password
 * at the next sign-in. `vc panel passwd` sends it. */
static void on_passwd(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    panel_t *p = arg;
    if (cmd->n_args != 1 || cmd->args[0][0] == '\0' || strlen(cmd->args[0]) > 63) {
        vc_reply_fail(reply, "usage: passwd USER (the password as the payload)");
        return;
    }
    const char *user = cmd->args[0];
    for (const char *c = user; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("._-@", *c))) {
            vc_reply_fail(reply, "a user name is 1 to 63 of a-z, A-Z, 0-9, '.', '_', '-', '@'");
            return;
        }
    char *given = cmd->payload.len > 0 ? vc_strndup((const char *)cmd->payload.data, cmd->payload.len) : NULL;
    char *password = given ? given : users_random_password(), why[160];
    json_t *old = users_get(p, user);
    int rc = users_set_password(p, user, password, old ? NULL : "admin", 1, why, sizeof(why));
    json_decref(old);
    if (rc < 0) {
        vc_reply_fail(reply, "%s", why);
    } else {
        sessions_drop_user(p, user, NULL);
        /* Set by root: a lockout of the account ends with it. */
        char key[80];
        snprintf(key, sizeof(key), "u:%s", user);
        lockout_passed(p->lockout, key);
        users_first_password_spent(p, user);
        vc_reply_ok(reply, "%s's password is set; it must be changed at the next sign-in", user);
        if (given == NULL)
            vc_reply_field(reply, "password", "%s", password);
        vc_log(VC_LOG_NOTICE, "audit", "the password of %s was set from the command line", user);
    }
    sodium_memzero(password, strlen(password));
    free(password);
}

static const vc_verb_t verbs[] = {
    {"status", "", "users, open dashboards, requests and sign-ins", on_status},
    {"ping", "", "as status", on_status},
    {"reload", "", "take the stored configuration (the listener stays)", on_reload},
    {"passwd", "USER (+ the password)", "set a user's password, to be changed at the next sign-in", on_passwd},
};

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
}

/* No user yet: an admin with a random password, written for root to
 * read in DATA/panel/first-password (not logged: the log is no place
 * for a secret), to be changed at the first sign-in. */
static void first_admin(panel_t *p)
{
    if (users_count(p) > 0)
        return;
    char *dir = vc_asprintf("%s/panel", p->d.data_dir), *file = users_first_password_file(p);
    char *password = users_random_password(), why[160];
    vc_mkdirs(dir, 0700);
    mode_t old = umask(077);
    FILE *f = fopen(file, "w");
    umask(old);
    if (f && fprintf(f, "admin %s\n", password) > 0 && fclose(f) == 0 &&
        users_set_password(p, "admin", password, "admin", 1, why, sizeof(why)) == 0)
        vc_log(VC_LOG_NOTICE, "main",
               "made the first admin, \"admin\": its password is in \"%s\" (or set one with `vc panel passwd "
               "admin`); it must be changed at the first sign-in",
               file);
    else
        vc_log(VC_LOG_ERR, "main", "cannot make the first admin in \"%s\": %s", file, strerror(errno));
    sodium_memzero(password, strlen(password));
    free(password);
    free(file);
    free(dir);
}

static char *find_pages(const panel_t *p)
{
    if (p->cfg->pages && *p->cfg->pages)
        return vc_strdup(p->cfg->pages);
    /* A build runs as installed: build/bin/vc-panel finds build/share. */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char *dir = vc_asprintf("%s/../share/velocity/panel", exe);
            char *real = realpath(dir, NULL);
            free(dir);
            if (real)
                return real;
        }
    }
    return vc_strdup(VC_PANEL_PAGES);
}

static SSL_CTX *make_ssl(panel_t *p)
{
    char *cert = NULL, *key = NULL;
    if (p->cfg->tls_cert && *p->cfg->tls_cert) {
        cert = vc_strdup(p->cfg->tls_cert);
        key = vc_strdup(p->cfg->tls_key);
    } else {
        char *dir = vc_asprintf("%s/tls", p->d.data_dir);
        int rc = vc_selfsigned_ensure(dir, &cert, &key);
        free(dir);
        if (rc < 0) {
            free(cert);
            free(key);
            return NULL;
        }
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        vc_log(VC_LOG_CRIT, "main", "cannot load the certificate \"%s\" and its key \"%s\"", cert, key);
        SSL_CTX_free(ctx);
        ctx = NULL;
    } else {
        h2o_ssl_register_alpn_protocols(ctx, h2o_http2_alpn_protocols);
    }
    free(cert);
    free(key);
    return ctx;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    panel_t *p = listener->data;
    if (err != NULL)
        return;
    for (int i = 0; i < 16; i++) {
        h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
        if (sock == NULL)
            return;
        h2o_accept(&p->accept, sock);
    }
}

static void on_control(h2o_socket_t *sock, const char *err)
{
    panel_t *p = sock->data;
    vc_ctl_handle(p->d.ctl);
}

static void on_signal(h2o_socket_t *sock, const char *err)
{
    panel_t *p = sock->data;
    for (int sig; (sig = vc_proc_read_signal(p->d.sigfd)) != 0;)
        if (sig == SIGTERM || sig == SIGINT || sig == SIGQUIT)
            p->running = 0;
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    panel_t *p = H2O_STRUCT_FROM_MEMBER(panel_t, tick, entry);
    static unsigned ticks;
    vc_ctl_handle(p->d.ctl); /* commands that slipped past the edge-like ZMQ_FD */
    if (calls_reload_wanted()) {
        /* Asked from the panel's Reload: the supervisor reloaded the
         * others and left this one to itself (api_suite.c). */
        Vc__Reply *r = vc_malloc(sizeof(*r));
        vc__reply__init(r);
        on_reload(p, NULL, r);
        if (!r->ok)
            vc_log(VC_LOG_WARN, "main", "the reload asked from the panel was not taken here: %s", r->message);
        vc__reply__free_unpacked(r, NULL);
    }
    live_tick(p->live);
    follow_tick(p->follow);
    terminal_tick(p);
    warm_tick();
    if (++ticks % 60 == 0)
        sessions_expire(p);
    h2o_timeout_link(p->ctx.loop, &p->ctx.one_sec_timeout, entry);
}

static h2o_socket_t *watch_fd(panel_t *p, int fd, h2o_socket_cb cb)
{
    h2o_socket_t *s = h2o_evloop_socket_create(p->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    s->data = p;
    h2o_socket_read_start(s, cb);
    return s;
}

int main(int argc, char **argv)
{
    static panel_t p;
    vc_daemon_load(&p.d, "vc-panel", argc, argv);
    if (sodium_init() < 0)
        return 1;
    p.cfg = vc_config_section(p.d.cfg, &vc_panel_settings);
    p.nproxies = p.cfg->ntrusted_proxies;
    p.proxies = vc_calloc(p.nproxies + 1, sizeof(vc_cidr_t));
    for (size_t i = 0; i < p.nproxies; i++)
        vc_cidr_parse(p.cfg->trusted_proxies[i], &p.proxies[i]);
    p.lockout = lockout_new(&p.cfg);
    /* The terminal starter's link, if the supervisor made one (cli/terminal.c). */
    const char *tfd = getenv("VC_TERMINAL_FD");
    p.terminal_fd = tfd && *tfd ? atoi(tfd) : -1;
    if (p.terminal_fd >= 0) {
        fcntl(p.terminal_fd, F_SETFD, FD_CLOEXEC);
        /* Asked on the loop: a starter that does not answer costs 5 s, not the panel. */
        struct timeval tv = {.tv_sec = 5};
        setsockopt(p.terminal_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    } else if (p.cfg->terminal)
        vc_log(VC_LOG_WARN, "main",
               "panel.terminal is on but no terminal starter was given: start vc-panel with vc up");
    p.pages = find_pages(&p);
    char err[512] = "";
    p.store = vc_store_open(p.d.cfg->state_dir, (size_t)p.d.cfg->store.map_size, err, sizeof(err));
    if (p.store == NULL) {
        vc_log(VC_LOG_CRIT, "main", "%s", err);
        return 1;
    }
    if ((p.ssl = make_ssl(&p)) == NULL)
        return 1;
    vc_listener_t *ls = NULL;
    size_t nls = 0;
    if (vc_listen_open(p.cfg->listen, VC_LISTEN_HTTPS, &ls, &nls) < 0) {
        vc_log(VC_LOG_CRIT, "main", "cannot listen on panel.listen \"%s\"", p.cfg->listen);
        return 1;
    }
    first_admin(&p);
    vc_daemon_start(&p.d, on_command, &p);

    h2o_config_init(&p.gc);
    p.gc.max_request_entity_size = 65536;
    p.gc.server_name = h2o_iovec_init(H2O_STRLIT("")); /* no "Server: h2o/2.2.5": nothing to tell a prober */
    h2o_hostconf_t *host = h2o_config_register_host(&p.gc, h2o_iovec_init(H2O_STRLIT("vc-panel")), 65535);
    http_register(&p, host);
    h2o_context_init(&p.ctx, h2o_evloop_create(), &p.gc);
    p.accept = (h2o_accept_ctx_t){.ctx = &p.ctx, .hosts = p.gc.hosts, .ssl_ctx = p.ssl};
    h2o_socket_t **lsocks = vc_calloc(nls, sizeof(*lsocks));
    for (size_t i = 0; i < nls; i++)
        lsocks[i] = watch_fd(&p, ls[i].fd, on_accept);
    watch_fd(&p, p.d.sigfd, on_signal);
    int ctl_fd;
    size_t len = sizeof(ctl_fd);
    zmq_getsockopt(vc_ctl_socket(p.d.ctl), ZMQ_FD, &ctl_fd, &len);
    watch_fd(&p, ctl_fd, on_control);
    p.live = live_new(&p);
    p.follow = follow_new(&p);
    p.tick.cb = on_tick;
    h2o_timeout_link(p.ctx.loop, &p.ctx.one_sec_timeout, &p.tick);
    vc_log(VC_LOG_NOTICE, "main", "the panel is on https://%s/ (pages from \"%s\")", p.cfg->listen, p.pages);

    p.running = 1;
    vc_daemon_ready(&p.d);
    while (p.running)
        h2o_evloop_run(p.ctx.loop, INT32_MAX);

    /* Every API call is answered within its turn of the loop: nothing is
     * in flight but the dashboards' streams, which end with the process. */
    for (size_t i = 0; i < nls; i++) {
        h2o_socket_read_stop(lsocks[i]);
        h2o_socket_close(lsocks[i]);
    }
    vc_log(VC_LOG_INFO, "main", "stopping");
    live_destroy(&p.live);
    follow_destroy(&p.follow);
    vc_listen_free(&ls, &nls, 0);
    free(lsocks);
    lockout_destroy(&p.lockout);
    vc_store_destroy(&p.store);
    free(p.proxies);
    free(p.pages);
    vc_daemon_fini(&p.d);
    return 0;
}
