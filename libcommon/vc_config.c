#include "vc_config.h"
#include "vc_cache.h"
#include "vc_curve.h"
#include "vc_realtime.h"
#include "vc_config_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libconfig.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ---- the schema: every setting a file may contain --------------------- */

#define G(field) offsetof(vc_config_t, field)
#define S(field) offsetof(vc_site_t, field)
#define BIG INT64_MAX

static const struct spec global_specs[] = {
    {"listen", T_LIST, G(listen), 0, 0, "addresses the front serves HTTP on (\":8080\", \"127.0.0.1:80\")"},
    {"tls_listen", T_LIST, G(tls_listen), 0, 0, "addresses the front serves HTTPS on; [] turns HTTPS off"},
    {"admin_listen", T_STR, G(admin_listen), 0, 0, "address of /metrics, /ready and PURGE (keep it private)"},
    {"link_key", T_STR, G(link_key), 0, 0, "the PHP link over TCP: both sides prove this key (32+ characters)"},
    {"curve_secret_key", T_STR, G(curve_secret_key), 0, 0,
     "ZeroMQ endpoints over TCP use CurveZMQ with this key (vc keygen)"},
    {"user", T_STR, G(user), 0, 0, "started as root, the daemons run as this user"},
    {"allow_root", T_BOOL, G(allow_root), 0, 0, "true: everything stays root (containers)"},
    {"log_dir", T_STR, G(log_dir), 0, 0, "where access.log and vc.log go (absolute; default DATA/log)"},
    {"config_releases", T_STR, G(config_releases), 0, 0,
     "site files from signed releases of \"@config\" are read from here"},
    {"deploy.allowed_bases", T_LIST, G(deploy_bases), 0, 0, "directories a site's deploy_to may be below"},
    {"log.level", T_LOGLEVEL, G(log_level), 0, 0, "debug, info, notice, warn or error"},
    {"log.format", T_LOGFORMAT, G(log_json), 0, 0, "\"text\" or \"json\" lines"},
    {"store.map_size", T_SIZE, G(store.map_size), 1 << 20, BIG, "the largest the node's LMDB store may grow"},
};

static const struct spec site_specs[] = {
    {"site.hosts", T_LIST, S(hosts), 0, 0, "the names it answers (\"*.shop.example\": a wildcard)"},
    {"site.root", T_STR, S(root), 0, 0, "its document root"},
    {"site.default", T_BOOL, S(is_default), 0, 0, "the site for hosts no site names"},
    {"site.tls_cert", T_STR, S(tls_cert), 0, 0, "its certificate chain (PEM file)"},
    {"site.tls", T_STR, S(tls), 0, 0, "\"acme\": vc-acme gets and renews its certificate"},
    {"site.acme_challenge", T_STR, S(acme_challenge), 0, 0,
     "\"http-01\", \"tls-alpn-01\" or \"dns-01\" (wildcards; needs acme.dns_hook)"},
    {"site.acme_directory", T_STR, S(acme_directory), 0, 0, "its own CA instead of acme.directory"},
    {"site.acme_on_demand", T_BOOL, S(acme_on_demand), 0, 0,
     "the default site only: a certificate for any host a handshake names"},
    {"site.tls_key", T_STR, S(tls_key), 0, 0, "the key of site.tls_cert (PEM file)"},
    {"site.front_controller", T_BOOL, S(front_controller), 0, 0,
     "unknown paths run /index.php (try_files $uri $uri/ /index.php)"},
    {"site.entry_scripts", T_LIST, S(entry_scripts), 0, 0, "the only .php files that run, from the root ([]: any)"},
    {"site.https_redirect", T_BOOL, S(https_redirect), 0, 0, "plain HTTP gets a 301 to HTTPS"},
    {"site.hsts", T_DURATION, S(hsts_max_age), 0, BIG, "Strict-Transport-Security max-age on HTTPS answers (0: none)"},
    {"site.static_max_age", T_DURATION, S(static_max_age), -1, BIG,
     "Cache-Control max-age of static files (-1: no header)"},
    {"site.gzip", T_BOOL, S(gzip), 0, 0, "text answers are gzip-compressed for clients that accept it"},
    {"site.cache", T_BOOL, S(cache), 0, 0, "PHP's answers may be cached, if they say so"},
    {"site.cache_rules", T_LIST, S(cache_rules), 0, 0, "per path prefix: off, sessions, ttl=, max_ttl=, grace="},
    {"site.canonical_host", T_STR, S(canonical_host), 0, 0, "other hosts of the site get a 301 to this one"},
    {"site.redirects", T_LIST, S(redirects), 0, 0, "\"FROM TO [STATUS]\": exact paths redirected (301, 302, 307, 308)"},
    {"site.error_pages", T_LIST, S(error_pages), 0, 0, "\"STATUS FILE\": the page of the front's own 4xx"},
    {"site.deny", T_LIST, S(deny), 0, 0, "path prefixes answered 403"},
    {"site.htaccess", T_BOOL, S(htaccess), 0, 0, "the access and rewrite rules of the tree's .htaccess files apply"},
    {"site.internal_locations", T_LIST, S(internal_locations), 0, 0,
     "\"PREFIX DIR\": X-Accel-Redirect targets, 404 to clients"},
    {"site.sendfile_paths", T_LIST, S(sendfile_paths), 0, 0, "directories X-Sendfile may name files in"},
    {"site.deploy_to", T_STR, S(deploy_to), 0, 0, "`vc deploy` puts its releases here (below deploy.allowed_bases)"},
    {"site.shared", T_LIST, S(shared), 0, 0, "paths kept across releases, links to DEPLOY_TO/shared/PATH"},
    {"site.deploy_exclude", T_LIST, S(deploy_exclude), 0, 0, "paths left out of every release"},
    {"site.keep_releases", T_INT, S(keep_releases), 2, 1000, "releases kept on disk"},
    {"site.deploy_quorum", T_INT, S(deploy_quorum), 0, 1000,
     "in a cluster: nodes that must hold a release before it switches"},
    {"site.health_check", T_STR, S(health_check), 0, 0,
     "a path that must answer 200 after a switch, or it is rolled back"},
    {"site.pool", T_STR, S(pool), 0, 0, "the PHP pool serving it (default: the php block's)"},
    {"site.schedule", T_LIST, S(schedule), 0, 0, "cron lines, \"MIN HOUR DAY MONTH WEEKDAY COMMAND\", run in its pool"},
    {"site.schedule_timeout", T_DURATION, S(schedule_timeout_ms), 0, BIG,
     "a scheduled run still going after this is stopped (0: never)"},
    {"site.timezone", T_STR, S(timezone), 0, 0, "its schedule's time zone (\"Europe/Paris\"; default: the machine's)"},
    {"site.deploy_hooks.build", T_LIST, S(hooks_build), 0, 0,
     "commands `vc deploy` runs in a copy of the tree before signing it (composer install)"},
    {"site.deploy_hooks.before_switch", T_LIST, S(hooks_before_switch), 0, 0,
     "commands run in the new release, in the pool, before the switch (a migration); one failing: no switch"},
    {"site.deploy_hooks.after_switch", T_LIST, S(hooks_after_switch), 0, 0,
     "commands run in the new release, in the pool, on every node after its switch (config:cache)"},
    {"site.realtime_apps", T_LIST, S(realtime_apps), 0, 0, "\"ID KEY SECRET\": its Pusher apps"},
    {"site.realtime_origins", T_LIST, S(realtime_origins), 0, 0,
     "pages that may open a WebSocket (none: the site's own; \"*\": any)"},
    {"site.realtime_webhooks", T_LIST, S(realtime_webhooks), 0, 0, "\"URL [EVENT,...]\": where each app's webhooks go"},
    {"site.mercure_publisher_key", T_STR, S(mercure_publisher_key), 0, 0,
     "the key that signs Mercure publishers' JWTs"},
    {"site.mercure_subscriber_key", T_STR, S(mercure_subscriber_key), 0, 0,
     "the key that signs Mercure subscribers' JWTs"},
    {"site.socketio.path", T_STR, S(socketio_path), 0, 0,
     "where Socket.IO clients connect (\"/socket.io/\"; none: off)"},
    {"site.socketio.namespaces", T_LIST, S(socketio_namespaces), 0, 0, "the namespaces clients may join ([]: \"/\")"},
    {"site.socketio.ping_interval", T_DURATION, S(socketio_ping_interval_ms), 1000, 3600 * 1000,
     "how often the server pings each client"},
    {"site.socketio.ping_timeout", T_DURATION, S(socketio_ping_timeout_ms), 1000, 3600 * 1000,
     "a client that has not answered a ping by then is closed"},
    {"site.socketio.max_payload", T_SIZE, S(socketio_max_payload), 1024, 64 << 20,
     "the largest message a client may send (larger: closed, 1009)"},
    {"site.socketio.recovery", T_DURATION, S(socketio_recovery_ms), 0, 24 * 3600 * 1000,
     "how long a socket cut off keeps its id, rooms and missed events for its client to come back (0: off)"},
    {"site.socketio.handler", T_STR, S(socketio_handler), 0, 0,
     "the PHP script that handles connects, events and disconnects (\"/socket.php\", the site's URL path; none: "
     "no handler)"},
};

/* Environment variables and the settings they set. */
static const struct {
    const char *env, *path;
} env_map[] = {
    {"VC_LISTEN", "listen"},
    {"VC_TLS_LISTEN", "tls_listen"},
    {"VC_ADMIN_LISTEN", "admin_listen"},
    {"VC_LINK_KEY", "link_key"},
    {"VC_CURVE_SECRET_KEY", "curve_secret_key"},
    {"VC_USER", "user"},
    {"VC_ALLOW_ROOT", "allow_root"},
    {"VC_PHP_USER", "php.user"},
    {"VC_PHP_GROUP", "php.group"},
    {"VC_OPEN_BASEDIR", "php.open_basedir"},
    {"VC_PRIVATE_MOUNTS", "php.private_mounts"},
    {"VC_SYSCALL_FILTER", "php.syscall_filter"},
    {"VC_MODE", "php.mode"},
    {"VC_WORKERS", "php.workers"},
    {"VC_WORKER_SCRIPT", "php.worker_script"},
    {"VC_WORKER_RESTORE", "php.worker_restore"},
    {"VC_PHP_INI", "php.ini"},
    {"VC_PHP_INI_FILE", "php.ini_file"},
    {"VC_MAX_REQUESTS", "php.max_requests"},
    {"VC_LEND_CONNECTIONS", "php.lend_connections"},
    {"VC_CACHE", "cache.enabled"},
    {"VC_LOG_LEVEL", "log.level"},
    {"VC_LOG_FORMAT", "log.format"},
    {"VC_ROOT", "root"},
    {"VC_ENDPOINTS", "endpoints"},
};

const char *vc_config_env_name(size_t i)
{
    if (i < VC_ARRAY_SIZE(env_map))
        return env_map[i].env;
    i -= VC_ARRAY_SIZE(env_map);
    for (size_t k = 0; vc_sections[k]; i -= vc_sections[k++]->nenv)
        if (i < vc_sections[k]->nenv)
            return vc_sections[k]->env[i].env;
    return NULL;
}

const char *vc_config_env_path(const char *env)
{
    for (size_t j = 0; j < VC_ARRAY_SIZE(env_map); j++)
        if (strcmp(env_map[j].env, env) == 0)
            return env_map[j].path;
    return vc_config_section_env(env);
}

/* ---- errors ----------------------------------------------------------- */

int vc_config_fail(struct ctx *c, int line, const char *fmt, ...)
{
    int n =
        line > 0 ? snprintf(c->err, c->errlen, "%s:%d: ", c->file, line) : snprintf(c->err, c->errlen, "%s: ", c->file);
    if (n < 0 || (size_t)n >= c->errlen)
        return -VC_ERR_CONFIG;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -VC_ERR_CONFIG;
}

/* The sockets `endpoints` may move (vc_config_endpoint's names): a typo
 * would otherwise move nothing, without a word. */
static int known_endpoint(const char *name)
{
    static const char *const names[] = {"php",        "bus-in",     "bus-out",     "ctl-vc",
                                        "ctl-vc-bus", "ctl-vc-php", "ctl-vc-front"};
    for (size_t i = 0; i < VC_ARRAY_SIZE(names); i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    /* And each daemon's own: its control endpoint and what it declares. */
    for (size_t k = 0; vc_sections[k]; k++) {
        const vc_section_t *sec = vc_sections[k];
        if (sec->supervision && strncmp(name, "ctl-", 4) == 0 && strcmp(name + 4, sec->supervision->binary) == 0)
            return 1;
        for (size_t i = 0; sec->endpoints && sec->endpoints[i]; i++)
            if (strcmp(sec->endpoints[i], name) == 0)
                return 1;
    }
    return 0;
}

/* Walks a group, setting every leaf; unknown names are errors, so a typo
 * never passes silently. */
int vc_config_walk(struct ctx *c, vc_config_t *cfg, config_setting_t *group, const char *prefix,
                   const struct spec *specs, size_t nspecs, void *base)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(s);
        char path[128];
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", name);
        int line = (int)config_setting_source_line(s);
        if (strcmp(path, "endpoints") == 0 && cfg != NULL) {
            if (!config_setting_is_group(s))
                return vc_config_fail(c, line, "endpoints: expected a group like { php = \"tcp://...\"; }");
            for (int j = 0; j < config_setting_length(s); j++) {
                config_setting_t *e = config_setting_get_elem(s, (unsigned)j);
                const char *uri = config_setting_get_string(e);
                if (!known_endpoint(config_setting_name(e)))
                    return vc_config_fail(c, (int)config_setting_source_line(e),
                                          "endpoints.%s: not an endpoint of the suite (php, bus-in, bus-out, ctl-vc, "
                                          "ctl-vc-bus, ctl-vc-php, ctl-vc-front)",
                                          config_setting_name(e));
                if (uri == NULL || (strncmp(uri, "ipc://", 6) && strncmp(uri, "tcp://", 6)))
                    return vc_config_fail(c, (int)config_setting_source_line(e),
                                          "endpoints.%s: expected \"ipc://PATH\" or \"tcp://HOST:PORT\"",
                                          config_setting_name(e));
                cfg->endpoints = vc_realloc(cfg->endpoints, (cfg->nendpoints + 1) * sizeof(*cfg->endpoints));
                cfg->endpoints[cfg->nendpoints].name = vc_strdup(config_setting_name(e));
                cfg->endpoints[cfg->nendpoints].origin =
                    vc_asprintf("%s:%d", c->file, (int)config_setting_source_line(e));
                cfg->endpoints[cfg->nendpoints++].uri = vc_strdup(uri);
            }
            continue;
        }
        if ((strcmp(path, "site.background") == 0 || strcmp(path, "site.schedule") == 0) && base != cfg) {
            int r = path[5] == 'b' ? vc_background_read(c, base, s) : vc_schedule_read(c, base, s);
            if (r < 0)
                return r;
            continue;
        }
        if (strcmp(path, "pools") == 0 && cfg != NULL) {
            if (!config_setting_is_group(s))
                return vc_config_fail(c, line, "pools: expected a group like { shop: { user = \"shop\"; }; }");
            int r = vc_pools_read(c, cfg, s);
            if (r < 0)
                return r;
            continue;
        }
        const struct spec *sp = vc_config_find_spec(specs, nspecs, path);
        void *into = base;
        if (sp == NULL && cfg != NULL && base == cfg && (sp = vc_config_find_spec(vc_pool_specs, vc_pool_nspecs, path)))
            into = &cfg->php; /* php.*: the default pool's settings */
        if (sp == NULL && cfg != NULL && base == cfg)
            sp = vc_config_section_spec(cfg, path, &into);
        if (sp != NULL && cfg != NULL && base == cfg) {
            /* Where, for the checks that see values only (a daemon's
             * section's validate, deploy.allowed_bases). */
            cfg->origins = vc_realloc(cfg->origins, (cfg->norigins + 1) * sizeof(char *));
            cfg->origins[cfg->norigins++] = vc_asprintf("%s %s:%d", path, c->file, line);
        }
        if (sp != NULL) {
            int r = vc_config_set_setting(c, sp, into, s);
            if (r < 0)
                return r;
        } else if (config_setting_is_group(s)) {
            int r = vc_config_walk(c, cfg, s, path, specs, nspecs, base);
            if (r < 0)
                return r;
        } else {
            return vc_config_fail(c, line, "unknown setting \"%s\"", path);
        }
    }
    return 0;
}

const struct spec *vc_config_global_specs(size_t *n)
{
    *n = VC_ARRAY_SIZE(global_specs);
    return global_specs;
}

const struct spec *vc_config_site_specs(size_t *n)
{
    *n = VC_ARRAY_SIZE(site_specs);
    return site_specs;
}

void vc_site_defaults(vc_site_t *s)
{
    memset(s, 0, sizeof(*s));
    s->front_controller = 1;
    s->static_max_age = -1;
    s->gzip = 1;
    s->cache = 1;
    s->htaccess = 1;
    s->keep_releases = 5;
    s->schedule_timeout_ms = 3600 * 1000;
    s->socketio_ping_interval_ms = 25000; /* socket.io 4.8's defaults */
    s->socketio_ping_timeout_ms = 20000;
    s->socketio_max_payload = 1000000;
}

static void site_fini(vc_site_t *s)
{
    free(s->name);
    vc_config_free_list(&s->hosts, &s->nhosts);
    free(s->root);
    free(s->tls_cert);
    free(s->tls);
    free(s->acme_challenge);
    free(s->acme_directory);
    free(s->tls_key);
    free(s->canonical_host);
    free(s->mercure_publisher_key);
    free(s->mercure_subscriber_key);
    free(s->socketio_path);
    free(s->socketio_handler);
    vc_config_free_list(&s->socketio_namespaces, &s->nsocketio_namespaces);
    vc_config_free_list(&s->redirects, &s->nredirects);
    vc_config_free_list(&s->entry_scripts, &s->nentry_scripts);
    vc_config_free_list(&s->cache_rules, &s->ncache_rules);
    vc_config_free_list(&s->realtime_apps, &s->nrealtime_apps);
    vc_config_free_list(&s->realtime_origins, &s->nrealtime_origins);
    vc_config_free_list(&s->realtime_webhooks, &s->nrealtime_webhooks);
    vc_config_free_list(&s->error_pages, &s->nerror_pages);
    vc_config_free_list(&s->deny, &s->ndeny);
    vc_config_free_list(&s->internal_locations, &s->ninternal_locations);
    vc_config_free_list(&s->sendfile_paths, &s->nsendfile_paths);
    free(s->deploy_to);
    free(s->health_check);
    vc_config_free_list(&s->shared, &s->nshared);
    vc_config_free_list(&s->deploy_exclude, &s->ndeploy_exclude);
    free(s->pool);
    vc_background_free(s);
    vc_config_free_list(&s->schedule, &s->nschedule);
    free(s->timezone);
    vc_config_free_list(&s->hooks_build, &s->nhooks_build);
    vc_config_free_list(&s->hooks_before_switch, &s->nhooks_before_switch);
    vc_config_free_list(&s->hooks_after_switch, &s->nhooks_after_switch);
    free(s->source);
}

static int read_source(struct ctx *c, const Vc__ConfigSource *src, vc_config_t *cfg)
{
    c->file = src->name;
    char *text = vc_strndup((const char *)src->text.data, src->text.len);
    config_t lc;
    config_init(&lc);
    int r = 0;
    if (config_read_string(&lc, text) != CONFIG_TRUE) {
        r = vc_config_fail(c, config_error_line(&lc), "%s", config_error_text(&lc));
        goto done;
    }
    config_setting_t *root = config_root_setting(&lc);
    if (!src->site) {
        if (cfg->conf_dir == NULL && strrchr(src->name, '/')) {
            cfg->conf_dir = vc_strndup(src->name, (size_t)(strrchr(src->name, '/') - src->name));
            char *real = vc_config_resolve_prefix(cfg->conf_dir);
            free(cfg->conf_dir);
            cfg->conf_dir = real;
        }
        r = vc_config_walk(c, cfg, root, "", global_specs, VC_ARRAY_SIZE(global_specs), cfg);
        goto done;
    }
    config_setting_t *site = config_setting_get_member(root, "site");
    if (site == NULL || !config_setting_is_group(site)) {
        r = vc_config_fail(c, 0, "a site file holds one group: site = { hosts = [...]; root = \"...\"; };");
        goto done;
    }
    if (config_setting_length(root) != 1) {
        config_setting_t *other = config_setting_get_elem(root, 0);
        if (other == site)
            other = config_setting_get_elem(root, 1);
        r = vc_config_fail(c, (int)config_setting_source_line(other), "unknown setting \"%s\" outside site",
                           config_setting_name(other));
        goto done;
    }
    cfg->sites = vc_realloc(cfg->sites, (cfg->nsites + 1) * sizeof(vc_site_t));
    vc_site_t *s = &cfg->sites[cfg->nsites++];
    vc_site_defaults(s);
    const char *base = strrchr(src->name, '/');
    base = base ? base + 1 : src->name;
    size_t blen = strlen(base);
    if (blen > 5 && strcmp(base + blen - 5, ".conf") == 0)
        blen -= 5;
    s->name = vc_strndup(base, blen);
    s->source = vc_strdup(src->name);
    s->line = (int)config_setting_source_line(site);
    if (s->name[0] == '@') { /* the suite's own names (VC_CONFIG_RELEASE_SITE) */
        r = vc_config_fail(c, s->line, "site \"%s\": a site's name (its file's) does not start with \"@\"", s->name);
        goto done;
    }
    r = vc_config_walk(c, NULL, root, "", site_specs, VC_ARRAY_SIZE(site_specs), s);
done:
    config_destroy(&lc);
    free(text);
    return r;
}

static void defaults(vc_config_t *cfg, const char *data_dir)
{
    cfg->data_dir = vc_strdup(data_dir);
    cfg->run_dir = vc_asprintf("%s/run", data_dir);
    cfg->state_dir = vc_asprintf("%s/state", data_dir);
    cfg->log_dir = vc_asprintf("%s/log", data_dir);
    cfg->listen = vc_malloc(sizeof(char *));
    cfg->listen[0] = vc_strdup(":8080");
    cfg->nlisten = 1;
    cfg->tls_listen = vc_malloc(sizeof(char *));
    cfg->tls_listen[0] = vc_strdup(":8443");
    cfg->ntls_listen = 1;
    cfg->admin_listen = vc_strdup("127.0.0.1:8081");
    cfg->log_level = VC_LOG_INFO;
    cfg->user = vc_strdup("vc");
    vc_pool_defaults(&cfg->php, "default");
    cfg->store.map_size = 256LL * 1024 * 1024;
    const char *bases[] = {"/srv", "/var/www", "/home"};
    cfg->deploy_bases = vc_malloc((VC_ARRAY_SIZE(bases) + 1) * sizeof(char *));
    for (size_t i = 0; i < VC_ARRAY_SIZE(bases); i++)
        cfg->deploy_bases[cfg->ndeploy_bases++] = vc_strdup(bases[i]);
    cfg->deploy_bases[cfg->ndeploy_bases++] = vc_asprintf("%s/sites", data_dir);
    vc_config_sections_init(cfg, data_dir);
}

/* VC_ENDPOINTS="php=tcp://10.0.0.2:7001,bus-in=tcp://bus:7100": a
 * container is told where the others are. Each replaces the file's. */
static int set_endpoints(struct ctx *c, vc_config_t *cfg, const char *text)
{
    char *list = vc_strdup(text), *save = NULL;
    int rc = 0;
    for (char *item = strtok_r(list, ",", &save); item && rc == 0; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ')
            item++;
        char *eq = strchr(item, '=');
        if (eq == NULL) {
            rc = vc_config_fail(c, 0, "\"%s\": expected NAME=URI, like php=tcp://10.0.0.2:7001", item);
            break;
        }
        *eq = '\0';
        const char *uri = eq + 1;
        if (!known_endpoint(item))
            rc = vc_config_fail(c, 0, "\"%s\": not an endpoint of the suite (php, bus-in, bus-out, ctl-vc, ...)", item);
        else if (strncmp(uri, "ipc://", 6) && strncmp(uri, "tcp://", 6))
            rc = vc_config_fail(c, 0, "%s: expected \"ipc://PATH\" or \"tcp://HOST:PORT\"", item);
        if (rc < 0)
            break;
        size_t i = 0;
        while (i < cfg->nendpoints && strcmp(cfg->endpoints[i].name, item) != 0)
            i++;
        if (i == cfg->nendpoints) {
            cfg->endpoints = vc_realloc(cfg->endpoints, (cfg->nendpoints + 1) * sizeof(*cfg->endpoints));
            cfg->endpoints[cfg->nendpoints++].name = vc_strdup(item);
        } else {
            free(cfg->endpoints[i].uri);
            free(cfg->endpoints[i].origin);
        }
        cfg->endpoints[i].uri = vc_strdup(uri);
        cfg->endpoints[i].origin = vc_strdup(c->file);
    }
    free(list);
    return rc;
}

/* Applies one "path = text" from the environment or the command line. The
 * pseudo setting "root" sets the document root of the default site;
 * "fallback_root" that of the built-in site only, when no site is
 * enabled (`vc up` without --root: ./public or the example app must not
 * replace a configured site's root). */
static int apply_override(struct ctx *c, vc_config_t *cfg, const char *path, const char *text, char **root,
                          char **fallback)
{
    if (strcmp(path, "endpoints") == 0)
        return set_endpoints(c, cfg, text);
    if (strcmp(path, "root") == 0 || strcmp(path, "fallback_root") == 0) {
        char **into = path[0] == 'r' ? root : fallback;
        free(*into);
        *into = vc_strdup(text);
        return 0;
    }
    const struct spec *sp = vc_config_find_spec(global_specs, VC_ARRAY_SIZE(global_specs), path);
    if (sp != NULL)
        return vc_config_set_text(c, 0, sp, cfg, text);
    if ((sp = vc_config_find_spec(vc_pool_specs, vc_pool_nspecs, path)) != NULL)
        return vc_config_set_text(c, 0, sp, &cfg->php, text);
    void *into;
    if ((sp = vc_config_section_spec(cfg, path, &into)) != NULL)
        return vc_config_set_text(c, 0, sp, into, text);
    return vc_config_fail(c, 0, "unknown setting \"%s\"", path);
}

/* The port of "host:port" (-1 if none), the length of its host, and
 * whether that host is every address ("", "*", 0.0.0.0, [::]). */
static long port_of(const char *spec, size_t *hlen, int *any)
{
    const char *colon = strrchr(spec, ':');
    if (colon == NULL)
        return -1;
    *hlen = (size_t)(colon - spec);
    *any = *hlen == 0 || (*hlen == 1 && spec[0] == '*') || (*hlen == 7 && !strncmp(spec, "0.0.0.0", 7)) ||
           (*hlen == 4 && !strncmp(spec, "[::]", 4));
    return atol(colon + 1);
}

/* Two of listen, tls_listen and admin_listen on one address: the plain
 * port would answer TLS clients, or the metrics be served to the world. */
static int overlapping_addresses(struct ctx *c, const vc_config_t *cfg)
{
    const char *all[64], *from[64];
    size_t n = 0;
    for (size_t i = 0; i < cfg->nlisten && n < 64; i++, n++)
        all[n] = cfg->listen[i], from[n] = "listen";
    for (size_t i = 0; i < cfg->ntls_listen && n < 64; i++, n++)
        all[n] = cfg->tls_listen[i], from[n] = "tls_listen";
    if (cfg->admin_listen && *cfg->admin_listen && n < 64)
        all[n] = cfg->admin_listen, from[n++] = "admin_listen";
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            size_t hi = 0, hj = 0;
            int any_i = 0, any_j = 0;
            long pi = port_of(all[i], &hi, &any_i), pj = port_of(all[j], &hj, &any_j);
            int same_host = hi == hj && strncmp(all[i], all[j], hi) == 0;
            if (pi > 0 && pi == pj && (any_i || any_j || same_host))
                return vc_config_fail(c, 0, "%s \"%s\" and %s \"%s\" are the same address: give each its own port",
                                      from[i], all[i], from[j], all[j]);
        }
    return 0;
}

static int validate(struct ctx *c, vc_config_t *cfg)
{
    c->file = "configuration";
    if (cfg->nlisten + cfg->ntls_listen == 0)
        return vc_config_fail(c, 0, "listen and tls_listen are both empty: nothing to serve");
    if (overlapping_addresses(c, cfg) < 0)
        return -VC_ERR_CONFIG;
    /* Each daemon opens it from its own working directory. */
    char *default_log = vc_asprintf("%s/log", cfg->data_dir);
    int relative = cfg->log_dir[0] != '/' && strcmp(cfg->log_dir, default_log) != 0;
    free(default_log);
    if (relative)
        return vc_config_fail(c, 0, "log_dir \"%s\" is not an absolute path", cfg->log_dir);
    if (cfg->config_releases && (cfg->config_releases[0] != '/' || strcmp(cfg->config_releases, "/") == 0))
        return vc_config_fail(c, 0, "config_releases \"%s\" is not an absolute path below /", cfg->config_releases);
    /* Guessable keys would make the link's authentication a formality. */
    if (cfg->link_key && *cfg->link_key && strlen(cfg->link_key) < 32)
        return vc_config_fail(c, 0, "link_key is %zu characters: give at least 32 (openssl rand -hex 32)",
                              strlen(cfg->link_key));
    if (cfg->curve_secret_key && *cfg->curve_secret_key && !vc_curve_valid(cfg->curve_secret_key))
        return vc_config_fail(c, 0, "curve_secret_key is not a CurveZMQ secret key (40 characters of Z85: vc keygen)");
    /* Control and events over a network: commands to any daemon, and the
     * events, to anyone who reaches the port, unless CURVE guards them. */
    for (size_t i = 0; i < cfg->nendpoints; i++)
        if (strncmp(cfg->endpoints[i].name, "php", 3) != 0 && strncmp(cfg->endpoints[i].uri, "tcp://", 6) == 0 &&
            !(cfg->curve_secret_key && *cfg->curve_secret_key))
            return vc_config_fail(c, 0,
                                  "endpoints.%s is TCP: set curve_secret_key (CurveZMQ; `vc keygen` makes one) so "
                                  "that only the suite's daemons can use it",
                                  cfg->endpoints[i].name);
    if (vc_config_check_link_keys(c, cfg) < 0)
        return -VC_ERR_CONFIG;
    if (vc_sites_validate(c, cfg) < 0 || vc_config_check_paths(c, cfg) < 0 || vc_config_check_realtime(c, cfg) < 0 ||
        vc_config_check_cache(c, cfg) < 0)
        return -VC_ERR_CONFIG;
    if (vc_config_sections_validate(c, cfg) < 0)
        return -VC_ERR_CONFIG;
    return vc_pools_validate(c, cfg);
}

vc_config_t *vc_config_parse(const Vc__ConfigVersion *v, const char *data_dir, char *err, size_t errlen)
{
    struct ctx c = {err, errlen, "configuration"};
    vc_config_t *cfg = vc_calloc(1, sizeof(*cfg));
    defaults(cfg, data_dir);
    cfg->version = v->version;
    char *root = NULL, *fallback = NULL;
    for (size_t i = 0; i < v->n_files; i++)
        if (read_source(&c, v->files[i], cfg) < 0)
            goto fail;
    for (size_t i = 0; i < v->n_env; i++) {
        char origin[96];
        snprintf(origin, sizeof(origin), "environment %s", v->env[i]->key);
        c.file = origin;
        const char *path = NULL;
        for (size_t j = 0; j < VC_ARRAY_SIZE(env_map); j++)
            if (strcmp(env_map[j].env, v->env[i]->key) == 0)
                path = env_map[j].path;
        if (path == NULL)
            path = vc_config_section_env(v->env[i]->key);
        if (path == NULL || apply_override(&c, cfg, path, v->env[i]->value, &root, &fallback) < 0) {
            if (path == NULL)
                vc_config_fail(&c, 0, "not a known variable");
            goto fail;
        }
    }
    for (size_t i = 0; i < v->n_overrides; i++) {
        char origin[96];
        snprintf(origin, sizeof(origin), "option --%s", v->overrides[i]->key);
        c.file = origin;
        if (apply_override(&c, cfg, v->overrides[i]->key, v->overrides[i]->value, &root, &fallback) < 0)
            goto fail;
    }
    /* No site enabled: the embedded default serves `root` for every host. */
    if (cfg->nsites == 0) {
        cfg->sites = vc_malloc(sizeof(vc_site_t));
        vc_site_t *s = &cfg->sites[cfg->nsites++];
        vc_site_defaults(s);
        s->name = vc_strdup("default");
        s->is_default = 1;
        s->source = vc_strdup("built-in default site");
        s->root = root ? root : fallback ? fallback : vc_strdup("/var/www/html");
        if (root)
            free(fallback);
        root = fallback = NULL;
    } else if (root != NULL) {
        for (size_t i = 0; i < cfg->nsites; i++)
            if (cfg->sites[i].is_default || cfg->nsites == 1) {
                free(cfg->sites[i].root);
                cfg->sites[i].root = root;
                root = NULL;
                break;
            }
    }
    free(root);
    free(fallback);
    root = fallback = NULL;
    /* Resolve roots once, so the front compares real paths. A deployed
     * site's root stays in DEPLOY_TO/current, whose link moves (only the
     * directory above is resolved): the front follows it. */
    for (size_t i = 0; i < cfg->nsites; i++) {
        if (cfg->sites[i].deploy_to) {
            vc_config_resolve_deploy_to(&cfg->sites[i]);
            continue;
        }
        char *real = cfg->sites[i].root ? realpath(cfg->sites[i].root, NULL) : NULL;
        if (real) {
            free(cfg->sites[i].root);
            cfg->sites[i].root = real;
        }
    }
    if (validate(&c, cfg) < 0)
        goto fail;
    return cfg;
fail:
    free(root);
    free(fallback);
    vc_config_destroy(&cfg);
    return NULL;
}

void vc_config_destroy(vc_config_t **pcfg)
{
    vc_config_t *cfg = *pcfg;
    if (cfg == NULL)
        return;
    free(cfg->data_dir);
    free(cfg->run_dir);
    free(cfg->state_dir);
    free(cfg->log_dir);
    free(cfg->config_releases);
    free(cfg->conf_dir);
    vc_config_free_list(&cfg->deploy_bases, &cfg->ndeploy_bases);
    vc_config_free_list(&cfg->listen, &cfg->nlisten);
    vc_config_free_list(&cfg->tls_listen, &cfg->ntls_listen);
    free(cfg->admin_listen);
    if (cfg->link_key)
        sodium_memzero(cfg->link_key, strlen(cfg->link_key));
    free(cfg->link_key);
    if (cfg->curve_secret_key)
        sodium_memzero(cfg->curve_secret_key, strlen(cfg->curve_secret_key));
    free(cfg->curve_secret_key);
    free(cfg->user);
    vc_config_sections_fini(cfg);
    vc_pool_fini(&cfg->php);
    for (size_t i = 0; i < cfg->npools; i++)
        vc_pool_fini(&cfg->pools[i]);
    free(cfg->pools);
    for (size_t i = 0; i < cfg->nendpoints; i++) {
        free(cfg->endpoints[i].name);
        free(cfg->endpoints[i].uri);
        free(cfg->endpoints[i].origin);
    }
    free(cfg->endpoints);
    vc_config_free_list(&cfg->warnings, &cfg->nwarnings);
    vc_config_free_list(&cfg->origins, &cfg->norigins);
    for (size_t i = 0; i < cfg->nsites; i++)
        site_fini(&cfg->sites[i]);
    free(cfg->sites);
    free(cfg);
    *pcfg = NULL;
}

/* ---- lookups ---------------------------------------------------------- */

char *vc_config_endpoint(const vc_config_t *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->nendpoints; i++)
        if (strcmp(cfg->endpoints[i].name, name) == 0)
            return vc_strdup(cfg->endpoints[i].uri);
    /* A pool binds its own, in its own directory: "php" (the default
     * pool's link), "php.NAME" (a named pool's), "ctl-vc-php[.NAME]". */
    if (strcmp(name, "php") == 0 || strncmp(name, "php.", 4) == 0) {
        char *daemon = vc_asprintf("vc-%s", name);
        char *dir = vc_config_run_dir_of(cfg, daemon);
        char *ep = vc_asprintf("ipc://%s/php.sock", dir);
        free(daemon);
        free(dir);
        return ep;
    }
    if (strncmp(name, "ctl-vc-php", 10) == 0 && (name[10] == '\0' || name[10] == '.')) {
        char *dir = vc_config_run_dir_of(cfg, name + 4);
        char *ep = vc_asprintf("ipc://%s/%s.sock", dir, name);
        free(dir);
        return ep;
    }
    return vc_asprintf("ipc://%s/%s.sock", cfg->run_dir, name);
}

char *vc_config_run_dir_of(const vc_config_t *cfg, const char *daemon)
{
    /* "vc-php" -> RUN/php, "vc-php.shop" -> RUN/php.shop */
    if (strcmp(daemon, "vc-php") == 0 || strncmp(daemon, "vc-php.", 7) == 0)
        return vc_asprintf("%s/%s", cfg->run_dir, daemon + 3);
    return vc_strdup(cfg->run_dir);
}

char *vc_config_pool_file(const char *data_dir, const char *pool)
{
    return vc_asprintf("%s/run/pools/%s.conf", data_dir, pool ? pool : "default");
}

char *vc_config_pool_home(const char *data_dir, const char *pool)
{
    return vc_asprintf("%s/pools/%s", data_dir, pool ? pool : "default");
}
