/*
 * Certificates: vc-acme's list (hosts, issuer, expiry, next renewal, the
 * last error), and an admin's issue, renew and revoke, each the verb
 * `vc cert` calls. An order runs in vc-acme after the answer; the page
 * follows it in the list and in the acme.* events.
 */
#include "forms.h"
#include "panel.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>

static void list(preq_t *r)
{
    api_listing(r, "ctl-vc-acme", "certs", "certs");
}

/* The body's site (a site name or one of its hosts, as vc cert takes). */
static const char *body_site(preq_t *r)
{
    const char *site = form_str(r->body, "site", 253);
    if (site == NULL || !form_name_ok(site)) {
        http_error(r, 400, "{\"site\": a site's name or host}");
        return NULL;
    }
    return site;
}

/* {"site", "mode": "due"|"force"|"issue"}: issue only orders a site with
 * no certificate yet, force orders now, due only once it is due. */
static void renew(preq_t *r)
{
    const char *site = body_site(r), *mode = form_str(r->body, "mode", 8);
    if (site == NULL)
        return;
    if (mode == NULL || (strcmp(mode, "due") && strcmp(mode, "force") && strcmp(mode, "issue"))) {
        http_error(r, 400, "a renewal's mode is \"due\", \"force\" or \"issue\"");
        return;
    }
    const char *args[] = {site, mode};
    char target[300];
    snprintf(target, sizeof(target), "%s %s", site, mode);
    api_change(r, "ctl-vc-acme", "renew", args, 2, API_CALL_MS, strcmp(mode, "issue") ? "cert.renew" : "cert.issue",
               target);
}

/* {"site", "reason": a CRL reason code (vc-acme checks it)}: revoked, and
 * a new certificate ordered at once. */
static void revoke_cert(preq_t *r)
{
    const char *site = body_site(r);
    if (site == NULL)
        return;
    json_t *reason = json_object_get(r->body, "reason");
    if (reason && (!json_is_integer(reason) || json_integer_value(reason) < 0 || json_integer_value(reason) > 10)) {
        http_error(r, 400, "a revocation's reason is a CRL reason code, 0 to 10");
        return;
    }
    char code[8];
    snprintf(code, sizeof(code), "%d", reason ? (int)json_integer_value(reason) : 0);
    const char *args[] = {site, code};
    api_change(r, "ctl-vc-acme", "revoke", args, reason ? 2 : 1, API_CALL_MS, "cert.revoke", site);
}

/* clang-format off */
const route_t api_certs_routes[] = {
    {"GET", "/api/certs", ACCESS_VIEWER, list},
    {"POST", "/api/certs/renew", ACCESS_ADMIN, renew},
    {"POST", "/api/certs/revoke", ACCESS_ADMIN, revoke_cert},
};
/* clang-format on */
const size_t api_certs_nroutes = VC_ARRAY_SIZE(api_certs_routes);
