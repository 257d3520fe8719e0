/*
 * vc-fed: a site's releases (fed.h, docs/deploys.md).
 */
#include "fed.h"
#include "vc_log.h"
#include "vc_loop.h"
#include "vc_util.h"

#include <curl/curl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)cmd;
    fed_t *f = arg;
    size_t staging = 0, sites = 0;
    for (size_t i = 0; i < FED_STAGINGS; i++)
        staging += f->staging[i] != NULL;
    for (size_t i = 0; i < f->d.cfg->nsites; i++)
        sites += f->d.cfg->sites[i].deploy_to != NULL;
    vc_reply_ok(reply, "vc-fed is running: %zu deployed sites, %zu releases staging", sites, staging);
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "sites", "%zu", sites);
    vc_reply_field(reply, "staging", "%zu", staging);
    vc_reply_field(reply, "staged", "%llu", (unsigned long long)f->staged);
    vc_reply_field(reply, "switched", "%llu", (unsigned long long)f->switched);
    vc_reply_field(reply, "refused", "%llu", (unsigned long long)f->refused);
    /* A deploy reaches the other nodes once linked. */
    vc_reply_field(reply, "cluster", "%s", !cluster_on(f) ? "alone" : cluster_ready_now(f) ? "linked" : "linking");
}

static void on_reload(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)cmd;
    fed_t *f = arg;
    vc_daemon_reload(&f->d, NULL, NULL, reply);
    f->cfg = vc_config_section(f->d.cfg, &vc_fed_settings);
    fed_config_site(f);
}

static const vc_verb_t verbs[] = {
    {"status", "", "the deployed sites, releases staging, staged and switched", on_status},
    {"ping", "", "as status", on_status},
    {"reload", "", "load the stored configuration", on_reload},
    {"trust-add", "NAME PUBLIC_KEY", "trust a key to sign releases", trust_add_verb},
    {"trust-remove", "NAME", "stop trusting a key", trust_remove_verb},
    {"trust-list", "", "the keys this node trusts", trust_list_verb},
    {"trust-change", "SIGNATURE (+ the change)",
     "a change to the trusted keys signed by a trusted key: here, and on every node of the cluster", trust_change_verb},
    {"stage", "SITE SIGNATURE [BASE] (+ the manifest, or its delta against BASE's)",
     "check a signed release; answers the files it needs, with signatures for deltas", stage_verb},
    {"object", "SITE RELEASE HASH OFFSET (+ bytes)", "part of a file a staging needs", object_verb},
    {"delta", "SITE RELEASE HASH (+ a librsync delta)", "a file a staging needs, as a delta against its base",
     delta_verb},
    {"manifest", "SITE", "the librsync signature of the current release's manifest", manifest_verb},
    {"commit", "SITE RELEASE", "check every file against the manifest: the release is staged", commit_verb},
    {"switch", "SITE RELEASE", "make a staged release the site's current one", switch_verb},
    {"release-log", "SITE RELEASE TEXT", "append TEXT to a release's log (its hooks'); TEXT \"\": read it",
     release_log_verb},
    {"rollback", "SITE [RELEASE]", "back to the previous release (or the one named); the one left is bad",
     rollback_verb},
    {"releases", "SITE [here]",
     "the site's releases, oldest first, with the nodes that hold each (here: this node's alone)", releases_verb},
    {"spread", "SITE RELEASE [NODE]", "stage a release staged here on the site's other nodes (or the one named)",
     spread_verb},
    {"spreading", "SITE RELEASE", "how far each node is with a release this node hands on", spreading_verb},
};

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
}

static void tick(void *arg)
{
    fed_t *f = arg;
    if (f->reload_wanted) {
        /* Between verbs: no switch holds a site of the configuration
         * this replaces. */
        Vc__Reply *r = vc_malloc(sizeof(*r));
        vc__reply__init(r);
        f->reload_wanted = 0;
        on_reload(f, NULL, r);
        if (!r->ok)
            vc_log(VC_LOG_WARN, "main", "the configuration switched to was not loaded here: %s", r->message);
        vc__reply__free_unpacked(r, NULL);
    }
    stage_tick(arg);
    cluster_tick(arg);
    together_tick(arg);
}

int main(int argc, char **argv)
{
    fed_t f = {.magic = FED_MAGIC};
    vc_daemon_load(&f.d, "vc-fed", argc, argv);
    if (sodium_init() < 0)
        return 1;
    curl_global_init(CURL_GLOBAL_DEFAULT); /* health checks (health.c) */
    f.cfg = vc_config_section(f.d.cfg, &vc_fed_settings);
    fed_config_site(&f);
    char err[512] = "";
    f.store = vc_store_open(f.d.cfg->state_dir, (size_t)f.d.cfg->store.map_size, err, sizeof(err));
    if (f.store == NULL) {
        vc_log(VC_LOG_CRIT, "main", "%s", err);
        return 1;
    }
    vc_daemon_start(&f.d, on_command, &f);
    if (cluster_open(&f) < 0)
        return 1;
    vc_daemon_ready(&f.d);
    vc_watch_t watch[] = {{NULL, cluster_fd(&f), cluster_heard}};
    vc_loop_t loop = {.ctl = f.d.ctl,
                      .sigfd = f.d.sigfd,
                      .arg = &f,
                      .watch = watch,
                      .nwatch = cluster_on(&f) ? 1 : 0,
                      .tick = tick,
                      .tick_ms = 250};
    vc_loop_run(&loop);
    vc_log(VC_LOG_INFO, "main", "stopping");
    together_fini(&f);
    cluster_close(&f); /* after it, no spread is under way */
    stage_fini(&f);
    vc_store_destroy(&f.store);
    free(f.config_site.deploy_to);
    vc_daemon_fini(&f.d);
    curl_global_cleanup();
    return 0;
}
