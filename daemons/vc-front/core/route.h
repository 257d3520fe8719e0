/*
 * Route: what a request path is, decided once, in the front only.
 *
 * Given a site's document root (a real path) and the request's decoded,
 * normalised path, it answers one of: a PHP script (with SCRIPT_NAME and
 * PATH_INFO split as nginx's fastcgi_split_path_info "^(.+?\.php)(/.*)$"
 * does), a static file, a directory redirect, or a refusal. Every file it
 * returns exists and lies inside the root after symlinks are resolved.
 */
#ifndef VC_FRONT_ROUTE_H
#define VC_FRONT_ROUTE_H

#include <limits.h>
#include <stddef.h>

typedef enum route_kind {
    ROUTE_PHP,
    ROUTE_STATIC,
    ROUTE_DIR_REDIRECT, /* a directory without its trailing slash: 301 */
    ROUTE_NOT_FOUND,
    ROUTE_FORBIDDEN, /* a directory without an index */
    ROUTE_BAD,       /* a path no client should send: 400 */
} route_kind_t;

typedef struct route {
    route_kind_t kind;
    char file[PATH_MAX];         /* the real path of the script or file */
    char script_name[PATH_MAX];  /* PHP: the URI of the script */
    char path_info[PATH_MAX];    /* PHP: what follows the script, or "" */
    char document_uri[PATH_MAX]; /* PHP: nginx's $document_uri; a static file: its path (an index's, a rewritten one) */
    const char *why;             /* for refusals: a reason for the log */
} route_t;

typedef struct route_site {
    const char *root; /* real path, no trailing slash */
    size_t root_len;
    int front_controller; /* try_files $uri $uri/ /index.php */
    /* The scripts that may run, as fnmatch() patterns of their path from
     * the root without its first '/', where '*' stops at a '/' (as in
     * "index.php", or WordPress's admin scripts as wp-admin, a slash, a
     * star and .php). Any other is as if it were not there: the front
     * controller runs, or 404. None: any script. */
    char *const *entry_scripts;
    size_t nentry_scripts;
    /* Path prefixes no client may have (403), scripts or files. */
    char *const *deny;
    size_t ndeny;
    /* A directory's index files, in order: names in the directory, or
     * paths from the root ("/index.php"); the first that is a file is
     * served. index_set 0: index.php, then index.html. */
    const char *const *index;
    size_t nindex;
    int index_set;
    /* Real paths no answer comes from, whatever the root: the suite's data
     * and configuration directories (a root above them, as `vc up --root .`
     * makes with the default ./var, served the TLS key). */
    const char *const *never;
    size_t nnever;
    /* A deployed site's DEPLOY_TO (real), or NULL: its root, reached
     * through the moving current link, must resolve below it (a release
     * whose public/ led elsewhere served the suite's keys; vc-fed refuses
     * such a release, and this holds whatever is on disk). */
    const char *base;
} route_site_t;

/* path is not NUL-terminated and may contain anything a client sent. */
/* What route_resolve keeps about real paths goes now (a deployed site's
 * current link moved: release_watch.h). */
void route_forget_real_paths(void);
route_kind_t route_resolve(const route_site_t *site, const char *path, size_t len, route_t *out);

#endif
