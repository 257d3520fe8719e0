/*
 * A cluster's switch (fed.h, docs/deploys.md): every node of a site moves
 * to a release together, because each follows one pointer.
 *
 * The node `vc deploy` (or `vc rollback`) asked checks that every other
 * node of the site holds the release (spread.c), then moves the site's
 * pointer in the "vc_fed" bucket, "ptr.HEX" = "RELEASE MODE ORIGIN", by
 * compare-and-set: of two deploys at once, one wins and the other is told.
 * Every node watches the bucket; each switches its own `current` link as
 * one node alone does (switch.c: a new PHP generation, the health check)
 * and puts what it made of it under "at.HEX.NODE" = "REVISION RELEASE
 * ok|failed|missing [WHY]". The origin answers once every node said ok.
 * A failure anywhere, or a node silent past the bound, moves the pointer
 * back (MODE "back"): every node goes back and marks the release bad.
 *
 * A node that lacks the release the pointer names (it was away, or came
 * new) asks the origin to stage it there (spread SITE RELEASE NODE), and
 * switches once it is staged; until then it keeps what it had.
 */
#include "bucket_wire.h"
#include "fed.h"
#include "vc_log.h"
#include "vc_nats.h"
#include "vc_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLACK_MS 5000 /* past the switch's and the health check's bounds */

static void report(fed_t *f, const vc_site_t *s, uint64_t rev, const char *id, const char *what, const char *why)
{
    char key[FED_KEY_MAX], value[FED_VALUE_MAX];
    fed_report_value_t v = {.rev = rev};
    snprintf(v.id, sizeof(v.id), "%s", id);
    snprintf(v.word, sizeof(v.word), "%s", what);
    snprintf(v.why, sizeof(v.why), "%s", why ? why : "");
    fed_report_write(value, sizeof(value), &v);
    kvStore *kv = cluster_bucket(f);
    natsStatus st = NATS_NOT_YET_CONNECTED;
    if (kv && fed_key_write(key, sizeof(key), s->name, cluster_node(f)) == 0)
        st = kvStore_PutString(NULL, kv, key, value);
    if (st != NATS_OK)
        vc_log(VC_LOG_WARN, "together", "cannot say that site \"%s\" is %s on this node: %s", s->name, what,
               natsStatus_GetText(st));
}

/* The pointer last heard for a site. */
static fed_pointer_t *pointer_of(fed_t *f, const char *site, int make)
{
    for (size_t i = 0; i < f->npointers; i++)
        if (strcmp(f->pointers[i].site, site) == 0)
            return &f->pointers[i];
    if (!make)
        return NULL;
    f->pointers = vc_realloc(f->pointers, (f->npointers + 1) * sizeof(*f->pointers));
    fed_pointer_t *p = &f->pointers[f->npointers++];
    *p = (fed_pointer_t){.site = vc_strdup(site)};
    return p;
}

/* The release failed here on a pointer moved forward: this node moves it
 * back to the release it runs again (was), by compare-and-set on the
 * revision it followed. So the cluster goes back even when the node that
 * moved the pointer is gone (its vc-fed killed while it waited); if that
 * node lives, it moves it back too, and whichever is second finds it done
 * (move). Nothing moves if the pointer moved on since. */
static void take_back(fed_t *f, const vc_site_t *s, const fed_pointer_t *p, const char *was)
{
    kvStore *kv = cluster_bucket(f);
    char key[FED_KEY_MAX], value[FED_VALUE_MAX];
    fed_pointer_value_t v = {.back = 1};
    if (kv == NULL || was[0] == '\0' || fed_key_write(key, sizeof(key), s->name, NULL) < 0)
        return;
    snprintf(v.id, sizeof(v.id), "%s", was);
    snprintf(v.origin, sizeof(v.origin), "%s", cluster_node(f));
    fed_pointer_write(value, sizeof(value), &v);
    uint64_t rev = 0;
    if (kvStore_Update(&rev, kv, key, value, (int)strlen(value), p->rev) == NATS_OK)
        vc_log(VC_LOG_WARN, "together", "site \"%s\": release %s failed on this node, so every node goes back to %s",
               s->name, p->id, was);
}

/* Whether this node said ok to this revision of the pointer already. */
static int said_ok(fed_t *f, const vc_site_t *s, const fed_pointer_t *p)
{
    kvStore *kv = cluster_bucket(f);
    char key[FED_KEY_MAX];
    kvEntry *e = NULL;
    fed_report_value_t v;
    if (kv == NULL || fed_key_write(key, sizeof(key), s->name, cluster_node(f)) < 0 ||
        kvStore_Get(&e, kv, key) != NATS_OK)
        return 0;
    int ok = fed_report_read(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), &v) == 0 && v.rev == p->rev &&
             strcmp(v.word, "ok") == 0;
    kvEntry_Destroy(e);
    return ok;
}

/* The link names the pointer's release but this node never said ok to it:
 * its vc-fed was killed between the rename and the end of the health
 * check. The check runs now, and a failure goes back as it would have. */
static void check_again(fed_t *f, const vc_site_t *s, const fed_pointer_t *p)
{
    Vc__Release *r = releases_get(f, s->name, p->id);
    if (r == NULL) {
        report(f, s, p->rev, p->id, "ok", NULL);
        return;
    }
    vc_log(VC_LOG_NOTICE, "together", "site \"%s\" runs release %s, never checked here: its health check runs now",
           s->name, p->id);
    Vc__Reply *reply = vc_malloc(sizeof(*reply));
    vc__reply__init(reply);
    char back_to[VC_RELEASE_ID_MAX + 1];
    int rc = switch_check_again(f, s, r, back_to, sizeof(back_to), reply);
    report(f, s, p->rev, p->id, rc == 0 ? "ok" : "failed", rc == 0 ? NULL : reply->message);
    if (rc != 0)
        take_back(f, s, p, back_to);
    vc__reply__free_unpacked(reply, NULL);
    vc__release__free_unpacked(r, NULL);
}

/* This node follows the pointer. */
static void follow(fed_t *f, const vc_site_t *s, const fed_pointer_t *p)
{
    char was[VC_RELEASE_ID_MAX + 1];
    fed_current(s, was, sizeof(was));
    if (strcmp(was, p->id) == 0) {
        if (!p->back && s->health_check && !said_ok(f, s, p))
            check_again(f, s, p);
        else
            report(f, s, p->rev, p->id, "ok", NULL);
        return;
    }
    Vc__Release *r = releases_get(f, s->name, p->id);
    if (r == NULL) {
        report(f, s, p->rev, p->id, "missing", NULL);
        /* Asked, not waited for: the origin stages it here, and commit
         * brings this node back (together_committed). */
        const char *args[] = {s->name, p->id, cluster_node(f)};
        vc_log(VC_LOG_NOTICE, "together", "site \"%s\" is at release %s, which this node lacks: asking node %s for it",
               s->name, p->id, p->origin);
        cluster_ask(f, p->origin, "spread", args, 3);
        return;
    }
    if (r->bad && !p->back) {
        /* It failed here before (its health check, say): not again, on a
         * pointer that was never moved back (its origin went away). */
        report(f, s, p->rev, p->id, "failed", "the release is marked bad on this node");
        vc__release__free_unpacked(r, NULL);
        return;
    }
    Vc__Reply *reply = vc_malloc(sizeof(*reply));
    vc__reply__init(reply);
    int rc = switch_apply(f, s, r, p->back, reply);
    report(f, s, p->rev, p->id, rc == 0 ? "ok" : "failed", rc == 0 ? NULL : reply->message);
    if (rc != 0 && !p->back)
        take_back(f, s, p, was);
    vc__reply__free_unpacked(reply, NULL);
    vc__release__free_unpacked(r, NULL);
}

void together_committed(fed_t *f, const vc_site_t *s, const char *id)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    fed_pointer_t *p = cluster_on(f) ? pointer_of(f, s->name, 0) : NULL;
    if (p && strcmp(p->id, id) == 0)
        follow(f, s, p);
}

static fed_wait_t *wait_for(fed_t *f, const char *site, uint64_t rev)
{
    for (size_t i = 0; i < FED_WAITS; i++)
        if (f->waits[i].later && f->waits[i].rev == rev && strcmp(f->waits[i].site, site) == 0)
            return &f->waits[i];
    return NULL;
}

static void wait_free(fed_wait_t *w)
{
    cluster_peers_free(w->nodes, w->n);
    free(w->said);
    free(w->site);
    free(w->id);
    free(w->prev);
    memset(w, 0, sizeof(*w));
}

/* The pointer moved by compare-and-set: its new revision, or 0 with why.
 * giving_up: back to id, which a node that failed may have done already. */
static uint64_t move(fed_t *f, const char *site, const char *id, int back, int giving_up, char *prev, size_t plen,
                     char *why, size_t wlen)
{
    kvStore *kv = cluster_bucket(f);
    char key[FED_KEY_MAX], value[FED_VALUE_MAX];
    fed_pointer_value_t v = {.back = back}, was;
    snprintf(v.id, sizeof(v.id), "%s", id);
    snprintf(v.origin, sizeof(v.origin), "%s", cluster_node(f));
    fed_pointer_write(value, sizeof(value), &v);
    prev[0] = '\0';
    if (fed_key_write(key, sizeof(key), site, NULL) < 0) {
        snprintf(why, wlen, "the site's name is too long for the cluster's bucket");
        return 0;
    }
    kvEntry *e = NULL;
    natsStatus st = kvStore_Get(&e, kv, key);
    uint64_t rev = 0;
    if (st == NATS_OK) {
        int read = fed_pointer_read(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), &was) == 0;
        if (read)
            snprintf(prev, plen, "%s", was.id);
        if (read && giving_up && was.back && strcmp(was.id, id) == 0)
            rev = kvEntry_Revision(e); /* moved back already, by the node that failed (take_back) */
        else
            st = kvStore_Update(&rev, kv, key, value, (int)strlen(value), kvEntry_Revision(e));
        kvEntry_Destroy(e);
    } else if (st == NATS_NOT_FOUND) {
        st = kvStore_Create(&rev, kv, key, value, (int)strlen(value));
    }
    if (st != NATS_OK)
        snprintf(why, wlen,
                 "the site's release pointer did not move (%s): another switch went first, or the "
                 "cluster's storage does not answer",
                 natsStatus_GetText(st));
    return st == NATS_OK ? rev : 0;
}

static void answer(fed_t *f, fed_wait_t *w, int ok, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void answer(fed_t *f, fed_wait_t *w, int ok, const char *fmt, ...)
{
    Vc__Reply *reply = vc_malloc(sizeof(*reply));
    vc__reply__init(reply);
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (ok)
        vc_reply_ok(reply, "%s", msg);
    else
        vc_reply_fail(reply, "%s", msg);
    vc_reply_field(reply, "previous", "%s", w->prev);
    for (size_t i = 0; i < w->n; i++) {
        Vc__Record *rec = vc_reply_record(reply);
        vc_record_field(rec, "node", "%s", w->nodes[i]);
        vc_record_field(rec, "state", "%s", w->said[i] ? w->said[i] : "silent");
    }
    vc_log(ok ? VC_LOG_NOTICE : VC_LOG_WARN, "together", "%s", msg);
    vc_ctl_answer(f->d.ctl, w->later, reply);
    vc__reply__free_unpacked(reply, NULL);
    wait_free(w);
}

/* A node failed the release (or said nothing in time): every node goes
 * back to the one before (a rollback's too: no node stays apart), and the
 * asker is told. */
static void give_up(fed_t *f, fed_wait_t *w, const char *node, const char *why)
{
    if (!w->prev[0] || strcmp(w->prev, w->id) == 0) {
        answer(f, w, 0, "release %s of site \"%s\" failed on node %s: %s", w->id, w->site, node, why);
        return;
    }
    char prev[VC_RELEASE_ID_MAX + 1], why2[512];
    uint64_t rev = move(f, w->site, w->prev, 1, 1, prev, sizeof(prev), why2, sizeof(why2));
    answer(f, w, 0, "release %s of site \"%s\" failed on node %s: %s; %s", w->id, w->site, node, why,
           rev ? "every node goes back to the release before, and marks this one bad" : why2);
}

/* A node said what it made of a pointer. */
static void heard_report(fed_t *f, const char *site, const char *node, const fed_report_value_t *v)
{
    fed_wait_t *w = wait_for(f, site, v->rev);
    if (w == NULL)
        return;
    size_t i = 0, done = 0;
    while (i < w->n && strcmp(w->nodes[i], node))
        i++;
    if (i == w->n)
        return; /* a node that joined since: it follows, unwaited */
    if (strcmp(v->id, w->id))
        return; /* cannot be: one revision names one release */
    free(w->said[i]);
    w->said[i] = vc_strdup(v->word);
    if (strcmp(v->word, "failed") == 0) {
        give_up(f, w, node, v->why[0] ? v->why : "it failed");
        return;
    }
    for (size_t k = 0; k < w->n; k++)
        done += w->said[k] && strcmp(w->said[k], "ok") == 0;
    if (done == w->n)
        answer(f, w, 1, "site \"%s\" runs release %s on %s %zu nodes", w->site, w->id, w->n > 1 ? "all" : "its", w->n);
}

static void heard_pointer(fed_t *f, const char *site, uint64_t rev, const fed_pointer_value_t *v)
{
    Vc__Reply *scratch = vc_malloc(sizeof(*scratch));
    vc__reply__init(scratch);
    const vc_site_t *s = fed_site(f, site, scratch);
    vc__reply__free_unpacked(scratch, NULL);
    if (s == NULL)
        return; /* not deployed on this node */
    fed_pointer_t *p = pointer_of(f, site, 1);
    snprintf(p->id, sizeof(p->id), "%s", v->id);
    snprintf(p->origin, sizeof(p->origin), "%s", v->origin);
    p->back = v->back;
    p->rev = rev;
    follow(f, s, p);
}

void together_heard(fed_t *f, natsMsg *msg)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    const char *subject = natsMsg_GetSubject(msg), *data = natsMsg_GetData(msg);
    size_t len = (size_t)natsMsg_GetDataLength(msg);
    jsMsgMetaData *meta = NULL;
    fed_key_t key;
    if (len == 0 || strncmp(subject, "$KV." FED_BUCKET ".", strlen("$KV." FED_BUCKET ".")) ||
        fed_key_read(subject + strlen("$KV." FED_BUCKET "."), &key) < 0 || natsMsg_GetMetaData(&meta, msg) != NATS_OK)
        return; /* a delete, or what vc-fed never writes */
    uint64_t rev = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
    fed_pointer_value_t ptr;
    fed_report_value_t rep;
    if (key.kind == FED_KEY_POINTER && fed_pointer_read(data, len, &ptr) == 0)
        heard_pointer(f, key.site, rev, &ptr);
    else if (key.kind == FED_KEY_REPORT && fed_report_read(data, len, &rep) == 0)
        heard_report(f, key.site, key.node, &rep);
    else if (key.kind == FED_KEY_TRUST)
        trust_heard(f, data, len);
    else
        vc_log(VC_LOG_WARN, "together", "ignored a malformed value under \"%s\" in the cluster's bucket", subject);
}

void together_switch(fed_t *f, const vc_site_t *s, const char *id, int back, Vc__Reply *reply)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    if (!cluster_ready_now(f)) {
        vc_reply_fail(reply, "this node's vc-fed is not linked to the cluster yet: nothing switched");
        return;
    }
    size_t slot = 0;
    while (slot < FED_WAITS && f->waits[slot].later)
        slot++;
    if (slot == FED_WAITS) {
        vc_reply_fail(reply, "%d switches are under way: try again when one is done", FED_WAITS);
        return;
    }
    char **peers = NULL, why[512];
    size_t n = 0, holders = 0;
    if (cluster_peers(f, s->name, &peers, &n, why, sizeof(why)) < 0) {
        vc_reply_fail(reply, "%s: nothing switched", why);
        return;
    }
    /* A switch needs every node to hold the release, or site.deploy_quorum
     * of them with none that refused it: the switch waits for those, and
     * the others catch up when they answer again (follow). A rollback goes
     * unless a node is known to have refused it (one that lacks an older
     * release asks for it again). */
    const char *refused = NULL, *lacks = NULL;
    for (size_t i = 0; i < n; i++) {
        int holds = spread_holds(f, s->name, id, peers[i]);
        holders += holds == 1;
        if (holds == 0 && !refused)
            refused = peers[i];
        else if (holds < 0 && !lacks)
            lacks = peers[i];
    }
    int quorum = s->deploy_quorum > 0 && holders + 1 >= (size_t)s->deploy_quorum;
    if (refused || (!back && lacks && !quorum)) {
        vc_reply_fail(reply,
                      "release %s is not staged on node %s: nothing switched (vc deploy stages a release on "
                      "every node of the site first)",
                      id, refused ? refused : lacks);
        cluster_peers_free(peers, n);
        return;
    }
    if (!back && lacks) { /* only the nodes that hold it are waited for */
        size_t kept = 0;
        for (size_t i = 0; i < n; i++)
            if (spread_holds(f, s->name, id, peers[i]) == 1)
                peers[kept++] = peers[i];
            else
                free(peers[i]);
        n = kept;
    }
    char prev[VC_RELEASE_ID_MAX + 1];
    uint64_t rev = move(f, s->name, id, back, 0, prev, sizeof(prev), why, sizeof(why));
    if (rev == 0) {
        vc_reply_fail(reply, "%s: nothing switched", why);
        cluster_peers_free(peers, n);
        return;
    }
    fed_wait_t *w = &f->waits[slot];
    peers = vc_realloc(peers, (n + 1) * sizeof(char *));
    peers[n++] = vc_strdup(cluster_node(f));
    *w = (fed_wait_t){.site = vc_strdup(s->name),
                      .id = vc_strdup(id),
                      .back = back,
                      .rev = rev,
                      .nodes = peers,
                      .n = n,
                      .said = vc_calloc(n, sizeof(char *))};
    w->prev = vc_strdup(prev);
    w->deadline_ms = vc_mono_ms() + (uint64_t)(f->cfg->switch_timeout_ms + f->cfg->health_timeout_ms) + SLACK_MS;
    w->later = vc_ctl_defer(f->d.ctl);
}

void together_refused(fed_t *f, const char *site, const char *id, const char *node, const char *why)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    for (size_t i = 0; i < FED_WAITS; i++) {
        fed_wait_t *w = &f->waits[i];
        if (w->later == NULL || strcmp(w->site, site) || strcmp(w->id, id))
            continue;
        for (size_t k = 0; k < w->n; k++)
            if (strcmp(w->nodes[k], node) == 0) {
                give_up(f, w, node, why);
                break;
            }
    }
}

void together_tick(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < FED_WAITS; i++) {
        fed_wait_t *w = &f->waits[i];
        if (w->later == NULL || now < w->deadline_ms)
            continue;
        size_t k = 0;
        while (k < w->n && w->said[k] && strcmp(w->said[k], "ok") == 0)
            k++;
        if (k == w->n)
            continue; /* cannot be: all ok was answered */
        give_up(f, w, w->nodes[k], w->said[k] ? "it still lacks the release" : "it said nothing in time");
    }
}

void together_fini(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    for (size_t i = 0; i < FED_WAITS; i++)
        if (f->waits[i].later) {
            Vc__Reply r = VC__REPLY__INIT;
            vc_reply_fail(&r, "vc-fed is stopping");
            vc_ctl_answer(f->d.ctl, f->waits[i].later, &r);
            free(r.message);
            wait_free(&f->waits[i]);
        }
    for (size_t i = 0; i < f->npointers; i++)
        free(f->pointers[i].site);
    free(f->pointers);
}
