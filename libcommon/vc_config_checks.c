/*
 * Checks across settings that a user could get wrong without any one
 * value being malformed: they refuse (vc_config_fail) or warn
 * (vc_config_warn) with the file and line of the setting to change.
 */
#include "vc_config_internal.h"

#include <string.h>

/* Whether a tcp:// endpoint's host is a loopback address. */
static int tcp_on_loopback(const char *uri)
{
    const char *h = uri + 6;
    return strncmp(h, "127.", 4) == 0 || strncmp(h, "localhost:", 10) == 0 || strncmp(h, "[::1]:", 6) == 0;
}

/* A request link over TCP takes requests for PHP from whoever connects,
 * unless the link key (vc_link_auth.h) is asked for: off loopback that is
 * an open door, on loopback every local user's. */
int vc_config_check_link_keys(struct ctx *c, vc_config_t *cfg)
{
    if (cfg->link_key && *cfg->link_key)
        return 0;
    for (size_t i = 0; i < cfg->nendpoints; i++) {
        const vc_endpoint_override_t *e = &cfg->endpoints[i];
        if (strncmp(e->name, "php", 3) != 0 || strncmp(e->uri, "tcp://", 6) != 0)
            continue;
        struct ctx at = {c->err, c->errlen, e->origin};
        if (!tcp_on_loopback(e->uri))
            return vc_config_fail(&at, 0,
                                  "endpoints.%s is \"%s\" without link_key: any host that reaches the port could "
                                  "send requests to PHP; set link_key (openssl rand -hex 32) for the fronts and the "
                                  "pool",
                                  e->name, e->uri);
        vc_config_warn(&at, cfg, 0,
                       "endpoints.%s is \"%s\" without link_key: every local user can send requests to PHP; set "
                       "link_key (openssl rand -hex 32), or use the default Unix socket",
                       e->name, e->uri);
    }
    return 0;
}
