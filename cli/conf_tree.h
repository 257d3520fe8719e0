/*
 * A configuration read into a tree of directives and blocks, each with its
 * file and line, as the importers' readers make it (nginx_conf.c,
 * apache_conf.c) and their converters walk it (import_nginx.c,
 * import_apache.c). Nothing here knows a directive.
 */
#ifndef VC_CONF_TREE_H
#define VC_CONF_TREE_H

#include <stddef.h>

typedef struct conf_node {
    char *name;
    char **args;
    size_t nargs;
    const char *file; /* one of the tree's files */
    int line;
    int block; /* it had a body: nginx's { ... }, Apache's <Name> ... </Name> */
    struct conf_node *kids;
    size_t nkids;
} conf_node_t;

typedef struct conf_tree {
    conf_node_t top; /* the main file's directives, as kids */
    char **files;    /* every file read, in order */
    size_t nfiles;
    char *prefix; /* where relative includes are looked for */
} conf_tree_t;

conf_tree_t *conf_tree_new(const char *prefix);
void conf_tree_free(conf_tree_t **t);
/* Keeps a copy of a file's name for the tree's life: the copy. */
const char *conf_tree_file(conf_tree_t *t, const char *name);
/* A new kid of into named words[0] with the rest as its arguments (the
 * words are the tree's now). Valid until into gets another kid. */
conf_node_t *conf_tree_push(conf_node_t *into, char **words, size_t nwords, const char *file, int line);
/* Reads text (len bytes) as file into t: 0, or -1 with "file:line: why". */
typedef int (*conf_tree_parse_fn)(conf_tree_t *t, const char *file, const char *text, size_t len, char *err,
                                  size_t errlen);
/* Reads path (a file, or a directory holding the first of names that is
 * there: the directory where relative includes are looked for) with
 * parse. NULL with err set. */
conf_tree_t *conf_tree_load(const char *path, const char *const *names, conf_tree_parse_fn parse, char *err,
                            size_t errlen);

/* d's first kid named name (any case if nocase), or NULL. */
const conf_node_t *conf_tree_find(const conf_node_t *d, const char *name);
const conf_node_t *conf_tree_find_nocase(const conf_node_t *d, const char *name);

#endif
