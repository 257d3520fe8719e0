/*
 * What vc_config.c shares with the files that declare more settings
 * (vc_pools.c): the schema's shape and the helpers that read a setting
 * into a struct. Not for the daemons: they read vc_config.h.
 */
#ifndef VC_CONFIG_INTERNAL_H
#define VC_CONFIG_INTERNAL_H

#include "vc_config.h"

#include <libconfig.h>
#include <stddef.h>
#include <stdint.h>

/* enum type and struct spec: vc_settings.h. */

/* The source being read, for errors. */
struct ctx {
    char *err;
    size_t errlen;
    const char *file;
};

/* Writes "file:line: message" into c->err; returns -VC_ERR_CONFIG. */
/* A deployed site's directory, resolved, and its root below it (the
 * current link itself is not resolved: it moves). */
void vc_config_resolve_deploy_to(vc_site_t *s);
int vc_config_fail(struct ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Adds "file:line: message" to cfg->warnings; validation goes on. */
void vc_config_warn(struct ctx *c, vc_config_t *cfg, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void vc_config_free_list(char ***list, size_t *n);
const struct spec *vc_config_find_spec(const struct spec *specs, size_t n, const char *path);
/* Stores a libconfig setting into base at sp's offset, checking its type. */
int vc_config_set_setting(struct ctx *c, const struct spec *sp, void *base, config_setting_t *s);
/* Stores a textual value (the environment, `vc up` options). */
int vc_config_set_text(struct ctx *c, int line, const struct spec *sp, void *base, const char *text);
/* Reads every setting of a group below prefix; unknown names are errors. */
int vc_config_walk(struct ctx *c, vc_config_t *cfg, config_setting_t *group, const char *prefix,
                   const struct spec *specs, size_t nspecs, void *base);

/* vc_config_checks.c: a request link over TCP without link_key is
 * refused off loopback, warned about on it. */
int vc_config_check_link_keys(struct ctx *c, vc_config_t *cfg);
/* Realtime: origins that are origins, app secrets of 16 characters or
 * more, no two apps with one id or key. */
int vc_config_check_realtime(struct ctx *c, vc_config_t *cfg);
/* The cache: a purge token of 16 characters or more; warnings for
 * settings that undo its safety (no session cookies, "*" params, no
 * lock). */
int vc_config_check_cache(struct ctx *c, vc_config_t *cfg);
/* Each daemon's own check of its section (vc_settings.h), its message
 * pointed at the file and line of the setting it names (vc_settings.c). */
int vc_config_sections_validate(struct ctx *c, vc_config_t *cfg);

/* vc_settings.c: the daemons' own sections. */
/* The spec of path among the sections', and in *into where its value goes. */
const struct spec *vc_config_section_spec(vc_config_t *cfg, const char *path, void **into);
/* The setting a section's environment variable sets, or NULL. */
const char *vc_config_section_env(const char *env);
void vc_config_sections_init(vc_config_t *cfg, const char *data_dir);
void vc_config_sections_fini(vc_config_t *cfg);

/* vc_config.c: the settings of the main file and of a site, and a site's
 * defaults (for vc_settings_list.c). */
const struct spec *vc_config_global_specs(size_t *n);
const struct spec *vc_config_site_specs(size_t *n);
void vc_site_defaults(vc_site_t *s);

/* vc_config_background.c: `site.background: { NAME: { command = ...; }; }`
 * into the site (base) and checks of it and of site.schedule; the
 * settings of one process ("site.background.*.command"). */
int vc_background_read(struct ctx *c, void *site, config_setting_t *group);
/* site.schedule, with each entry's line. */
int vc_schedule_read(struct ctx *c, void *site, config_setting_t *list);
void vc_background_free(vc_site_t *s);
int vc_background_validate(struct ctx *c, const vc_site_t *s, int files);
extern const struct spec vc_background_specs[];
extern const size_t vc_background_nspecs;
void vc_background_defaults(vc_background_t *b);

/* vc_pools.c: the pool settings ("php.workers" for the default pool,
 * the same names inside each of `pools`). */
extern const struct spec vc_pool_specs[];
extern const size_t vc_pool_nspecs;
void vc_pool_defaults(vc_pool_t *p, const char *name);
void vc_pool_fini(vc_pool_t *p);
/* Reads `pools: { NAME: { ... }; ... }` into cfg->pools. */
int vc_pools_read(struct ctx *c, vc_config_t *cfg, config_setting_t *group);
/* Checks every pool, and that each site names one that exists. */
int vc_pools_validate(struct ctx *c, vc_config_t *cfg);
/* Where roots and deploy_to may be (vc_config_paths.c). */
int vc_config_check_paths(struct ctx *c, vc_config_t *cfg);
/* Each site checked (vc_config_sites.c): 0, or -VC_ERR_CONFIG with the
 * error in c. */
int vc_sites_validate(struct ctx *c, vc_config_t *cfg);

#endif
