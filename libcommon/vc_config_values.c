/*
 * A setting's value into the struct its spec names: from a configuration
 * file (libconfig's types) or from text (the environment, `vc up`
 * options), each checked against the spec's type and bounds, with the
 * file and line in errors (vc_config_internal.h).
 */
#include "vc_config_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <strings.h>

#define S(field) offsetof(vc_site_t, field)

void vc_config_free_list(char ***list, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free((*list)[i]);
    free(*list);
    *list = NULL;
    *n = 0;
}

/* "8M", "512k", "1G", "1048576" -> bytes; -1 on error. */
/* Stores a textual value (from a file string, the environment or `vc up`)
 * into the field a spec names. */
int vc_config_set_text(struct ctx *c, int line, const struct spec *sp, void *base, const char *text)
{
    char *field = (char *)base + sp->off;
    int64_t v;
    switch (sp->type) {
    case T_STR:
        free(*(char **)field);
        *(char **)field = vc_strdup(text);
        return 0;
    case T_LIST: {
        /* From the environment a list is comma separated (php.ini: ';'). */
        char ***list = (char ***)field;
        size_t *n = (size_t *)(field + sizeof(char **));
        vc_config_free_list(list, n);
        const char *sep = strcmp(sp->path, "php.ini") == 0 ? ";" : ",";
        char *copy = vc_strdup(text), *save = NULL;
        for (char *tok = strtok_r(copy, sep, &save); tok; tok = strtok_r(NULL, sep, &save)) {
            while (isspace((unsigned char)*tok))
                tok++;
            size_t len = strlen(tok);
            while (len && isspace((unsigned char)tok[len - 1]))
                tok[--len] = '\0';
            if (len == 0)
                continue;
            *list = vc_realloc(*list, (*n + 1) * sizeof(char *));
            (*list)[(*n)++] = vc_strdup(tok);
        }
        free(copy);
        return 0;
    }
    case T_AUTO_BOOL:
        if (strcasecmp(text, "auto") == 0) {
            *(int *)field = VC_AUTO;
            return 0;
        }
        __attribute__((fallthrough));
    case T_BOOL:
        if (!strcasecmp(text, "true") || !strcmp(text, "1") || !strcasecmp(text, "on") || !strcasecmp(text, "yes"))
            *(int *)field = 1;
        else if (!strcasecmp(text, "false") || !strcmp(text, "0") || !strcasecmp(text, "off") ||
                 !strcasecmp(text, "no"))
            *(int *)field = 0;
        else
            return vc_config_fail(c, line, "%s: expected true or false%s, got \"%s\"", sp->path,
                                  sp->type == T_AUTO_BOOL ? " or \"auto\"" : "", text);
        return 0;
    case T_LOGLEVEL:
        if ((*(int *)field = vc_log_level_parse(text)) < 0)
            return vc_config_fail(c, line, "%s: unknown level \"%s\" (debug, info, notice, warn, error)", sp->path,
                                  text);
        return 0;
    case T_LOGFORMAT:
        if (strcmp(text, "text") == 0 || strcmp(text, "combined") == 0)
            *(int *)field = 0;
        else if (strcmp(text, "json") == 0)
            *(int *)field = 1;
        else
            return vc_config_fail(c, line, "%s: expected \"text\" or \"json\", got \"%s\"", sp->path, text);
        return 0;
    case T_WORKERS:
        /* A number, or "auto": sized from memory (stored as 0). */
        if (strcmp(text, "auto") == 0) {
            *(int64_t *)field = 0;
            return 0;
        }
        __attribute__((fallthrough));
    case T_INT: {
        char *end;
        errno = 0;
        long long n = strtoll(text, &end, 10);
        if (errno || end == text || *end)
            return vc_config_fail(c, line, "%s: expected a number%s, got \"%s\"", sp->path,
                                  sp->type == T_WORKERS ? " or \"auto\"" : "", text);
        v = n;
        if (sp->type == T_WORKERS && v < 1)
            return vc_config_fail(c, line, "%s: %lld is out of range [1, %lld] (or \"auto\")", sp->path, (long long)v,
                                  (long long)sp->max);
        break;
    }
    case T_SIZE:
        if ((v = vc_parse_size(text)) < 0)
            return vc_config_fail(c, line, "%s: expected a size like 8M, got \"%s\"", sp->path, text);
        break;
    case T_DURATION:
        if (strcmp(text, "-1") == 0)
            v = -1;
        else if ((v = vc_parse_duration_ms(text)) < 0)
            return vc_config_fail(c, line, "%s: expected a duration like 30s, got \"%s\"", sp->path, text);
        /* Site durations are kept in seconds (they end up in headers). */
        else if (sp->off == S(hsts_max_age) || sp->off == S(static_max_age))
            if (strncmp(sp->path, "site.", 5) == 0)
                v /= 1000;
        break;
    default: VC_ASSERT(0);
    }
    if (v < sp->min || v > sp->max)
        return vc_config_fail(c, line, "%s: %lld is out of range [%lld, %lld]", sp->path, (long long)v,
                              (long long)sp->min, (long long)sp->max);
    if (sp->type == T_INT || sp->type == T_SIZE || sp->type == T_DURATION || sp->type == T_WORKERS)
        *(int64_t *)field = v;
    return 0;
}

/* Stores a libconfig setting through set_text, checking its type first. */
int vc_config_set_setting(struct ctx *c, const struct spec *sp, void *base, config_setting_t *s)
{
    int line = (int)config_setting_source_line(s);
    int t = config_setting_type(s);
    char buf[64];
    switch (sp->type) {
    case T_LIST: {
        if (t == CONFIG_TYPE_STRING)
            return vc_config_set_text(c, line, sp, base, config_setting_get_string(s));
        if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
            return vc_config_fail(c, line, "%s: expected a list of strings like [\"a\", \"b\"]", sp->path);
        char ***list = (char ***)((char *)base + sp->off);
        size_t *n = (size_t *)((char *)base + sp->off + sizeof(char **));
        vc_config_free_list(list, n);
        for (int i = 0; i < config_setting_length(s); i++) {
            config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
            if (config_setting_type(e) != CONFIG_TYPE_STRING)
                return vc_config_fail(c, line, "%s: element %d is not a string", sp->path, i + 1);
            *list = vc_realloc(*list, (*n + 1) * sizeof(char *));
            (*list)[(*n)++] = vc_strdup(config_setting_get_string(e));
        }
        return 0;
    }
    case T_AUTO_BOOL:
        if (t == CONFIG_TYPE_STRING)
            return vc_config_set_text(c, line, sp, base, config_setting_get_string(s));
        if (t != CONFIG_TYPE_BOOL)
            return vc_config_fail(c, line, "%s: expected true, false or \"auto\"", sp->path);
        return vc_config_set_text(c, line, sp, base, config_setting_get_bool(s) ? "true" : "false");
    case T_BOOL:
        if (t != CONFIG_TYPE_BOOL)
            return vc_config_fail(c, line, "%s: expected true or false", sp->path);
        return vc_config_set_text(c, line, sp, base, config_setting_get_bool(s) ? "true" : "false");
    case T_WORKERS:
        if (t == CONFIG_TYPE_STRING)
            return vc_config_set_text(c, line, sp, base, config_setting_get_string(s));
        __attribute__((fallthrough));
    case T_INT:
        if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
            return vc_config_fail(c, line, "%s: expected a whole number", sp->path);
        snprintf(buf, sizeof(buf), "%lld", config_setting_get_int64(s));
        return vc_config_set_text(c, line, sp, base, buf);
    case T_SIZE:
    case T_DURATION:
        if (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64) {
            /* A bare number is bytes for sizes, seconds for durations. */
            snprintf(buf, sizeof(buf), "%lld", config_setting_get_int64(s));
            return vc_config_set_text(c, line, sp, base, buf);
        }
        /* "8M", "30s" */
        __attribute__((fallthrough));
    default:
        if (t != CONFIG_TYPE_STRING)
            return vc_config_fail(c, line, "%s: expected a string", sp->path);
        return vc_config_set_text(c, line, sp, base, config_setting_get_string(s));
    }
}

const struct spec *vc_config_find_spec(const struct spec *specs, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(specs[i].path, path) == 0)
            return &specs[i];
    return NULL;
}
