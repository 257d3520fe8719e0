/*
 * A site as an importer (vc import nginx, cli/import_nginx.c) makes it
 * from another server's configuration, and the report of what it
 * converted and what it could not, line by line. cli/import.c checks the
 * sites with configtest beside the live configuration and only then
 * writes them (import_site.c writes one as a site file).
 */
#ifndef VC_IMPORT_SITE_H
#define VC_IMPORT_SITE_H

#include "conf_tree.h"

#include <stddef.h>
#include <stdio.h>

typedef struct import_list {
    char **v;
    size_t n;
} import_list_t;

typedef struct import_site {
    char *name; /* the site file's name */
    import_list_t hosts;
    char *root;
    int front_controller; /* 1, 0, or -1: not said (the suite's default) */
    int php;              /* a location passes scripts to PHP */
    int is_default;
    int tls;   /* listens with TLS */
    int plain; /* listens without */
    char *tls_cert, *tls_key;
    int https_redirect;
    char *canonical_host;
    int gzip; /* 1, 0, or -1: not said */
    char *static_max_age;
    import_list_t entry_scripts, redirects, error_pages, deny, internal;
    const char *file; /* where its block began */
    int line;
} import_site_t;

typedef struct import {
    import_site_t *sites;
    size_t nsites;
    import_list_t listen, tls_listen; /* the ports the servers listened on */
    long long max_body;               /* the largest client_max_body_size, or -1 */
    size_t counts[3];                 /* directives of each import_kind_t, for the summary */
    FILE *report;
    int verbose; /* report the directives not needed too */
} import_t;

typedef enum import_kind {
    IMPORT_CONVERTED,
    IMPORT_NOT_NEEDED, /* what the suite does its own way (workers, logs, TLS protocols) */
    IMPORT_NOT_CONVERTED,
} import_kind_t;

/* One line of the report, "file:line: converted: ...", counted. */
void import_note(import_t *im, const char *file, int line, import_kind_t kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* cli/import_nginx.c: the servers of the nginx configuration at path (a
 * directory holding nginx.conf, or the file) into im. 0, or -1 with err. */
int import_nginx(import_t *im, const char *path, char *err, size_t errlen);
/* cli/import_apache.c: the virtual hosts of the Apache configuration at
 * path (the server root holding apache2.conf or httpd.conf, or the file). */
int import_apache(import_t *im, const char *path, char *err, size_t errlen);
/* The same, of a tree already read (fuzz/fuzz_import.c). */
void import_apache_tree(import_t *im, const conf_tree_t *conf);

void import_list_add(import_list_t *l, const char *s);
int import_list_has(const import_list_t *l, const char *s);

import_site_t *import_site_new(import_t *im, const char *file, int line);
/* The site serving host, or NULL. */
import_site_t *import_site_for(import_t *im, const char *host);
/* Names each site after its first host (or "default"), unique; with no
 * site marked default, the first is (nginx and Apache answer names no
 * server claims with the first one listed). */
void import_name_sites(import_t *im);
/* The site file's text (to free). */
char *import_site_text(const import_site_t *s, const char *from);
void import_site_free(import_site_t *s);
void import_free(import_t *im);

#endif
