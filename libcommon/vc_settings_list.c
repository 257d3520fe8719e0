/*
 * Every setting, with its default as a file would write it (vc_settings_list.h).
 * The defaults are those of a configuration with no file read, under a
 * data directory called DATA, so a default below it reads "DATA/temp".
 */
#include "vc_settings_list.h"
#include "vc_config.h"
#include "vc_config_internal.h"
#include "vc_log.h"
#include "vc_settings.h"
#include "vc_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {
    [T_STR] = "string",        [T_INT] = "integer",
    [T_BOOL] = "bool",         [T_AUTO_BOOL] = "bool or \"auto\"",
    [T_LIST] = "list",         [T_SIZE] = "size",
    [T_DURATION] = "duration", [T_LOGLEVEL] = "level",
    [T_LOGFORMAT] = "format",  [T_WORKERS] = "integer or \"auto\"",
};

/* 8M, 16K, 1G or bytes, as vc_parse_size reads them. */
static void size_text(int64_t v, char *out, size_t len)
{
    static const struct {
        char unit;
        int64_t n;
    } units[] = {{'G', 1LL << 30}, {'M', 1LL << 20}, {'K', 1LL << 10}};
    for (size_t i = 0; i < VC_ARRAY_SIZE(units); i++)
        if (v != 0 && v % units[i].n == 0) {
            snprintf(out, len, "%lld%c", (long long)(v / units[i].n), units[i].unit);
            return;
        }
    snprintf(out, len, "%lld", (long long)v);
}

/* 30s, 10m, 1h, 1d, 250ms, as vc_parse_duration_ms reads them. */
static void duration_text(int64_t ms, char *out, size_t len)
{
    static const struct {
        const char *unit;
        int64_t n;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
    if (ms <= 0) {
        snprintf(out, len, "%lld", (long long)(ms < 0 ? -1 : 0));
        return;
    }
    for (size_t i = 0; i < VC_ARRAY_SIZE(units); i++)
        if (ms % units[i].n == 0) {
            snprintf(out, len, "%lld%s", (long long)(ms / units[i].n), units[i].unit);
            return;
        }
    snprintf(out, len, "%lldms", (long long)ms);
}

/* A site's durations are kept in seconds (they go into headers). */
static int64_t duration_ms(const struct spec *sp, int64_t v)
{
    /* The two that end up in headers are kept in seconds (vc_config_values.c). */
    int seconds = !strcmp(sp->path, "site.hsts") || !strcmp(sp->path, "site.static_max_age");
    return seconds && v > 0 ? v * 1000 : v;
}

static void number_text(const struct spec *sp, int64_t v, char *out, size_t len)
{
    if (sp->type == T_SIZE)
        size_text(v, out, len);
    else if (sp->type == T_DURATION)
        duration_text(duration_ms(sp, v), out, len);
    else
        snprintf(out, len, "%lld", (long long)v);
}

static void value_text(const struct spec *sp, const void *base, char *out, size_t len)
{
    const char *field = (const char *)base + sp->off;
    switch (sp->type) {
    case T_STR: {
        const char *v = *(char *const *)field;
        snprintf(out, len, "\"%s\"", v ? v : "");
        return;
    }
    case T_LIST: {
        char *const *list = *(char *const *const *)field;
        size_t n = *(const size_t *)(field + sizeof(char **)), used = 0;
        used += (size_t)snprintf(out, len, "[");
        for (size_t i = 0; i < n && used < len; i++)
            used += (size_t)snprintf(out + used, len - used, "%s\"%s\"", i ? ", " : "", list[i]);
        if (used < len)
            snprintf(out + used, len - used, "]");
        return;
    }
    case T_AUTO_BOOL:
    case T_BOOL: {
        int v = *(const int *)field;
        snprintf(out, len, "%s", v == VC_AUTO ? "\"auto\"" : v ? "true" : "false");
        return;
    }
    case T_LOGLEVEL: snprintf(out, len, "\"%s\"", vc_log_level_name(*(const int *)field)); return;
    case T_LOGFORMAT: {
        int json = *(const int *)field;
        snprintf(out, len, "\"%s\"", json ? "json" : strcmp(sp->path, "front.access_log") == 0 ? "combined" : "text");
        return;
    }
    case T_WORKERS:
        if (*(const int64_t *)field == 0) {
            snprintf(out, len, "\"auto\"");
            return;
        }
        __attribute__((fallthrough));
    case T_INT:
    case T_SIZE:
    case T_DURATION: number_text(sp, *(const int64_t *)field, out, len); return;
    }
    VC_ASSERT(0);
}

static void range_text(const struct spec *sp, char *out, size_t len)
{
    *out = '\0';
    if (sp->type != T_INT && sp->type != T_SIZE && sp->type != T_DURATION && sp->type != T_WORKERS)
        return;
    if (sp->min == 0 && sp->max == 0)
        return;
    char lo[32], hi[32];
    number_text(sp, sp->type == T_WORKERS && sp->min < 1 ? 1 : sp->min, lo, sizeof(lo));
    if (sp->max == INT64_MAX) {
        snprintf(out, len, "at least %s", lo);
        return;
    }
    number_text(sp, sp->max, hi, sizeof(hi));
    snprintf(out, len, "%s to %s", lo, hi);
}

/* The defaults are made under DATA_DIR (it must be absolute): written
 * back as DATA, the name the docs give the data directory. */
#define DATA_DIR "/DATA"
static void data_dir_named(char *text)
{
    for (char *p = text; (p = strstr(p, "\"" DATA_DIR)) != NULL;)
        memmove(p + 1, p + 2, strlen(p + 2) + 1);
}

static void rows_of(const char *section, const struct spec *specs, size_t n, const void *base,
                    void (*row)(void *arg, const vc_setting_row_t *r), void *arg)
{
    for (size_t i = 0; i < n; i++) {
        vc_setting_row_t r = {.section = section, .path = specs[i].path, .help = specs[i].help};
        r.type = type_names[specs[i].type];
        value_text(&specs[i], base, r.dflt, sizeof(r.dflt));
        data_dir_named(r.dflt);
        range_text(&specs[i], r.range, sizeof(r.range));
        row(arg, &r);
    }
}

void vc_settings_list(void (*row)(void *arg, const vc_setting_row_t *r), void *arg)
{
    Vc__ConfigVersion none = VC__CONFIG_VERSION__INIT;
    char err[256];
    vc_config_t *cfg = vc_config_parse(&none, DATA_DIR, err, sizeof(err));
    if (cfg == NULL)
        vc_log(VC_LOG_CRIT, "settings", "the defaults are refused: %s", err);
    VC_ASSERT(cfg != NULL); /* no file: nothing to refuse */
    size_t n;
    const struct spec *specs = vc_config_global_specs(&n);
    rows_of("global", specs, n, cfg, row, arg);
    vc_site_t site;
    vc_site_defaults(&site);
    specs = vc_config_site_specs(&n);
    rows_of("site", specs, n, &site, row, arg);
    vc_background_t bg;
    vc_background_defaults(&bg);
    rows_of("site", vc_background_specs, vc_background_nspecs, &bg, row, arg);
    free(bg.stop_signal);
    vc_pool_t pool;
    vc_pool_defaults(&pool, "default");
    rows_of("php", vc_pool_specs, vc_pool_nspecs, &pool, row, arg);
    vc_pool_fini(&pool);
    for (size_t k = 0; vc_sections[k]; k++)
        rows_of(vc_sections[k]->name, vc_sections[k]->settings, vc_sections[k]->nsettings,
                vc_config_section(cfg, vc_sections[k]), row, arg);
    vc_config_destroy(&cfg);
}

int vc_settings_section_known(const char *name)
{
    if (!strcmp(name, "global") || !strcmp(name, "site") || !strcmp(name, "php"))
        return 1;
    for (size_t k = 0; vc_sections[k]; k++)
        if (strcmp(vc_sections[k]->name, name) == 0)
            return 1;
    return 0;
}
