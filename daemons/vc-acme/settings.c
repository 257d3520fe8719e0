/* vc-acme's settings and supervision (vc_settings.h). */
#include "settings.h"
#include "vc_util.h"

#include <stddef.h>

#define A(field) offsetof(acme_settings_t, field)

static const vc_setting_t settings[] = {
    {"acme.directory", T_STR, A(directory), 0, 0}, {"acme.email", T_STR, A(email), 0, 0},
    {"acme.ca_bundle", T_STR, A(ca_bundle), 0, 0}, {"acme.key_type", T_STR, A(key_type), 0, 0},
    {"acme.profile", T_STR, A(profile), 0, 0},
};

static const vc_env_setting_t env[] = {
    {"VC_ACME_DIRECTORY", "acme.directory"},
    {"VC_ACME_CA_BUNDLE", "acme.ca_bundle"},
};

static void defaults(void *values, const char *data_dir)
{
    (void)data_dir;
    acme_settings_t *a = values;
    a->directory = vc_strdup("letsencrypt");
    a->email = vc_strdup("");
    a->ca_bundle = vc_strdup("");
    a->key_type = vc_strdup("ec256");
    a->profile = vc_strdup("");
}

static const vc_supervision_t supervision = {
    .binary = "vc-acme",
    .order = 40, /* after the fronts, which answer its challenges */
    .copies = VC_COPIES_ONE,
};

const vc_section_t vc_acme_settings = {
    .name = "acme",
    .settings = settings,
    .nsettings = VC_ARRAY_SIZE(settings),
    .size = sizeof(acme_settings_t),
    .defaults = defaults,
    .supervision = &supervision,
    .env = env,
    .nenv = VC_ARRAY_SIZE(env),
};
