/*
 * An Apache httpd configuration tree read as httpd reads it: directives,
 * <Section> blocks (their names without the brackets), Include and
 * IncludeOptional followed, each directive with its file and line for
 * `vc import apache`'s report (cli/import_apache.c). Nothing is
 * interpreted here. The files are outside input: fuzz/fuzz_import.c.
 */
#ifndef VC_APACHE_CONF_H
#define VC_APACHE_CONF_H

#include "conf_tree.h"

#include <stddef.h>

/* Reads path (a file, or a directory holding apache2.conf or httpd.conf:
 * the server root, where relative includes are looked for) and what it
 * includes. NULL with "file:line: reason" in err on a section not closed,
 * an unreadable file or includes nested past 16. */
conf_tree_t *apache_conf_load(const char *path, char *err, size_t errlen);

/* Reads text (len bytes) as the file `file`; includes are followed only
 * if c has a prefix. 0, or -1 with err set. */
int apache_conf_parse(conf_tree_t *c, const char *file, const char *text, size_t len, char *err, size_t errlen);

#endif
