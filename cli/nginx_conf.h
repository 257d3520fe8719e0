/*
 * An nginx configuration tree read as nginx reads it: directives and
 * blocks, quoted strings, comments, `include` followed (globs, relative to
 * the configuration's directory), each directive with its file and line
 * for `vc import nginx`'s report (cli/import_nginx.c). Nothing is
 * interpreted here. The files are outside input: fuzz/fuzz_nginx_conf.c.
 */
#ifndef VC_NGINX_CONF_H
#define VC_NGINX_CONF_H

#include <stddef.h>

typedef struct nginx_dir {
    char *name;
    char **args;
    size_t nargs;
    const char *file; /* one of the tree's files */
    int line;
    int block; /* it had { ... } */
    struct nginx_dir *kids;
    size_t nkids;
} nginx_dir_t;

typedef struct nginx_conf {
    nginx_dir_t top; /* the main file's directives, as kids */
    char **files;    /* every file read, in order */
    size_t nfiles;
    char *prefix; /* where relative includes are looked for */
} nginx_conf_t;

/* Reads path (a file, or a directory holding nginx.conf) and what it
 * includes. NULL with "file:line: reason" in err on a syntax error, an
 * unreadable file or includes nested past 16. */
nginx_conf_t *nginx_conf_load(const char *path, char *err, size_t errlen);

/* Reads text (len bytes) as the file `file`; includes are followed only
 * if prefix is set. 0, or -1 with err set. For the fuzz target. */
int nginx_conf_parse(nginx_conf_t *c, const char *file, const char *text, size_t len, char *err, size_t errlen);

nginx_conf_t *nginx_conf_new(const char *prefix);
void nginx_conf_free(nginx_conf_t **c);

/* d's first kid named name, or NULL. */
const nginx_dir_t *nginx_conf_find(const nginx_dir_t *d, const char *name);

#endif
