/*
 * vc_config: the configuration of the whole suite.
 *
 * Precedence: built-in defaults < files < environment (VC_*) < options given
 * to `vc up`. Files are libconfig syntax, parsed by libconfig, never by hand:
 *
 *   CONFDIR/vc.conf               global settings
 *   CONFDIR/conf-enabled/NAME.conf more global settings, in name order
 *   CONFDIR/sites-enabled/NAME.conf one site each, named NAME
 *
 * A loaded configuration travels as a ConfigVersion (proto/config.proto):
 * the source texts themselves, so every daemon parses what configtest
 * accepted. Every error names the file, the line and the reason.
 */
#ifndef VC_CONFIG_H
#define VC_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "config.pb-c.h"
#include "vc_settings.h"

/* A PHP pool, as php-fpm's: its own user, processes, limits and PHP
 * settings. The `php` block is the pool named "default"; `pools` names
 * more, and a site chooses one (site.pool). */
typedef struct vc_pool {
    char *name;          /* "default", or its name under pools */
    char *mode;          /* "classic", "worker", "fork" */
    char *user, *group;  /* its Unix user and group (started as root) */
    int64_t workers;     /* 0: "auto", sized from memory */
    int64_t min_workers; /* with max_workers: grow and shrink between */
    int64_t max_workers;
    int64_t max_memory; /* recycle a worker above this RSS (0: never) */
    int64_t max_requests;
    char *ini_file;
    char **ini; /* "name=value" directives a script may change (php.ini's) */
    size_t nini;
    char **admin_ini; /* "name=value" fixed for scripts (php_admin_value) */
    size_t nadmin_ini;
    int open_basedir;         /* limit scripts to the pool's sites and dirs; VC_AUTO: where nothing else walls it */
    int private_mounts;       /* its own mount namespace: / read-only, the suite's state and other pools hidden;
                                 VC_AUTO: where the machine allows one */
    int syscall_filter;       /* seccomp: system calls PHP never needs fail with EPERM; VC_AUTO: where it costs
                                 no_new_privs nothing (root, or inside the pool's user namespace) */
    char **open_basedir_dirs; /* more directories scripts may open */
    size_t nopen_basedir_dirs;
    char **writable_dirs; /* more directories its namespace keeps writable (an app's cache) */
    size_t nwritable_dirs;
    char *worker_script;
    int worker_restore; /* worker mode: globals and statics back to the boot's after each request */
    int64_t queue_limit;
    int64_t queue_timeout_ms;
    int64_t pipeline_below_ms; /* a lent worker holds a request behind a job usually shorter (0: never) */
    int64_t lend_connections;  /* a lent worker may serve this many plaintext HTTP/1.1 connections itself (0: never) */
    int64_t kill_grace_ms;
    char *source; /* where it was declared, for errors */
    int line;
} vc_pool_t;

/* A site's background process (site.background, docs/background.md):
 * a command kept running as supervisor's [program:NAME] keeps it. */
typedef struct vc_background {
    char *name;
    char *command;          /* its words: vc_words.h */
    int64_t processes;      /* copies of it */
    int64_t start_ms;       /* up this long counts as started (startsecs) */
    int64_t start_retries;  /* failed starts in a row before it is left failed (startretries) */
    char *stop_signal;      /* "TERM", "INT", "QUIT", "HUP", "USR1" or "USR2" (stopsignal) */
    int64_t stop_wait_ms;   /* then SIGKILL (stopwaitsecs) */
    int64_t max_memory;     /* restarted above this RSS, in bytes (0: never) */
    int64_t max_runtime_ms; /* restarted after running this long (0: never) */
    int line;
} vc_background_t;

typedef struct vc_site {
    char *name;   /* file name without .conf, or "default" */
    char *pool;   /* the pool serving its PHP: "default" unless named */
    char **hosts; /* host names and aliases, lowercase */
    size_t nhosts;
    char *root; /* document root, absolute */
    int is_default;
    char *tls_cert, *tls_key; /* PEM paths; NULL: the generated certificate */
    char *tls;                /* "acme": vc-acme gets and renews its certificate; NULL: tls_cert or generated */
    char *acme_challenge;     /* "http-01" (NULL: the same), "tls-alpn-01" or "dns-01" */
    char *acme_directory;     /* the CA for this site's certificate; NULL: acme.directory */
    int acme_on_demand;       /* the default site: a certificate for any host a handshake names, if
                               * acme.on_demand_ask says yes (vc_acme.h) */
    int front_controller;     /* try_files $uri $uri/ /index.php */
    char **entry_scripts;     /* the .php files that may run: fnmatch() patterns from the root; none: any */
    size_t nentry_scripts;
    int https_redirect;     /* answer plain HTTP with 301 to https */
    int64_t hsts_max_age;   /* seconds; 0: no Strict-Transport-Security */
    int64_t static_max_age; /* seconds for Cache-Control; -1: none */
    int gzip;               /* compress text responses */
    int cache;              /* answers may be cached (cache.*), if they say so */
    char **cache_rules;     /* "PREFIX off|ttl=D|max_ttl=D|grace=D ..." (vc_cache.h) */
    size_t ncache_rules;
    char **realtime_apps; /* "ID KEY SECRET" (vc_realtime.h) */
    size_t nrealtime_apps;
    char **realtime_origins; /* Origins whose pages may connect ("https://a.example"); none: any */
    size_t nrealtime_origins;
    char **realtime_webhooks; /* "URL [EVENT,...]": the apps' webhooks (vc_realtime.h) */
    size_t nrealtime_webhooks;
    char *mercure_publisher_key;  /* HS256 key of publishers' JWTs; default: the first app's secret */
    char *mercure_subscriber_key; /* and of subscribers' (private updates) */
    /* Socket.IO (docs/socketio.md): its path, NULL: off; the namespaces a
     * client may join (none: "/"); the ping each interval, the pong's wait,
     * the largest message; the handler's URL path (NULL: none). */
    char *socketio_path;
    char *socketio_handler;
    char **socketio_namespaces;
    size_t nsocketio_namespaces;
    int64_t socketio_ping_interval_ms, socketio_ping_timeout_ms, socketio_max_payload;
    int64_t socketio_recovery_ms; /* connection state recovery's window; 0: off */
    char *canonical_host;         /* other hosts of the site redirect here (www/bare) */
    char **redirects;             /* "FROM TO [CODE]": exact path redirects */
    size_t nredirects;
    char **error_pages; /* "CODE PATH": pages for the front's own errors */
    size_t nerror_pages;
    int htaccess; /* the access (403) and rewrite rules of the tree's .htaccess files apply */
    char **deny;  /* path prefixes answered 403 (nginx's `location ^~ /PREFIX/ { deny all; }`) */
    size_t ndeny;
    char **internal_locations; /* "PREFIX DIR": X-Accel-Redirect's targets, 404 to clients (nginx's internal) */
    size_t ninternal_locations;
    char **sendfile_paths; /* directories X-Sendfile may name (mod_xsendfile's XSendFilePath); none: off */
    size_t nsendfile_paths;
    char *deploy_to; /* `vc deploy`'s directory: releases/, current, shared/ (vc_fed.h); NULL: none */
    char **shared;   /* paths in every release that link to DEPLOY_TO/shared/PATH ("storage") */
    size_t nshared;
    char **deploy_exclude; /* patterns `vc deploy` leaves out of a release, with its --exclude ones */
    size_t ndeploy_exclude;
    /* T_INT settings are stored as int64_t (vc_config_values.c). */
    int64_t keep_releases;       /* releases kept on disk, the current one included */
    int64_t deploy_quorum;       /* nodes (this one counted) that must stage a release before it switches
                                  * in a cluster, the unreachable rest catching up; 0: every node */
    char *health_check;          /* a path that must answer 200 after a switch, or it is rolled back; NULL: none */
    vc_background_t *background; /* its background processes (site.background) */
    size_t nbackground;
    char **schedule; /* "MIN HOUR DAY MONTH WEEKDAY COMMAND" (vc_cron.h) */
    size_t nschedule;
    int *schedule_lines;         /* each entry's line in the site's file */
    int64_t schedule_timeout_ms; /* a scheduled run is stopped past this (0: never) */
    char *timezone;              /* its schedule's time zone; NULL: the machine's */
    /* Release hooks (docs/deploys.md): commands run for each deploy. */
    char **hooks_build; /* by `vc deploy`, in a copy of the tree, before it is signed */
    size_t nhooks_build;
    char **hooks_before_switch; /* in the pool, in the new release, on the node asked, before any switch */
    size_t nhooks_before_switch;
    char **hooks_after_switch; /* in the pool, in the new release, on every node, after its switch */
    size_t nhooks_after_switch;
    char *source; /* the file it came from */
    int line;
} vc_site_t;

typedef struct vc_endpoint_override {
    char *name, *uri;
    char *origin; /* "FILE:LINE", or the variable that set it, for errors */
} vc_endpoint_override_t;

typedef struct vc_config {
    uint64_t version;
    char *data_dir;  /* absolute; everything below is derived from it */
    char *run_dir;   /* DATA/run: sockets, pid files */
    char *state_dir; /* DATA/state: LMDB */
    char *log_dir;   /* log_dir: DATA/log unless set (a package: /var/log/vc) */
    /* config_releases: the directory of the configuration releases this
     * node follows (`vc deploy @config`, docs/deploys.md); the site files
     * of the current one are read after the node's own. NULL: none. */
    char *config_releases;
    /* The directory of the main configuration file; NULL: none was read. */
    char *conf_dir;
    /* deploy.allowed_bases: the directories a site's deploy_to may be
     * below (vc_config_paths.c); the main file's alone. */
    char **deploy_bases;
    size_t ndeploy_bases;

    char **listen; /* "host:port" or ":port" */
    size_t nlisten;
    char **tls_listen;
    size_t ntls_listen;
    char *admin_listen;
    /* The shared key of the PHP link over TCP (vc_link_auth.h); NULL or
     * "": no authentication. */
    char *link_key;
    char *curve_secret_key; /* CurveZMQ for tcp:// ZeroMQ endpoints (vc_curve.h) */

    /* Started as root: the daemons run as `user`, each pool's PHP as its
     * php.user (docs/SECURITY.md). allow_root keeps everything as root,
     * as php-fpm's --allow-to-run-as-root does. */
    char *user;
    int allow_root;

    int log_level;
    int log_json;

    vc_pool_t php;    /* the default pool */
    vc_pool_t *pools; /* the others */
    size_t npools;

    struct {
        int64_t map_size;
    } store;

    /* Each daemon's own settings (vc_settings.h), in vc_sections' order:
     * read with vc_config_section. */
    void **sections;

    vc_endpoint_override_t *endpoints;
    size_t nendpoints;

    vc_site_t *sites;
    size_t nsites;

    /* What validation let pass but a user should hear about ("FILE:LINE:
     * message"): `vc configtest` prints them, `vc up` logs them. */
    char **warnings;
    size_t nwarnings;

    /* Where each daemon's own setting was set: "path FILE:LINE" (so that
     * a section's validate, which sees values only, can be pointed at the
     * line that is wrong). */
    char **origins;
    size_t norigins;
} vc_config_t;

/* Gathers the files of confdir (which may be NULL or missing: then only the
 * built-in defaults apply) and the VC_* environment into a new
 * ConfigVersion. Caller owns the result (vc_config_version_free). On a file
 * that cannot be read, returns NULL and writes "file: reason" into err. */
Vc__ConfigVersion *vc_config_gather(const char *confdir, char *err, size_t errlen);
/* Adds a `vc up` option ("php.workers", "4") to a gathered version. */
void vc_config_version_override(Vc__ConfigVersion *v, const char *key, const char *value);
void vc_config_version_free(Vc__ConfigVersion **v);

/* The setting a VC_* variable sets ("link_key" for VC_LINK_KEY), or NULL. */
const char *vc_config_env_path(const char *env);

/* The configuration a PHP pool may read (it runs as the pool's user, and
 * so do its scripts): v's sources with every secret taken out (the
 * settings in vc_config_withhold.c's table), except link_key and
 * curve_secret_key where the pool's own links need them (cfg says which).
 * A new version the caller frees, or NULL with err set if a source no
 * longer parses. */
Vc__ConfigVersion *vc_config_for_pool(const Vc__ConfigVersion *v, const vc_config_t *cfg, const char *pool, char *err,
                                      size_t errlen);

/* Whether a setting ("cache.purge_token") holds a secret no pool may
 * read (vc_config_withhold.c's table). */
int vc_config_is_secret(const char *path);

/* Parses and validates a version. data_dir is absolute. On success returns a
 * new config the caller owns (vc_config_destroy). On failure returns NULL
 * and writes "file:line: reason" into err. */
/* The path as it resolves now: its longest existing part through realpath,
 * the rest as written. Owned by the caller. */
char *vc_config_resolve_prefix(const char *path);
/* The one of deploy.allowed_bases that deploy_to is below, both as they
 * resolve now (the base's resolved path, owned by the caller), or NULL. */
char *vc_config_deploy_base(const vc_config_t *cfg, const char *deploy_to);

vc_config_t *vc_config_parse(const Vc__ConfigVersion *v, const char *data_dir, char *err, size_t errlen);
void vc_config_destroy(vc_config_t **cfg);

/* What the supervisor and configtest read: confdir gathered, the `vc up`
 * options (key, value pairs) over it, parsed and its files checked; then,
 * when config_releases is set and has a current release, that release's
 * sites-enabled/ added and the whole parsed again. The configuration, and
 * the version in *out if out is not NULL (freed by the caller); or NULL
 * with "file:line: reason" in err. */
vc_config_t *vc_config_load(const char *confdir, const char *data_dir, char *const *overrides, size_t noverrides,
                            Vc__ConfigVersion **out, char *err, size_t errlen);
/* The name a configuration release is deployed as, kept from sites. */
#define VC_CONFIG_RELEASE_SITE "@config"

/* The files the pools' PHP will open (php.ini_file, worker_script) can be
 * read: for the supervisor and configtest, which run as root or as the
 * suite's one user. Returns 0, or -1 with "file:line: reason" in err. */
int vc_config_check_files(const vc_config_t *cfg, char *err, size_t errlen);
/* For this process, a site's root need not exist: a daemon run alone that
 * serves no file (vc-bus, vc-cache, vc-acme in their containers) does not
 * see the application's directory. */
void vc_config_roots_elsewhere(void);

/* The pool of that name ("default": cfg->php), or NULL. Borrowed. */
const vc_pool_t *vc_config_pool(const vc_config_t *cfg, const char *name);

/* Makes the named pool the one in cfg->php (vc-php runs one pool: its
 * code reads cfg->php). Returns 0, or -1 if there is no such pool. */
int vc_config_select_pool(vc_config_t *cfg, const char *name);

/* The endpoint of a named socket: ZeroMQ's for control and events
 * ("bus-in", "ctl-vc-php"...), a request link's for "php" and "php.NAME":
 * ipc:// under the run directory of the daemon that binds it, unless
 * `endpoints` overrides it. Caller frees. */
char *vc_config_endpoint(const vc_config_t *cfg, const char *name);

/* Where a daemon keeps its sockets and pid file: run_dir, or for a PHP
 * pool (which runs as the pool's user) a directory of its own below it:
 * DATA/run/php for "vc-php", DATA/run/php.NAME for "vc-php.NAME".
 * Caller frees. */
char *vc_config_run_dir_of(const vc_config_t *cfg, const char *daemon);

/* The file a pool reads its configuration from (its user may not open
 * LMDB): DATA/run/pools/NAME.conf, written by the supervisor. pool NULL
 * is "default". Caller frees. */
char *vc_config_pool_file(const char *data_dir, const char *pool);

/* A pool's own directory, DATA/pools/NAME: its sessions/ and tmp/.
 * Caller frees. */
char *vc_config_pool_home(const char *data_dir, const char *pool);
/* The directory a site's background processes and schedule run in (its
 * application, docs/background.md): DEPLOY_TO/current with deploy_to,
 * else the root's parent where the root is its public/ or web/, else the
 * root; resolved now, so a `current` link is followed as it stands. A new
 * string, or NULL if it is not there. */
char *vc_site_app_dir(const vc_site_t *s);

/* 2 if host (len bytes, no port) is pattern, 1 if pattern is a wildcard
 * ("*.example.com") that host falls under (any name ending in
 * ".example.com", as nginx), else 0. Case-insensitive. */
int vc_host_match(const char *pattern, const char *host, size_t len);
/* The site for a Host value (port stripped, case ignored): a site naming
 * it, else the longest wildcard that covers it, else the default site.
 * Borrowed from cfg. */
const vc_site_t *vc_config_site_for_host(const vc_config_t *cfg, const char *host, size_t len);

/* The names of VC_* variables that the configuration reads. */
/* The i-th VC_* variable the configuration reads (the suite's and every
 * section's), or NULL past the last. */
const char *vc_config_env_name(size_t i);

#endif
