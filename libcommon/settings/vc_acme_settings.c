/* vc-acme's settings and supervision (vc_settings.h). */
#include "vc_acme_settings.h"
#include "vc_util.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define A(field) offsetof(acme_settings_t, field)

static const vc_setting_t settings[] = {
    {"acme.directory", T_STR, A(directory), 0, 0, "\"letsencrypt\", \"letsencrypt-staging\" or a CA's directory URL"},
    {"acme.email", T_STR, A(email), 0, 0, "the account's contact"},
    {"acme.ca_bundle", T_STR, A(ca_bundle), 0, 0, "PEM of the CAs trusted for the CA's HTTPS (\"\": the system's)"},
    {"acme.key_type", T_STR, A(key_type), 0, 0, "ec256, rsa2048, rsa3072 or rsa4096"},
    {"acme.profile", T_STR, A(profile), 0, 0, "a certificate profile to ask the CA for (\"shortlived\")"},
    {"acme.dns_hook", T_STR, A(dns_hook), 0, 0, "DNS-01: run as HOOK set|unset _acme-challenge.NAME VALUE"},
    {"acme.dns_wait", T_DURATION, A(dns_wait_ms), 0, 3600 * 1000, "DNS-01: time for new records to spread"},
    {"acme.ca_timeout", T_DURATION, A(ca_timeout_ms), 1000, 600 * 1000, "one request to a CA, at most"},
    {"acme.fallback", T_LIST, A(fallback), 0, 0, "CAs tried in turn when the one before fails"},
    {"acme.eab_kid", T_STR, A(eab_kid), 0, 0, "External Account Binding: the key id, for CAs that want one"},
    {"acme.eab_hmac_key", T_STR, A(eab_hmac_key), 0, 0, "External Account Binding: the HMAC key (base64url)"},
    {"acme.on_demand_ask", T_STR, A(on_demand_ask), 0, 0,
     "on-demand TLS: URL?domain=HOST answers 200 for hosts that may have one"},
    {"acme.on_demand_per_hour", T_INT, A(on_demand_per_hour), 1, 100000,
     "on-demand TLS: new certificates an hour, at most"},
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
    a->dns_hook = vc_strdup("");
    a->eab_kid = vc_strdup("");
    a->eab_hmac_key = vc_strdup("");
    a->on_demand_ask = vc_strdup("");
    a->on_demand_per_hour = 10; /* a handful of new hosts a minute is already a busy platform */
    a->dns_wait_ms = 30 * 1000; /* most providers' servers agree by then; slow ones need more */
    a->ca_timeout_ms = 30 * 1000;
}

static int is_directory(const char *d)
{
    return !strcmp(d, "letsencrypt") || !strcmp(d, "letsencrypt-staging") || !strncmp(d, "https://", 8) ||
           !strncmp(d, "http://", 7);
}

/* What one setting cannot say alone: the key type, the directory's
 * scheme, and a hook for the sites that answer DNS-01. */
static int validate(const vc_config_t *cfg, const void *values, char *why, size_t len)
{
    const acme_settings_t *a = values;
    if (strcmp(a->key_type, "ec256") != 0 && strcmp(a->key_type, "rsa2048") != 0 &&
        strcmp(a->key_type, "rsa3072") != 0 && strcmp(a->key_type, "rsa4096") != 0) {
        snprintf(why, len, "acme.key_type is \"ec256\", \"rsa2048\", \"rsa3072\" or \"rsa4096\", not \"%s\"",
                 a->key_type);
        return -1;
    }
    if (!is_directory(a->directory)) {
        snprintf(why, len, "acme.directory is \"letsencrypt\", \"letsencrypt-staging\" or a URL, not \"%s\"",
                 a->directory);
        return -1;
    }
    for (size_t i = 0; i < a->nfallback; i++)
        if (!is_directory(a->fallback[i])) {
            snprintf(why, len, "acme.fallback: \"%s\" is not \"letsencrypt\", \"letsencrypt-staging\" or a URL",
                     a->fallback[i]);
            return -1;
        }
    if (!a->eab_kid[0] != !a->eab_hmac_key[0]) {
        snprintf(why, len, "acme.eab_kid and acme.eab_hmac_key go together");
        return -1;
    }
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (s->acme_directory && !is_directory(s->acme_directory)) {
            snprintf(why, len, "site \"%s\": acme_directory is \"letsencrypt\", \"letsencrypt-staging\" or a URL",
                     s->name);
            return -1;
        }
        if (s->acme_on_demand && strncmp(a->on_demand_ask, "http://", 7) != 0 &&
            strncmp(a->on_demand_ask, "https://", 8) != 0) {
            snprintf(why, len,
                     "site \"%s\" has acme_on_demand: acme.on_demand_ask must be the URL that says which hosts may "
                     "have a certificate (without it, anyone could have the suite order certificates for any name)",
                     s->name);
            return -1;
        }
        if (s->tls && s->acme_challenge && strcmp(s->acme_challenge, "dns-01") == 0 && a->dns_hook[0] != '/') {
            snprintf(why, len, "site \"%s\" answers DNS-01: acme.dns_hook must name a program by its absolute path",
                     s->name);
            return -1;
        }
    }
    return 0;
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
    .validate = validate,
};
