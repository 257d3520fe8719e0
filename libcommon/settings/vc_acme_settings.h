/* vc-acme's own settings ("acme.*"), declared in vc_acme_settings.c (vc_settings.h). */
#ifndef VC_ACME_SETTINGS_H
#define VC_ACME_SETTINGS_H

#include "vc_config.h"

typedef struct acme_settings {
    char *directory; /* the CA's directory URL, or "letsencrypt", "letsencrypt-staging" */
    char **fallback; /* CAs tried in turn when the one before fails */
    size_t nfallback;
    char *email;                /* the account's contact; "": none */
    char *ca_bundle;            /* PEM of the CAs trusted for the CA's own HTTPS; "": the system's */
    char *key_type;             /* "ec256" or "rsa2048", "rsa3072", "rsa4096": the certificates' keys */
    char *profile;              /* a profile to ask the CA for ("shortlived"); "": none */
    char *dns_hook;             /* DNS-01: the program that sets and clears TXT records; "": none */
    int64_t dns_wait_ms;        /* DNS-01: how long a new record takes to reach the CA's resolvers */
    int64_t ca_timeout_ms;      /* one request to a CA, at most (a CA that hangs is a failed order) */
    char *eab_kid;              /* External Account Binding: the key id the CA gave; "": none */
    char *eab_hmac_key;         /* its MAC key, base64url (a secret: never logged) */
    char *on_demand_ask;        /* on-demand TLS: the operator's URL that says yes (200) to a host; "": none */
    int64_t on_demand_per_hour; /* on-demand TLS: new certificates an hour at most */
} acme_settings_t;

extern const vc_section_t vc_acme_settings;

static inline const acme_settings_t *acme_settings(const vc_config_t *cfg)
{
    return (const acme_settings_t *)vc_config_section(cfg, &vc_acme_settings);
}

#endif
