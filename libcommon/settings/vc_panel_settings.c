/* vc-panel's settings and supervision (vc_settings.h): the "panel" section. */
#include "vc_panel_settings.h"
#include "vc_cidr.h"
#include "vc_config.h"
#include "vc_settings.h"
#include "vc_util.h"

#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#define P(field) offsetof(panel_settings_t, field)

static const vc_setting_t settings[] = {
    {"panel.enable", T_BOOL, P(enable), 0, 0, "run vc-panel"},
    {"panel.listen", T_STR, P(listen), 0, 0, "its HTTPS address"},
    {"panel.tls_cert", T_STR, P(tls_cert), 0, 0, "its certificate (\"\": the suite's self-signed one)"},
    {"panel.tls_key", T_STR, P(tls_key), 0, 0, "the key of panel.tls_cert"},
    {"panel.trusted_proxies", T_LIST, P(trusted_proxies), 0, 0, "ranges whose X-Forwarded-For is believed"},
    {"panel.idle_timeout", T_DURATION, P(idle_timeout_ms), 60000, 86400000, "a session unused this long is gone"},
    {"panel.session_max", T_DURATION, P(session_max_ms), 60000, 30L * 86400000, "and any session after this long"},
    {"panel.slow_after", T_INT, P(slow_after), 1, 100, "failed sign-ins before each next one must wait"},
    {"panel.lockout_after", T_INT, P(lockout_after), 1, 1000, "failed sign-ins before the account is locked"},
    {"panel.lockout_time", T_DURATION, P(lockout_ms), 1000, 86400000, "how long a lockout lasts"},
    {"panel.pages", T_STR, P(pages), 0, 0, "the directory of its pages (\"\": installed or next to the binary)"},
    {"panel.error_log", T_STR, P(error_log), 0, 0, "the log its Logs page follows (\"\": LOG_DIR/vc.log)"},
    {"panel.terminal", T_BOOL, P(terminal), 0, 0, "a shell in the page, for admins"},
    {"panel.terminal_user", T_STR, P(terminal_user), 0, 0, "the terminal runs as this user (never root)"},
    {"panel.terminal_shell", T_STR, P(terminal_shell), 0, 0, "the terminal's program"},
};

static const vc_env_setting_t env[] = {
    {"VC_PANEL", "panel.enable"},
    {"VC_PANEL_LISTEN", "panel.listen"},
};

static void defaults(void *values, const char *data_dir)
{
    (void)data_dir;
    panel_settings_t *s = values;
    /* Off until an operator turns it on: a panel is a way in. */
    s->enable = 0;
    s->listen = vc_strdup("127.0.0.1:8444");
    s->idle_timeout_ms = 30 * 60000;
    s->session_max_ms = 12 * 3600000L;
    s->slow_after = 3;
    s->lockout_after = 5;
    s->lockout_ms = 15 * 60000;
    s->terminal = 0; /* a shell in a page: an operator turns it on */
    s->terminal_user = vc_strdup("nobody");
    s->terminal_shell = vc_strdup("/bin/bash");
}

static int validate(const vc_config_t *cfg, const void *values, char *why, size_t len)
{
    const panel_settings_t *s = values;
    for (size_t i = 0; i < s->ntrusted_proxies; i++) {
        vc_cidr_t c;
        if (vc_cidr_parse(s->trusted_proxies[i], &c) < 0) {
            snprintf(why, len, "panel.trusted_proxies: \"%s\" is not an address or a CIDR block",
                     s->trusted_proxies[i]);
            return -1;
        }
    }
    if ((s->tls_cert && *s->tls_cert) != (s->tls_key && *s->tls_key)) {
        snprintf(why, len, "panel.tls_cert and panel.tls_key go together");
        return -1;
    }
    if (s->terminal) {
        const struct passwd *pw = getpwnam(s->terminal_user);
        if (pw == NULL || pw->pw_uid == 0) {
            snprintf(why, len, "panel.terminal_user \"%s\" is %s", s->terminal_user,
                     pw ? "root: the terminal runs as an unprivileged user" : "not a user of this system");
            return -1;
        }
        if (s->terminal_shell[0] != '/' || access(s->terminal_shell, X_OK) != 0) {
            snprintf(why, len, "panel.terminal_shell \"%s\" is not an absolute path to a program", s->terminal_shell);
            return -1;
        }
    }
    if (s->lockout_after < s->slow_after) {
        snprintf(why, len, "panel.lockout_after (%lld) is below panel.slow_after (%lld)", (long long)s->lockout_after,
                 (long long)s->slow_after);
        return -1;
    }
    return 0;
}

static const vc_supervision_t supervision = {
    .binary = "vc-panel",
    .order = 30, /* last: it shows and commands the others */
    .copies = VC_COPIES_IF,
    .copies_setting = "panel.enable",
};

const vc_section_t vc_panel_settings = {
    .name = "panel",
    .settings = settings,
    .nsettings = VC_ARRAY_SIZE(settings),
    .size = sizeof(panel_settings_t),
    .defaults = defaults,
    .env = env,
    .nenv = VC_ARRAY_SIZE(env),
    .supervision = &supervision,
    .validate = validate,
};
