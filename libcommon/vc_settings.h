/*
 * What a daemon declares about itself, in its own folder: its settings
 * (daemons/NAME/settings.c) and how `vc up` runs it. The build collects
 * every daemons/NAME/settings.c and lists the section each defines (named
 * after its folder: daemons/vc-front defines vc_front_settings) in
 * vc_sections, so adding a daemon edits no shared file: vc_config.c reads
 * a section's settings with the same file:line errors and refusal of
 * unknown names as its own, and the supervisor runs what the section says.
 */
#ifndef VC_SETTINGS_H
#define VC_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

struct vc_config;

enum type { T_STR, T_INT, T_BOOL, T_AUTO_BOOL, T_LIST, T_SIZE, T_DURATION, T_LOGLEVEL, T_LOGFORMAT, T_WORKERS };

/* A T_AUTO_BOOL holds 1, 0 or VC_AUTO: true, false or "auto" (decided
 * where it is used, from what the machine allows). */
#define VC_AUTO (-1)

/* One setting: its dotted path ("front.processes"), its type, where it
 * goes (an offset into the struct being read), its range and what it
 * does, in a line (`vc settings` prints it; docs/configuration.md is held
 * to that list). A T_LIST field is a char ** followed by its size_t
 * count. A T_DURATION is kept in milliseconds. */
struct spec {
    const char *path;
    enum type type;
    size_t off;
    int64_t min, max;
    const char *help;
};
typedef struct spec vc_setting_t;

/* An environment variable and the setting it sets (it wins over files). */
typedef struct vc_env_setting {
    const char *env, *path;
} vc_env_setting_t;

typedef enum {
    VC_COPIES_ONE,      /* one process */
    VC_COPIES_PER_POOL, /* one per PHP pool (vc-php) */
    VC_COPIES_SETTING,  /* as many as an integer setting of the section says */
    VC_COPIES_IF,       /* one when a setting of the section is set (a
                         * string not empty, a list not empty, true), else none */
    VC_COPIES_FN,       /* as many as copies_fn says, from the whole configuration */
} vc_copies_t;

/* How `vc up` runs the daemon. */
typedef struct vc_supervision {
    const char *binary;                               /* in the suite's bin directory */
    int order;                                        /* started in rising order, stopped in falling */
    vc_copies_t copies;                               /* each copy gets VC_INSTANCE (0, 1, ...) */
    const char *copies_setting;                       /* VC_COPIES_SETTING, VC_COPIES_IF: which */
    size_t (*copies_fn)(const struct vc_config *cfg); /* VC_COPIES_FN */
    int serves_clients;                               /* it gets the listening sockets (VC_LISTEN_FDS;
                                                       * the admin one to copy 0 only) */
    int overlaps;                                     /* `vc restart` starts its successor first and
                                                       * stops it once that one is ready */
    int reload_by_replacing;                          /* it applies a new configuration by being
                                                       * replaced (else: its `reload` command) */
    int ready_timeout_ms;                             /* to say it is ready; 0: 15 s */
} vc_supervision_t;

typedef struct vc_section {
    const char *name; /* the first part of its settings' paths: "front" */
    const vc_setting_t *settings;
    size_t nsettings;
    size_t size; /* of its values */
    /* Its defaults; a T_STR setting they leave NULL is then "". */
    void (*defaults)(void *values, const char *data_dir);
    const vc_env_setting_t *env;
    size_t nenv;
    const vc_supervision_t *supervision; /* NULL: no daemon of its own */
    /* Endpoints of its own that `endpoints` may move, NULL-terminated
     * (its control endpoint, ctl-BINARY, is known without this). */
    const char *const *endpoints;
    /* Checks what one setting's type and range cannot (settings that go
     * together, the sites that use them): 0, or -1 with why. NULL: none. */
    int (*validate)(const struct vc_config *cfg, const void *values, char *why, size_t len);
} vc_section_t;

/* Every section of the build, in the order of their folders' names; NULL
 * at the end (generated: libcommon/CMakeLists.txt). */
extern const vc_section_t *const vc_sections[];

/* The section's values in cfg (defaults, then the files, the environment
 * and `vc up` options), or NULL if the section is not in the build. */
const void *vc_config_section(const struct vc_config *cfg, const vc_section_t *sec);
/* Whether the setting path is set: a string or a list not empty, a number
 * not zero, true. It is sec's, or another section's when it names that
 * one ("cluster.nats_server"). 0 if there is no such setting. */
int vc_setting_is_set(const struct vc_config *cfg, const vc_section_t *sec, const char *path);
/* A string setting's value by its path ("panel.terminal_user"), for the
 * supervisor, which knows no section's struct; NULL if there is none. */
const char *vc_setting_str(const struct vc_config *cfg, const char *path);
/* How many copies of sec's daemon cfg runs (0: none), as `vc up` starts
 * them; VC_COPIES_PER_POOL counts the default pool and the named ones. */
size_t vc_supervision_copies(const struct vc_config *cfg, const vc_section_t *sec);

#endif
