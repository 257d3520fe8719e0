#ifndef VC_PANEL_SETTINGS_H
#define VC_PANEL_SETTINGS_H
/* vc-panel's section of the configuration (vc_panel_settings.c). */
#include "vc_settings.h"

#include <stddef.h>
#include <stdint.h>

/* The "panel" section (vc_panel_settings.c). */
typedef struct panel_settings {
    int enable;               /* panel.enable: run vc-panel at all */
    char *listen;             /* "127.0.0.1:8444" */
    char *tls_cert, *tls_key; /* "": the suite's self-signed pair */
    char **trusted_proxies;   /* CIDRs whose X-Forwarded-For is believed */
    size_t ntrusted_proxies;
    int64_t idle_timeout_ms; /* a session unused this long is gone */
    int64_t session_max_ms;  /* and any session after this long */
    int64_t slow_after;      /* failed sign-ins before each next one waits */
    int64_t lockout_after;   /* failed sign-ins before a lockout */
    int64_t lockout_ms;      /* how long a lockout lasts */
    char *pages;             /* the directory of the pages ("": next to the binary, or installed) */
    char *error_log;         /* the log the logs page follows ("": LOG_DIR/vc.log) */
    int terminal;            /* panel.terminal: a shell in the page, for admins */
    char *terminal_user;     /* it runs as this user (never root) */
    char *terminal_shell;    /* this program */
} panel_settings_t;

extern const vc_section_t vc_panel_settings;

#endif
