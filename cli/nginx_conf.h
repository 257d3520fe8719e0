/*
 * An nginx configuration tree read as nginx reads it: directives and
 * blocks, quoted strings, comments, `include` followed (globs, relative to
 * the configuration's directory), each directive with its file and line
 * for `vc import nginx`'s report (cli/import_nginx.c). Nothing is
 * interpreted here. The files are outside input: fuzz/fuzz_import.c.
 */
#ifndef VC_NGINX_CONF_H
#define VC_NGINX_CONF_H

#include "conf_tree.h"

#include <stddef.h>

/* Reads path (a file, or a directory holding nginx.conf) and what it
 * includes. NULL with "file:line: reason" in err on a syntax error, an
 * unreadable file or includes nested past 16. */
conf_tree_t *nginx_conf_load(const char *path, char *err, size_t errlen);

/* Reads text (len bytes) as the file `file`; includes are followed only
 * if prefix is set. 0, or -1 with err set. For the fuzz target. */
int nginx_conf_parse(conf_tree_t *c, const char *file, const char *text, size_t len, char *err, size_t errlen);

#endif
