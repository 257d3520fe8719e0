/*
 * A release this node staged, handed on to the site's other nodes (fed.h):
 * `vc deploy` asks for it once the release is staged here. Each other
 * node gets it as this node got it from the deployer (libcommon/vc_push.h),
 * with this node's staged copy as the source: the signed manifest, then
 * only the files that node lacks, as deltas against its own when smaller.
 * That node checks the signature against its own trusted keys and every
 * file against the manifest before it says staged.
 *
 * One thread a node (libcommon/vc_fanout.h), so that a slow node does not
 * hold up the others, nor this daemon's loop; the answer waits
 * (vc_ctl_defer) until every thread
 * is done. A node that came back and lacks the current release asks the
 * same way for itself (together.c).
 */
#include "fed.h"
#include "vc_events.h"
#include "vc_fanout.h"
#include "vc_log.h"
#include "vc_push.h"
#include "vc_util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct spread_job spread_job_t;

typedef struct spread_peer {
    spread_job_t *job;
    char *node;
    int ok, refused; /* refused: the node answered no; else, when not ok, it could not be reached */
    uint64_t sent, received;
    char why[1024];
    /* How far it is, for `spreading` (read by the loop while this
     * thread writes): files sent of files needed, bytes sent; finished 1
     * staged, 2 failed. */
    atomic_size_t files_done, files;
    atomic_uint_fast64_t bytes;
    atomic_int finished;
} spread_peer_t;

struct spread_job {
    spread_job_t *next; /* fed_t's jobs under way */
    fed_t *f;
    vc_ctl_later_t *later;
    char *site, *id, *root;
    int quorum; /* site.deploy_quorum; 0 when one node asks for itself */
    char sig_hex[2 * VC_RELEASE_SIGNATURE + 1];
    char *manifest;
    size_t mlen;
    vc_release_t rel;
    spread_peer_t *peers;
    size_t n;
    vc_fanout_t *fan;
};

static int push_call(void *arg, const char *verb, const char *const *args, size_t nargs, const void *payload,
                     size_t plen, Vc__Reply **r, char *why, size_t wlen)
{
    spread_peer_t *p = arg;
    return cluster_call(p->job->f, p->node, verb, args, nargs, payload, plen, r, why, wlen);
}

static void peer_progress(const vc_push_t *push, size_t done)
{
    spread_peer_t *p = push->progress_arg;
    atomic_store(&p->files, push->nneed);
    atomic_store(&p->files_done, done);
    atomic_store(&p->bytes, push->sent);
}

/* On the peer's thread. */
static void push(void *arg)
{
    spread_peer_t *p = arg;
    spread_job_t *j = p->job;
    vc_push_t push = {.rel = &j->rel,
                      .text = j->manifest,
                      .len = j->mlen,
                      .sig_hex = j->sig_hex,
                      .root = j->root,
                      .call = push_call,
                      .arg = p,
                      .progress = peer_progress,
                      .progress_arg = p};
    p->ok = vc_push_stage(&push) == 0;
    p->refused = !p->ok && push.refused;
    p->sent = push.sent;
    p->received = push.received;
    snprintf(p->why, sizeof(p->why), "%s", p->ok ? "" : push.why);
    atomic_store(&p->bytes, push.sent);
    atomic_store(&p->finished, p->ok ? 1 : 2);
}

/* As if it had run and failed. */
static void not_started(void *arg, int err)
{
    spread_peer_t *p = arg;
    snprintf(p->why, sizeof(p->why), "cannot start a thread: %s", strerror(err));
    atomic_store(&p->finished, 2);
}

/* On the thread of the last call to end. */
static void wake_loop(void *arg)
{
    cluster_put_item(arg, FED_ITEM_SPREAD, NULL); /* the loop finds which */
}

static void job_free(spread_job_t *j)
{
    vc_fanout_end(j->fan);
    for (size_t i = 0; i < j->n; i++)
        free(j->peers[i].node);
    free(j->peers);
    vc_release_free(&j->rel);
    free(j->manifest);
    free(j->site);
    free(j->id);
    free(j->root);
    free(j);
}

/* Remembers which nodes took a release, which refused it, and which
 * could not be reached (a switch waits for all of them to hold it, or
 * for site.deploy_quorum with none refusing). */
static void remember(fed_t *f, const spread_job_t *j)
{
    fed_spread_t *m = &f->spreads[f->next_spread++ % FED_SPREADS];
    cluster_peers_free(m->nodes, m->n);
    free(m->site);
    free(m->id);
    m->site = vc_strdup(j->site);
    m->id = vc_strdup(j->id);
    m->nodes = vc_calloc(j->n + 1, sizeof(char *));
    m->n = j->n;
    for (size_t i = 0; i < j->n; i++) /* "+NODE" took it, "-NODE" refused it, "?NODE" was not reached */
        m->nodes[i] = vc_asprintf("%c%s", j->peers[i].ok ? '+' : j->peers[i].refused ? '-' : '?', j->peers[i].node);
}

int spread_holds(const fed_t *f, const char *site, const char *id, const char *node)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    int known = -1;
    for (size_t i = 0; i < FED_SPREADS; i++) {
        const fed_spread_t *m = &f->spreads[i];
        if (m->site == NULL || strcmp(m->site, site) || strcmp(m->id, id))
            continue;
        for (size_t k = 0; k < m->n; k++)
            if (strcmp(m->nodes[k] + 1, node) == 0 && m->nodes[k][0] != '?' && (m->nodes[k][0] == '+' || known < 0))
                known = m->nodes[k][0] == '+';
    }
    return known;
}

static void answer(fed_t *f, spread_job_t *j)
{
    size_t staged = 0, refused = 0;
    Vc__Reply *reply = vc_malloc(sizeof(*reply));
    vc__reply__init(reply);
    for (size_t i = 0; i < j->n; i++) {
        spread_peer_t *p = &j->peers[i];
        staged += p->ok;
        refused += p->refused;
        Vc__Record *rec = vc_reply_record(reply);
        vc_record_field(rec, "node", "%s", p->node);
        vc_record_field(rec, "state", "%s", p->ok ? "staged" : p->refused ? "failed" : "unreachable");
        vc_record_field(rec, "sent", "%llu", (unsigned long long)p->sent);
        vc_record_field(rec, "received", "%llu", (unsigned long long)p->received);
        if (!p->ok) {
            vc_record_field(rec, "why", "%s", p->why);
            vc_log(VC_LOG_WARN, "spread", "release %s of site \"%s\" is not staged on node %s: %s", j->id, j->site,
                   p->node, p->why);
            together_refused(f, j->site, j->id, p->node, p->why); /* a node catching up */
        }
    }
    remember(f, j);
    if (staged == j->n)
        vc_reply_ok(reply, "release %s is staged on the %zu other nodes of site \"%s\"", j->id, j->n, j->site);
    else if (j->quorum > 0 && refused == 0 && staged + 1 >= (size_t)j->quorum)
        vc_reply_ok(reply,
                    "release %s is staged on %zu of the %zu other nodes of site \"%s\", which makes its quorum "
                    "of %d: the others catch up when they answer again",
                    j->id, staged, j->n, j->site, j->quorum);
    else
        vc_reply_fail(reply, "release %s is staged on %zu of the %zu other nodes of site \"%s\"", j->id, staged, j->n,
                      j->site);
    vc_log(VC_LOG_NOTICE, "spread", "%s", reply->message);
    vc_ctl_answer(f->d.ctl, j->later, reply);
    vc__reply__free_unpacked(reply, NULL);
    job_free(j);
}

void spread_done(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    for (spread_job_t **at = (spread_job_t **)&f->spreading; *at;) {
        spread_job_t *j = *at;
        if (!vc_fanout_over(j->fan)) {
            at = &j->next;
            continue;
        }
        *at = j->next;
        answer(f, j);
    }
}

/* The job for a release staged here, or NULL with why. */
static spread_job_t *job_for(fed_t *f, const vc_site_t *s, const char *id, Vc__Reply *reply)
{
    Vc__Release *r = releases_get(f, s->name, id);
    if (r == NULL) {
        vc_reply_fail(reply, "no release %s of site \"%s\" is staged here", id, s->name);
        return NULL;
    }
    spread_job_t *j = vc_calloc(1, sizeof(*j));
    char why[512];
    j->f = f;
    j->site = vc_strdup(s->name);
    j->id = vc_strdup(r->id);
    j->root = vc_asprintf("%s/releases/%s", s->deploy_to, r->id);
    j->quorum = (int)s->deploy_quorum;
    j->manifest = vc_malloc(r->manifest.len + 1);
    memcpy(j->manifest, r->manifest.data, r->manifest.len);
    j->manifest[r->manifest.len] = '\0';
    j->mlen = r->manifest.len;
    int ok = r->signature.len == VC_RELEASE_SIGNATURE &&
             vc_release_parse(j->manifest, j->mlen, &j->rel, why, sizeof(why)) == 0;
    if (ok)
        vc_release_hex(r->signature.data, r->signature.len, j->sig_hex);
    else
        vc_reply_fail(reply, "release %s's record here is damaged", r->id);
    vc__release__free_unpacked(r, NULL);
    if (!ok) {
        job_free(j);
        return NULL;
    }
    return j;
}

void spread_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    if (cmd->n_args < 2 || cmd->n_args > 3) {
        vc_reply_fail(reply, "usage: spread SITE RELEASE [NODE]");
        return;
    }
    const vc_site_t *s = fed_site(f, cmd->args[0], reply);
    if (s == NULL)
        return;
    if (!cluster_on(f)) {
        vc_reply_ok(reply, "this node is alone: there is no other node to stage on");
        return;
    }
    if (!cluster_ready_now(f)) {
        vc_reply_fail(reply, "this node's vc-fed is not linked to the cluster yet");
        return;
    }
    spread_job_t *j = job_for(f, s, cmd->args[1], reply);
    if (j == NULL)
        return;
    char **peers = NULL, why[512];
    size_t n = 0;
    if (cluster_peers(f, s->name, &peers, &n, why, sizeof(why)) < 0) {
        vc_reply_fail(reply, "%s", why);
        job_free(j);
        return;
    }
    if (cmd->n_args == 3) { /* a node that lacks it asks for itself */
        j->quorum = 0;
        cluster_peers_free(peers, n);
        peers = vc_calloc(2, sizeof(char *));
        peers[0] = vc_strdup(cmd->args[2]);
        n = vc_mesh_node_name_ok(peers[0]) ? 1 : 0;
    }
    if (n == 0) {
        vc_reply_ok(reply, "no other node serves site \"%s\"", s->name);
        cluster_peers_free(peers, 1);
        job_free(j);
        return;
    }
    j->peers = vc_calloc(n, sizeof(*j->peers));
    j->n = n;
    for (size_t i = 0; i < n; i++) {
        j->peers[i].job = j;
        j->peers[i].node = peers[i];
    }
    free(peers);
    j->later = vc_ctl_defer(f->d.ctl);
    j->next = f->spreading;
    f->spreading = j;
    j->fan = vc_fanout_start(j->peers, n, sizeof(*j->peers), push, not_started, wake_loop, f);
}

/* spreading SITE RELEASE: how far each node is (vc deploy's progress
 * bars); no record when none is under way. */
void spreading_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    if (cmd->n_args != 2) {
        vc_reply_fail(reply, "usage: spreading SITE RELEASE");
        return;
    }
    static const char *const states[] = {"sending", "staged", "failed"};
    vc_reply_ok(reply, "release %s of site \"%s\"", cmd->args[1], cmd->args[0]);
    for (spread_job_t *j = f->spreading; j; j = j->next) {
        if (strcmp(j->site, cmd->args[0]) || strcmp(j->id, cmd->args[1]))
            continue;
        for (size_t i = 0; i < j->n; i++) {
            spread_peer_t *p = &j->peers[i];
            Vc__Record *rec = vc_reply_record(reply);
            vc_record_field(rec, "node", "%s", p->node);
            vc_record_field(rec, "state", "%s", states[atomic_load(&p->finished)]);
            vc_record_field(rec, "files_done", "%zu", atomic_load(&p->files_done));
            vc_record_field(rec, "files", "%zu", atomic_load(&p->files));
            vc_record_field(rec, "sent", "%llu", (unsigned long long)atomic_load(&p->bytes));
        }
        return;
    }
}

/* After the link is closed (every call under way fails at once). */
void spread_fini(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    for (spread_job_t *j = f->spreading, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    f->spreading = NULL;
    for (size_t i = 0; i < FED_SPREADS; i++) {
        cluster_peers_free(f->spreads[i].nodes, f->spreads[i].n);
        free(f->spreads[i].site);
        free(f->spreads[i].id);
        memset(&f->spreads[i], 0, sizeof(f->spreads[i]));
    }
}
