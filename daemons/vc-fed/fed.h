/*
 * vc-fed: releases of a site (docs/deploys.md). `vc deploy` hands it a
 * signed manifest (libcommon/vc_release.h) and the files it lacks; it
 * checks the signature against the keys it trusts (trust.c), stages the
 * release beside the others (stage.c), and switches a site's `current`
 * link to it, or back (switch.c). The releases and the keys are in LMDB
 * (releases.c); this daemon is their only writer.
 *
 * One machine alone needs no NATS: the cluster's deploys (every node
 * staged, then one switch) build on the same verbs.
 */
#ifndef VC_FED_H
#define VC_FED_H

#include "fed.pb-c.h"
#include "vc_daemon.h"
#include "vc_fed_settings.h"
#include "vc_mesh.h"
#include "vc_release.h"
#include "vc_store.h"

#include <nats/nats.h>
#include <stdint.h>

/* A file the node had in no release: its bytes come from the deployer. */
typedef struct fed_need {
    unsigned char hash[VC_RELEASE_HASH];
    uint64_t size, received;
    int done;
    char *base; /* the file at the same path in the current release: a delta may be sent against it */
} fed_need_t;

/* A release being staged. */
typedef struct fed_staging {
#define STAGING_MAGIC 0x73746167u /* "stag": made by stage.c, handed to commit.c and deltas.c */
    unsigned magic;
    char *site, *id, *key;
    vc_release_t rel;
    char *manifest; /* as signed */
    size_t mlen;
    unsigned char sig[VC_RELEASE_SIGNATURE];
    char *tree;    /* DEPLOY_TO/releases/.staging-ID: becomes DEPLOY_TO/releases/ID */
    char *objects; /* DEPLOY_TO/releases/.objects-ID: files as they arrive */
    fed_need_t *need;
    size_t nneed;
    uint64_t bytes_received, files_linked;
    int64_t touched_ms;
} fed_staging_t;

#define FED_STAGINGS 8

/* In a cluster (cluster.c): the bucket of release pointers and what each
 * node made of them, and the subject a node's vc-fed is called on. */
#define FED_BUCKET "vc_fed"
#define FED_CALL_SUBJECT "vc.fed.call."
enum { FED_ITEM_BUCKET, FED_ITEM_SPREAD, FED_ITEM_HOLDERS }; /* what the cluster's inbox holds */

/* A release handed on to other nodes (spread.c): which took it. */
typedef struct fed_spread {
    char *site, *id;
    char **nodes; /* "+NODE" took it, "-NODE" refused it */
    size_t n;
} fed_spread_t;
#define FED_SPREADS 16

/* The pointer last heard for a site (together.c). */
typedef struct fed_pointer {
    char *site;
    char id[VC_RELEASE_ID_MAX + 1];
    char origin[64];
    int back;
    uint64_t rev;
} fed_pointer_t;

/* A switch this node moved the pointer for, waiting for every node. */
typedef struct fed_wait {
    vc_ctl_later_t *later; /* NULL: the slot is free */
    char *site, *id, *prev;
    int back;
    uint64_t rev, deadline_ms;
    char **nodes, **said; /* said[i]: "ok", "failed", "missing", or NULL */
    size_t n;
} fed_wait_t;
#define FED_WAITS 8

typedef struct fed_cluster fed_cluster_t;

typedef struct fed {
#define FED_MAGIC 0x66656430u /* "fed0": checked by every module vc-fed hands it to */
    unsigned magic;
    vc_daemon_t d;
    const fed_settings_t *cfg;
    vc_store_t *store;
    fed_staging_t *staging[FED_STAGINGS];
    uint64_t staged, switched, refused;
    fed_cluster_t *cl; /* NULL: one machine alone */
    fed_spread_t spreads[FED_SPREADS];
    size_t next_spread;
    void *spreading; /* spread.c's jobs under way */
    void *holding;   /* holders.c's */
    fed_pointer_t *pointers;
    size_t npointers;
    fed_wait_t waits[FED_WAITS];
    /* The configuration releases this node follows (config_releases), as
     * a site VC_CONFIG_RELEASE_SITE of its own; config_site.deploy_to is
     * NULL when it follows none. */
    vc_site_t config_site;
    int reload_wanted; /* a configuration switched: take the stored version at the next tick */
} fed_t;

/* sites.c: the site named, if it is deployed (has deploy_to), or the configuration
 * releases if they are followed here; else NULL, with a reason in the
 * reply. */
const vc_site_t *fed_site(fed_t *f, const char *name, Vc__Reply *reply);
/* The same for a verb whose one argument is the site; usage if not. */
const vc_site_t *fed_site_arg(fed_t *f, const Vc__Command *cmd, const char *usage, Vc__Reply *reply);

/* trust.c: the keys this node trusts. */
void trust_add_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void trust_remove_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void trust_list_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void trust_change_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
/* A signed change another node put in the bucket. */
void trust_heard(fed_t *f, const void *data, size_t len);
struct vc_trust_change;
const char *trust_share(fed_t *f, const char *sig_hex, const char *text, size_t len, const struct vc_trust_change *c);
/* The name of the trusted key that signed text, or -1. */
int trust_signer(fed_t *f, const char *text, size_t len, const unsigned char sig[VC_RELEASE_SIGNATURE], char *name,
                 size_t nlen);

/* releases.c: the "releases" database. */
int releases_put(fed_t *f, const Vc__Release *r);
Vc__Release *releases_get(fed_t *f, const char *site, const char *id); /* free: vc__release__free_unpacked */
/* Every release of site, in the order they were staged; *out freed with
 * releases_free. */
size_t releases_of(fed_t *f, const char *site, Vc__Release ***out);
void releases_free(Vc__Release **r, size_t n);
int releases_del(fed_t *f, const char *site, const char *id);
void releases_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
/* This node's releases of s, oldest first, into the reply. */
void releases_list(fed_t *f, const vc_site_t *s, Vc__Reply *reply);

/* holders.c: the releases listed with the nodes that hold each (a
 * deferred answer in a cluster). */
void holders_ask(fed_t *f, const vc_site_t *s, Vc__Reply *reply);
void holders_done(fed_t *f);
void holders_fini(fed_t *f);

/* hooks.c: site s's before_switch or after_switch commands (which) run
 * in release r through its pool, their output appended to r's log (and
 * r stored): 0, or -1 with why (the first failure stops the rest). */
int hooks_run(fed_t *f, const vc_site_t *s, Vc__Release *r, const char *which, char *why, size_t wlen);
/* release-log SITE RELEASE TEXT: appends TEXT to its log ("" reads it). */
void release_log_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);

/* stage.c */
void stage_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
/* commit.c */
void object_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void delta_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
/* deltas.c: the signatures a deployer makes deltas against. */
void manifest_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
/* The manifest a stage sends as a delta against release base's: the whole
 * text (free it), or NULL with why. */
char *deltas_manifest(fed_t *f, const char *site, const char *base, const void *delta, size_t len, size_t *out_len,
                      char *why, size_t wlen);
/* Signatures of the needed files that have a base, in the reply's payload
 * (each need record's sig_off and sig_len). */
void deltas_signatures(fed_staging_t *s, Vc__Reply *reply);
void commit_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void stage_tick(fed_t *f);
fed_staging_t **stage_find(fed_t *f, const char *site, const char *id);
void stage_free(fed_staging_t *s, int remove_files);
/* Refuses with why: logged, counted, and a fed.release.failed event. */
void stage_fail(fed_t *f, Vc__Reply *reply, const char *site, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Whether a release path is a shared one or inside one (site.shared). */
int fed_is_shared(const vc_site_t *s, const char *path);
void stage_fini(fed_t *f);
/* Removes a directory tree (a staging's, a pruned release's). */
int fed_remove_tree(const char *path);

/* sites.c: the configuration releases as a site, after each reload. */
void fed_config_site(fed_t *f);
static inline int fed_is_config(const vc_site_t *s)
{
    return s->name[0] == '@';
}

/* switch.c */
void switch_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
/* This node to release r (back: a rollback, the release left is marked
 * bad; else the health check runs, and a failure comes back by itself).
 * 0, or -1; either way the reply says what happened. */
int switch_apply(fed_t *f, const vc_site_t *s, Vc__Release *r, int back, Vc__Reply *reply);
void rollback_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
/* Release r is current already, but its health check may not have run to
 * its end (vc-fed was killed in it): it runs now. 0; or -1 with the
 * release gone back to in back_to ("" none), as switch_apply does. */
int switch_check_again(fed_t *f, const vc_site_t *s, Vc__Release *r, char *back_to, size_t blen, Vc__Reply *reply);
/* health.c: site.health_check answers 200 through this node's front
 * within fed.health_timeout: 0, or -1 with what it answered. */
int health_check(fed_t *f, const vc_site_t *s, char *why, size_t wlen);

/* cluster.c: this node's link to the others (NULL alone). */
int cluster_open(fed_t *f);
void cluster_close(fed_t *f);
void cluster_tick(fed_t *f);
int cluster_on(const fed_t *f);
int cluster_ready_now(const fed_t *f);
const char *cluster_node(const fed_t *f);
int cluster_fd(const fed_t *f);
void cluster_heard(void *arg); /* the loop's: what the inbox holds */
void cluster_put_item(fed_t *f, int kind, void *data);
/* One command to another node's vc-fed (any thread): 0 and *r, or -1. */
int cluster_call(fed_t *f, const char *node, const char *verb, const char *const *args, size_t nargs,
                 const void *payload, size_t plen, Vc__Reply **r, char *why, size_t wlen);
/* The same, not waited for. */
void cluster_ask(fed_t *f, const char *node, const char *verb, const char *const *args, size_t nargs);
/* The other nodes whose roster entry lists site. */
int cluster_peers(fed_t *f, const char *site, char ***out, size_t *n, char *why, size_t wlen);
void cluster_peers_free(char **peers, size_t n);
kvStore *cluster_bucket(fed_t *f); /* NULL until set up */

/* spread.c */
void spread_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void spreading_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply);
void spread_done(fed_t *f);
/* Whether a node took the release when this node handed it on: 1, 0 (it
 * refused), or -1 (not reached, or not handed on from here since vc-fed
 * started). */
int spread_holds(const fed_t *f, const char *site, const char *id, const char *node);
void spread_fini(fed_t *f);

/* together.c */
void together_switch(fed_t *f, const vc_site_t *s, const char *id, int back, Vc__Reply *reply);
void together_heard(fed_t *f, natsMsg *msg);
void together_committed(fed_t *f, const vc_site_t *s, const char *id);
/* A node that lacked the release could not stage it: the switch fails. */
void together_refused(fed_t *f, const char *site, const char *id, const char *node, const char *why);
void together_tick(fed_t *f);
void together_fini(fed_t *f);

/* The release a site's current link names ("" if none). */
void fed_current(const vc_site_t *s, char *id, size_t len);

#endif
