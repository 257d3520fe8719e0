/*
 * The sites vc-fed deploys: those with deploy_to, and the configuration
 * releases as a site of their own (VC_CONFIG_RELEASE_SITE).
 */
#include "fed.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

const vc_site_t *fed_site(fed_t *f, const char *name, Vc__Reply *reply)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    const vc_config_t *cfg = f->d.cfg;
    if (strcmp(name, VC_CONFIG_RELEASE_SITE) == 0) {
        if (f->config_site.deploy_to)
            return &f->config_site;
        vc_reply_fail(reply,
                      "this node follows no configuration releases: config_releases is not set (docs/deploys.md)");
        return NULL;
    }
    for (size_t i = 0; i < cfg->nsites; i++)
        if (strcmp(cfg->sites[i].name, name) == 0) {
            if (cfg->sites[i].deploy_to)
                return &cfg->sites[i];
            vc_reply_fail(reply, "site \"%s\" has no deploy_to: it is not deployed with vc deploy (docs/deploys.md)",
                          name);
            return NULL;
        }
    vc_reply_fail(reply, "no site \"%s\" is enabled", name);
    return NULL;
}

const vc_site_t *fed_site_arg(fed_t *f, const Vc__Command *cmd, const char *usage, Vc__Reply *reply)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    if (cmd->n_args != 1) {
        vc_reply_fail(reply, "usage: %s", usage);
        return NULL;
    }
    return fed_site(f, cmd->args[0], reply);
}

void fed_config_site(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    free(f->config_site.deploy_to);
    memset(&f->config_site, 0, sizeof(f->config_site));
    f->config_site.name = VC_CONFIG_RELEASE_SITE;
    f->config_site.keep_releases = 5;
    if (f->d.cfg->config_releases)
        f->config_site.deploy_to = vc_strdup(f->d.cfg->config_releases);
}
