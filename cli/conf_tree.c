/*
 * The tree the importers' readers make (conf_tree.h).
 */
#include "conf_tree.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

conf_tree_t *conf_tree_new(const char *prefix)
{
    conf_tree_t *t = vc_calloc(1, sizeof(*t));
    t->prefix = prefix ? vc_strdup(prefix) : NULL;
    return t;
}

const char *conf_tree_file(conf_tree_t *t, const char *name)
{
    t->files = vc_realloc(t->files, (t->nfiles + 1) * sizeof(char *));
    t->files[t->nfiles] = vc_strdup(name);
    return t->files[t->nfiles++];
}

conf_node_t *conf_tree_push(conf_node_t *into, char **words, size_t nwords, const char *file, int line)
{
    into->kids = vc_realloc(into->kids, (into->nkids + 1) * sizeof(*into->kids));
    conf_node_t *d = &into->kids[into->nkids++];
    memset(d, 0, sizeof(*d));
    d->name = words[0];
    d->nargs = nwords - 1;
    d->args = vc_calloc(nwords, sizeof(char *));
    memcpy(d->args, words + 1, (nwords - 1) * sizeof(char *));
    d->file = file;
    d->line = line;
    return d;
}

static void free_node(conf_node_t *d)
{
    free(d->name);
    for (size_t i = 0; i < d->nargs; i++)
        free(d->args[i]);
    free(d->args);
    for (size_t i = 0; i < d->nkids; i++)
        free_node(&d->kids[i]);
    free(d->kids);
}

void conf_tree_free(conf_tree_t **pt)
{
    conf_tree_t *t = *pt;
    if (t == NULL)
        return;
    free_node(&t->top);
    for (size_t i = 0; i < t->nfiles; i++)
        free(t->files[i]);
    free(t->files);
    free(t->prefix);
    free(t);
    *pt = NULL;
}

const conf_node_t *conf_tree_find(const conf_node_t *d, const char *name)
{
    for (size_t i = 0; i < d->nkids; i++)
        if (strcmp(d->kids[i].name, name) == 0)
            return &d->kids[i];
    return NULL;
}

const conf_node_t *conf_tree_find_nocase(const conf_node_t *d, const char *name)
{
    for (size_t i = 0; i < d->nkids; i++)
        if (strcasecmp(d->kids[i].name, name) == 0)
            return &d->kids[i];
    return NULL;
}
