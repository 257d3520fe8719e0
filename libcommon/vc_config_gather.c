/*
 * vc_config, the gathering half: reads a configuration directory and the
 * VC_* environment into a ConfigVersion (the texts themselves), which
 * vc_config_parse then reads. Nothing here interprets a setting.
 */
#include "vc_config.h"
#include "vc_util.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- gathering files and environment ---------------------------------- */

static void add_source(Vc__ConfigVersion *v, const char *name, char *text, size_t len, int site)
{
    Vc__ConfigSource *s = vc_malloc(sizeof(*s));
    vc__config_source__init(s);
    s->name = vc_strdup(name);
    s->text.data = (uint8_t *)text;
    s->text.len = len;
    s->site = site;
    v->files = vc_realloc(v->files, (v->n_files + 1) * sizeof(*v->files));
    v->files[v->n_files++] = s;
}

static Vc__Field *new_field(const char *key, const char *value)
{
    Vc__Field *f = vc_malloc(sizeof(*f));
    vc__field__init(f);
    f->key = vc_strdup(key);
    f->value = vc_strdup(value);
    return f;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the .conf files of dir in name order; a missing dir is fine. */
static int gather_dir(Vc__ConfigVersion *v, const char *dir, int site, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return errno == ENOENT ? 0 : (snprintf(err, errlen, "%s: %s", dir, strerror(errno)), -1);
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= 5 || strcmp(e->d_name + len - 5, ".conf") != 0)
            continue;
        names = vc_realloc(names, (n + 1) * sizeof(char *));
        names[n++] = vc_asprintf("%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n > 1) /* qsort(NULL, 0, ...) is undefined */
        qsort(names, n, sizeof(char *), cmp_str);
    int r = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        char *text = r == 0 ? vc_read_file(names[i], &len) : NULL;
        if (r == 0 && text == NULL) {
            snprintf(err, errlen, "%s: %s", names[i], strerror(errno));
            r = -1;
        } else if (text) {
            add_source(v, names[i], text, len, site);
        }
        free(names[i]);
    }
    free(names);
    return r;
}

Vc__ConfigVersion *vc_config_gather(const char *confdir, char *err, size_t errlen)
{
    Vc__ConfigVersion *v = vc_malloc(sizeof(*v));
    vc__config_version__init(v);
    v->loaded_us = vc_now_us();
    if (confdir != NULL) {
        char *main_path = vc_asprintf("%s/vc.conf", confdir);
        size_t len;
        char *text = vc_read_file(main_path, &len);
        if (text)
            add_source(v, main_path, text, len, 0);
        else if (errno != ENOENT) {
            snprintf(err, errlen, "%s: %s", main_path, strerror(errno));
            free(main_path);
            vc_config_version_free(&v);
            return NULL;
        }
        free(main_path);
        char *conf = vc_asprintf("%s/conf-enabled", confdir);
        char *sites = vc_asprintf("%s/sites-enabled", confdir);
        int r = gather_dir(v, conf, 0, err, errlen);
        if (r == 0)
            r = gather_dir(v, sites, 1, err, errlen);
        free(conf);
        free(sites);
        if (r < 0) {
            vc_config_version_free(&v);
            return NULL;
        }
    }
    for (size_t i = 0; vc_config_env_name(i); i++) {
        const char *val = getenv(vc_config_env_name(i));
        if (val == NULL || *val == '\0')
            continue;
        v->env = vc_realloc(v->env, (v->n_env + 1) * sizeof(*v->env));
        v->env[v->n_env++] = new_field(vc_config_env_name(i), val);
    }
    return v;
}

/* Parsed, with its files checked: the configuration, or NULL and err. */
static vc_config_t *parse_checked(const Vc__ConfigVersion *v, const char *data_dir, char *err, size_t errlen)
{
    vc_config_t *cfg = vc_config_parse(v, data_dir, err, errlen);
    if (cfg != NULL && vc_config_check_files(cfg, err, errlen) < 0)
        vc_config_destroy(&cfg);
    return cfg;
}

vc_config_t *vc_config_load(const char *confdir, const char *data_dir, char *const *overrides, size_t noverrides,
                            Vc__ConfigVersion **out, char *err, size_t errlen)
{
    Vc__ConfigVersion *v = vc_config_gather(confdir, err, errlen);
    if (v == NULL)
        return NULL;
    for (size_t i = 0; i + 1 < noverrides; i += 2)
        vc_config_version_override(v, overrides[i], overrides[i + 1]);
    vc_config_t *cfg = parse_checked(v, data_dir, err, errlen);
    if (cfg != NULL && cfg->config_releases != NULL) {
        /* The release's own path, not current's: an error names the
         * release that brought it, and a switch while it is read changes
         * nothing here. */
        char *link = vc_asprintf("%s/current", cfg->config_releases);
        char *release = realpath(link, NULL);
        free(link);
        if (release != NULL) {
            char *sites = vc_asprintf("%s/sites-enabled", release);
            vc_config_destroy(&cfg);
            if (gather_dir(v, sites, 1, err, errlen) == 0)
                cfg = parse_checked(v, data_dir, err, errlen);
            free(sites);
            free(release);
        }
    }
    if (cfg != NULL && out != NULL)
        *out = v;
    else
        vc_config_version_free(&v);
    return cfg;
}

void vc_config_version_override(Vc__ConfigVersion *v, const char *key, const char *value)
{
    v->overrides = vc_realloc(v->overrides, (v->n_overrides + 1) * sizeof(*v->overrides));
    v->overrides[v->n_overrides++] = new_field(key, value);
}

void vc_config_version_free(Vc__ConfigVersion **pv)
{
    /* Everything in a gathered version was malloc'd, as are the versions
     * protobuf-c unpacks with the default allocator, so one free path. */
    if (*pv)
        vc__config_version__free_unpacked(*pv, NULL);
    *pv = NULL;
}
