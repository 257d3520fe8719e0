/*
 * Cluster and deploys: vc-mesh's roster (each node, its state, when last
 * heard, its load and version) and vc-fed's releases of each deployed
 * site (with the nodes that hold each), and an admin's rollback, the verb
 * `vc rollback` calls. On a node that is not in a cluster, vc-mesh and
 * vc-fed do not run and the page says so.
 */
#include "forms.h"
#include "panel.h"
#include "vc_config.h"
#include "vc_ctl.h"
#include "vc_release.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>

static void nodes(preq_t *r)
{
    api_listing(r, "ctl-vc-mesh", "nodes", "nodes");
}

/* Each site of the configuration that vc-fed has releases of. */
static void releases(preq_t *r)
{
    const vc_config_t *cfg = r->p->d.cfg;
    json_t *sites = json_array();
    int running = 1;
    for (size_t i = 0; i < cfg->nsites && running; i++) {
        const char *args[] = {cfg->sites[i].name};
        Vc__Reply *rep = NULL;
        if (panel_call(r->p, "ctl-vc-fed", "releases", args, 1, API_CALL_MS, &rep) < 0) {
            running = 0;
            break;
        }
        if (rep->ok && rep->n_records)
            json_array_append_new(sites, json_pack("{s:s,s:s,s:o}", "site", cfg->sites[i].name, "message", rep->message,
                                                   "releases", api_records(rep)));
        vc__reply__free_unpacked(rep, NULL);
    }
    http_json(r, 200, json_pack("{s:b,s:o}", "running", running, "sites", sites));
}

/* GET /api/cluster/releases/log?site=SITE&release=ID: what its hooks
 * printed (build, before_switch, after_switch) as this node keeps it. */
static void release_log(preq_t *r)
{
    char site[64], release[VC_RELEASE_ID_MAX + 1];
    size_t q = strlen(r->query);
    if (form_query(r->query, q, "site", site, sizeof(site)) <= 0 || !form_name_ok(site) ||
        form_query(r->query, q, "release", release, sizeof(release)) <= 0 || !vc_release_id_ok(release)) {
        http_error(r, 400, "?site=SITE&release=RELEASE");
        return;
    }
    const char *args[] = {site, release, ""}; /* "": read, not append */
    Vc__Reply *rep = api_call(r, "ctl-vc-fed", "release-log", args, 3, API_CALL_MS);
    if (rep == NULL)
        return;
    if (rep->ok)
        http_json(r, 200, json_pack("{s:s,s:s,s:s}", "site", site, "release", release, "log", rep->message));
    else
        http_error(r, 404, "%s", rep->message);
    vc__reply__free_unpacked(rep, NULL);
}

/* {"site", "release": optional}: back to the previous release (or the one
 * named) on every node; the one left is marked bad. */
static void rollback(preq_t *r)
{
    const char *site = form_str(r->body, "site", 63), *release = form_str(r->body, "release", VC_RELEASE_ID_MAX);
    if (site == NULL || !form_name_ok(site) || (release && !vc_release_id_ok(release))) {
        http_error(r, 400, "{\"site\": SITE, \"release\": RELEASE (optional)}");
        return;
    }
    const char *args[] = {site, release};
    char target[140];
    snprintf(target, sizeof(target), "%s%s%s", site, release ? " to " : "", release ? release : "");
    api_change(r, "ctl-vc-fed", "rollback", args, release ? 2 : 1, API_LONG_CALL_MS, "deploy.rollback", target);
}

/* clang-format off */
const route_t api_cluster_routes[] = {
    {"GET", "/api/cluster/nodes", ACCESS_VIEWER, nodes},
    {"GET", "/api/cluster/releases", ACCESS_VIEWER, releases},
    {"GET", "/api/cluster/releases/log", ACCESS_VIEWER, release_log},
    {"POST", "/api/cluster/rollback", ACCESS_ADMIN, rollback},
};
/* clang-format on */
const size_t api_cluster_nroutes = VC_ARRAY_SIZE(api_cluster_routes);
