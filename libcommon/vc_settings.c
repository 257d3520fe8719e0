/* The daemons' own sections of the configuration (vc_settings.h): their
 * values inside a vc_config_t, for vc_config.c. */
#include "vc_config_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

/* The spec of path among the sections', and where its value goes. */
const struct spec *vc_config_section_spec(vc_config_t *cfg, const char *path, void **into)
{
    for (size_t k = 0; vc_sections[k]; k++) {
        const struct spec *sp = vc_config_find_spec(vc_sections[k]->settings, vc_sections[k]->nsettings, path);
        if (sp) {
            *into = cfg->sections[k];
            return sp;
        }
    }
    return NULL;
}

/* The section's setting named by an environment variable, or NULL. */
const char *vc_config_section_env(const char *env)
{
    for (size_t k = 0; vc_sections[k]; k++)
        for (size_t i = 0; i < vc_sections[k]->nenv; i++)
            if (strcmp(vc_sections[k]->env[i].env, env) == 0)
                return vc_sections[k]->env[i].path;
    return NULL;
}

void vc_config_sections_init(vc_config_t *cfg, const char *data_dir)
{
    size_t n = 0;
    while (vc_sections[n])
        n++;
    cfg->sections = vc_calloc(n + 1, sizeof(void *));
    for (size_t k = 0; k < n; k++) {
        cfg->sections[k] = vc_calloc(1, vc_sections[k]->size ? vc_sections[k]->size : 1);
        if (vc_sections[k]->defaults)
            vc_sections[k]->defaults(cfg->sections[k], data_dir);
        /* A string its defaults leave unset is empty, never NULL. */
        for (size_t i = 0; i < vc_sections[k]->nsettings; i++) {
            const struct spec *sp = &vc_sections[k]->settings[i];
            char **str = (char **)((char *)cfg->sections[k] + sp->off);
            if (sp->type == T_STR && *str == NULL)
                *str = vc_strdup("");
        }
    }
}

/* Frees what a section's strings and lists hold, then the section. */
void vc_config_sections_fini(vc_config_t *cfg)
{
    for (size_t k = 0; cfg->sections && vc_sections[k]; k++) {
        char *base = cfg->sections[k];
        for (size_t i = 0; base && i < vc_sections[k]->nsettings; i++) {
            const struct spec *sp = &vc_sections[k]->settings[i];
            if (sp->type == T_STR)
                free(*(char **)(base + sp->off));
            else if (sp->type == T_LIST)
                vc_config_free_list((char ***)(base + sp->off), (size_t *)(base + sp->off + sizeof(char **)));
        }
        free(base);
    }
    free(cfg->sections);
    cfg->sections = NULL;
}

const void *vc_config_section(const vc_config_t *cfg, const vc_section_t *sec)
{
    for (size_t k = 0; vc_sections[k]; k++)
        if (vc_sections[k] == sec)
            return cfg->sections[k];
    return NULL;
}

/* The setting path (sec's, or the section's it names) and where its value
 * is in cfg; NULL if there is none. */
static const struct spec *find_setting(const vc_config_t *cfg, const vc_section_t *sec, const char *path,
                                       const char **value)
{
    /* A setting of another section (vc-nats runs on cluster.nats_server). */
    size_t n = sec ? strlen(sec->name) : 0;
    if (sec == NULL || strncmp(path, sec->name, n) != 0 || path[n] != '.')
        for (size_t k = 0; vc_sections[k]; k++)
            if (!strncmp(path, vc_sections[k]->name, strlen(vc_sections[k]->name)) &&
                path[strlen(vc_sections[k]->name)] == '.')
                sec = vc_sections[k];
    const char *values = sec ? vc_config_section(cfg, sec) : NULL;
    for (size_t i = 0; values && i < sec->nsettings; i++)
        if (strcmp(sec->settings[i].path, path) == 0) {
            *value = values + sec->settings[i].off;
            return &sec->settings[i];
        }
    return NULL;
}

int vc_setting_is_set(const vc_config_t *cfg, const vc_section_t *sec, const char *path)
{
    const char *v;
    const struct spec *s = find_setting(cfg, sec, path, &v);
    if (s == NULL)
        return 0;
    switch (s->type) {
    case T_STR: return (*(char *const *)v)[0] != '\0';
    case T_LIST: return *(const size_t *)(v + sizeof(char **)) > 0;
    case T_BOOL: return *(const int *)v != 0;
    default: return *(const int64_t *)v != 0;
    }
}

const char *vc_setting_str(const vc_config_t *cfg, const char *path)
{
    const char *v;
    const struct spec *s = find_setting(cfg, NULL, path, &v);
    return s && s->type == T_STR ? *(char *const *)v : NULL;
}

/* The place ("FILE:LINE") of the setting a validate message starts with
 * ("cluster.nats: ..."), the last one set; NULL if it was not set in a file. */
static const char *origin_of(const vc_config_t *cfg, const char *why)
{
    for (size_t i = cfg->norigins; i-- > 0;) {
        const char *sp = strchr(cfg->origins[i], ' ');
        size_t n = (size_t)(sp - cfg->origins[i]);
        if (strncmp(why, cfg->origins[i], n) == 0 && (why[n] == ':' || why[n] == ' '))
            return sp + 1;
    }
    return NULL;
}

int vc_config_sections_validate(struct ctx *c, vc_config_t *cfg)
{
    for (size_t i = 0; vc_sections[i]; i++) {
        const vc_section_t *sec = vc_sections[i];
        char why[512];
        if (sec->validate && sec->validate(cfg, vc_config_section(cfg, sec), why, sizeof(why)) < 0) {
            const char *where = origin_of(cfg, why);
            c->file = where ? where : "configuration"; /* "FILE:LINE" */
            return vc_config_fail(c, 0, "%s", why);
        }
    }
    return 0;
}

size_t vc_supervision_copies(const vc_config_t *cfg, const vc_section_t *sec)
{
    const vc_supervision_t *how = sec->supervision;
    if (how == NULL)
        return 0;
    if (how->copies == VC_COPIES_PER_POOL)
        return 1 + cfg->npools;
    if (how->copies == VC_COPIES_IF)
        return (size_t)vc_setting_is_set(cfg, sec, how->copies_setting);
    if (how->copies == VC_COPIES_FN)
        return how->copies_fn(cfg);
    if (how->copies == VC_COPIES_SETTING) {
        const char *values = vc_config_section(cfg, sec);
        for (size_t i = 0; values && i < sec->nsettings; i++)
            if (strcmp(sec->settings[i].path, how->copies_setting) == 0 && sec->settings[i].type == T_INT)
                return (size_t) * (const int64_t *)(values + sec->settings[i].off);
        vc_log(VC_LOG_ERR, "config", "%s: its copies setting \"%s\" is not an integer setting of its own", how->binary,
               how->copies_setting);
    }
    return 1;
}
