/* vc-fed's settings and supervision (vc_settings.h): the "fed" section. */
#include "vc_fed_settings.h"
#include "vc_config.h"
#include "vc_util.h"

#include <stddef.h>

#define F(field) offsetof(fed_settings_t, field)

static const vc_setting_t settings[] = {
    {"fed.stage_timeout", T_DURATION, F(stage_timeout_ms), 10000, 86400000,
     "a staging nothing came for in this long is dropped"},
    {"fed.switch_timeout", T_DURATION, F(switch_timeout_ms), 1000, 600000,
     "for the pool's new generation to take over after a switch"},
    {"fed.health_timeout", T_DURATION, F(health_timeout_ms), 100, 600000,
     "for site.health_check to answer 200 after a switch"},
    {"fed.peer_timeout", T_DURATION, F(peer_timeout_ms), 1000, 600000,
     "a call to another node's vc-fed (but a commit)"},
    {"fed.hook_timeout", T_DURATION, F(hook_timeout_ms), 1000, 86400000,
     "one command of site.deploy_hooks, at most (then it is stopped and the hook fails)"},
};

static void defaults(void *values, const char *data_dir)
{
    (void)data_dir;
    fed_settings_t *f = values;
    f->stage_timeout_ms = 600000; /* ten minutes without a word from the deployer */
    f->switch_timeout_ms = 60000;
    f->health_timeout_ms = 10000;
    f->peer_timeout_ms = 10000;  /* what a node that died mid-call costs a deploy */
    f->hook_timeout_ms = 600000; /* a migration of a large table */
}

/* One when a site is deployed (site.deploy_to) or configuration releases
 * are followed (config_releases), else none. */
static size_t copies(const vc_config_t *cfg)
{
    if (cfg->config_releases)
        return 1;
    for (size_t i = 0; i < cfg->nsites; i++)
        if (cfg->sites[i].deploy_to)
            return 1;
    return 0;
}

static const vc_supervision_t supervision = {
    .binary = "vc-fed",
    .order = 25, /* after the bus it reports to and the pools it reloads */
    .copies = VC_COPIES_FN,
    .copies_fn = copies,
};

const vc_section_t vc_fed_settings = {
    .name = "fed",
    .settings = settings,
    .nsettings = VC_ARRAY_SIZE(settings),
    .size = sizeof(fed_settings_t),
    .defaults = defaults,
    .supervision = &supervision,
};
