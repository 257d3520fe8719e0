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

typedef struct vc_site {
    char *name;   /* file name without .conf, or "default" */
    char **hosts; /* host names and aliases, lowercase */
    size_t nhosts;
    char *root; /* document root, absolute */
    int is_default;
    char *tls_cert, *tls_key; /* PEM paths; NULL: the generated certificate */
    int front_controller;     /* try_files $uri $uri/ /index.php */
    int https_redirect;       /* answer plain HTTP with 301 to https */
    int64_t hsts_max_age;     /* seconds; 0: no Strict-Transport-Security */
    int64_t static_max_age;   /* seconds for Cache-Control; -1: none */
    int gzip;                 /* compress text responses */
    char *canonical_host;     /* other hosts of the site redirect here (www/bare) */
    char **redirects;         /* "FROM TO [CODE]": exact path redirects */
    size_t nredirects;
    char **error_pages; /* "CODE PATH": pages for the front's own errors */
    size_t nerror_pages;
    char *source; /* the file it came from */
    int line;
} vc_site_t;

typedef struct vc_endpoint_override {
    char *name, *uri;
} vc_endpoint_override_t;

typedef struct vc_config {
    uint64_t version;
    char *data_dir;  /* absolute; everything below is derived from it */
    char *run_dir;   /* DATA/run: sockets, pid files */
    char *state_dir; /* DATA/state: LMDB */
    char *log_dir;   /* DATA/log */

    char **listen; /* "host:port" or ":port" */
    size_t nlisten;
    char **tls_listen;
    size_t ntls_listen;
    char *admin_listen;

    int log_level;
    int log_json;

    struct {
        char *mode;          /* "classic", "worker", "fork" */
        int64_t workers;     /* 0: "auto", sized from memory */
        int64_t min_workers; /* with max_workers: grow and shrink between */
        int64_t max_workers;
        int64_t max_memory; /* recycle a worker above this RSS (0: never) */
        int64_t max_requests;
        char *ini_file;
        char **ini; /* "name=value" directives */
        size_t nini;
        char *worker_script;
        int worker_restore; /* worker mode: globals and statics back to the boot's after each request */
        int64_t queue_limit;
        int64_t queue_timeout_ms;
        int64_t kill_grace_ms;
    } php;

    struct {
        int64_t processes;
        int64_t max_body;
        int64_t max_header_bytes;
        int64_t idle_timeout_ms;
        int64_t max_headers;
        int64_t max_connections;
        int64_t h2_max_streams;
        int64_t php_timeout_ms; /* no answer head from PHP by then: 504 */
        int64_t ban_ms;         /* an address cut for resets twice: refused this long */
        int gzip;
        int access_log_json;
    } front;

    struct {
        int64_t map_size;
    } store;

    struct {
        int64_t journal_max;
    } bus;

    vc_endpoint_override_t *endpoints;
    size_t nendpoints;

    vc_site_t *sites;
    size_t nsites;
} vc_config_t;

/* Gathers the files of confdir (which may be NULL or missing: then only the
 * built-in defaults apply) and the VC_* environment into a new
 * ConfigVersion. Caller owns the result (vc_config_version_free). On a file
 * that cannot be read, returns NULL and writes "file: reason" into err. */
Vc__ConfigVersion *vc_config_gather(const char *confdir, char *err, size_t errlen);
/* Adds a `vc up` option ("php.workers", "4") to a gathered version. */
void vc_config_version_override(Vc__ConfigVersion *v, const char *key, const char *value);
void vc_config_version_free(Vc__ConfigVersion **v);

/* Parses and validates a version. data_dir is absolute. On success returns a
 * new config the caller owns (vc_config_destroy). On failure returns NULL
 * and writes "file:line: reason" into err. */
vc_config_t *vc_config_parse(const Vc__ConfigVersion *v, const char *data_dir, char *err, size_t errlen);
void vc_config_destroy(vc_config_t **cfg);

/* The ZeroMQ endpoint of a named socket ("bus-in", "ctl-vc-php"...):
 * ipc:// under run_dir unless `endpoints` overrides it. Caller frees. */
char *vc_config_endpoint(const vc_config_t *cfg, const char *name);

/* The site for a Host value (port stripped, case ignored); falls back to the
 * default site. Borrowed from cfg. */
const vc_site_t *vc_config_site_for_host(const vc_config_t *cfg, const char *host, size_t len);

/* The names of VC_* variables that the configuration reads. */
extern const char *const vc_config_env_names[];

#endif
