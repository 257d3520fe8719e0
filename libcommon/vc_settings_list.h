#ifndef VC_SETTINGS_LIST_H
#define VC_SETTINGS_LIST_H
/*
 * Every setting the configuration takes, in one list: the main file's,
 * a site's, a pool's and each daemon's section, each with its type, its
 * default, its range and its help. `vc settings` prints it, and
 * docs/configuration.md is held to it (integration/test_33_tables.py).
 */
#include <stddef.h>

typedef struct vc_setting_row {
    const char *section; /* "global", "site", "php", or a daemon's section: "front" */
    const char *path;    /* "front.max_body"; a site's and a pool's as in their files' blocks */
    const char *type;    /* "size", "duration", "list"... */
    char dflt[256];      /* as a file would write it: 8M, "combined", [] */
    char range[96];      /* "1 to 64", "at least 1K", or "" */
    const char *help;
} vc_setting_row_t;

/* Calls row for every setting, in the order of the files' blocks. */
void vc_settings_list(void (*row)(void *arg, const vc_setting_row_t *r), void *arg);
/* Whether name is a section of the list. */
int vc_settings_section_known(const char *name);

#endif
