/*
 * What the two halves of vc import nginx share: import_nginx.c (the
 * http block, servers and their own directives) and import_nginx_locations.c
 * (locations, error pages, servers that only redirect).
 */
#ifndef VC_IMPORT_NGINX_INTERNAL_H
#define VC_IMPORT_NGINX_INTERNAL_H

#include "import_site.h"
#include "nginx_conf.h"

/* A server that only redirects (`return 301 https://$host$request_uri`),
 * applied to the site it names once every site is known. */
typedef struct pending {
    const conf_node_t *srv, *ret;
    int plain, tls;
} pending_t;

typedef struct walk {
    import_t *im;
    int http_gzip;      /* the http block's gzip, or -1 */
    int http_index_php; /* the http block's index names index.php */
    pending_t *redirects;
    size_t nredirects;
} walk_t;

/* The servers of a tree already read (fuzz/fuzz_import.c). */
void import_nginx_tree(import_t *im, const conf_tree_t *conf);

int import_nginx_is(const conf_node_t *d, const char *name);
int import_nginx_any_of(const char *s, const char *const *names);
/* Directives the suite does its own way: processes, logs, buffers, TLS
 * protocols, MIME types, FastCGI's parameters. */
int import_nginx_not_needed(const char *name);
/* "file:line: NOT CONVERTED: NAME ARG...why". */
void import_nginx_not_converted(walk_t *w, const conf_node_t *d, const char *why);
/* nginx's `expires` as a duration the suite reads ("30d"), or NULL. */
char *import_nginx_expires(const char *v);

void import_nginx_location(walk_t *w, import_site_t *s, const conf_node_t *loc);
void import_nginx_error_page(walk_t *w, import_site_t *s, const conf_node_t *d);
/* A server that only redirects, onto the site it names. */
void import_nginx_redirect(walk_t *w, const pending_t *p);

#endif
