/*
 * The tree the importers' readers make (conf_tree.h).
 */
#include "conf_tree.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

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

conf_tree_t *conf_tree_load(const char *path, const char *const *names, conf_tree_parse_fn parse, char *err,
                            size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *file = NULL, *dir = vc_strdup(path);
    if (S_ISDIR(st.st_mode)) {
        for (size_t i = 0; names[i] && file == NULL; i++) {
            char *f = vc_asprintf("%s/%s", path, names[i]);
            if (stat(f, &st) == 0)
                file = f;
            else
                free(f);
        }
        if (file == NULL) {
            snprintf(err, errlen, "%s: no %s in it", path, names[0]);
            free(dir);
            return NULL;
        }
    } else {
        file = vc_strdup(path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            strcpy(dir, ".");
    }
    size_t len;
    char *text = vc_read_file(file, &len);
    conf_tree_t *t = NULL;
    if (text == NULL) {
        snprintf(err, errlen, "%s: %s", file, strerror(errno));
    } else {
        t = conf_tree_new(dir);
        if (parse(t, file, text, len, err, errlen) < 0)
            conf_tree_free(&t);
    }
    free(text);
    free(file);
    free(dir);
    return t;
}
