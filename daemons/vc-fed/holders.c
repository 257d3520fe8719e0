/*
 * Where each release of a site is staged (fed.h): `vc releases` on one
 * node lists its own releases, and in a cluster asks every other node of
 * the site for its list ("releases SITE here", a verb another node may
 * call), so that each release says the nodes that hold it.
 *
 * One thread a node (libcommon/vc_fanout.h), as spread.c does. A node that
 * does not answer within fed.peer_timeout is left out of every list, and
 * named in the answer's "unanswered".
 */
#include "fed.h"
#include "vc_fanout.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct holders_job holders_job_t;

typedef struct holders_peer {
    holders_job_t *job;
    char *node;
    int answered;
    char **ids;
    size_t n;
} holders_peer_t;

struct holders_job {
    holders_job_t *next; /* fed_t's jobs under way */
    fed_t *f;
    vc_ctl_later_t *later;
    char *site;
    Vc__Reply *reply; /* this node's list, answered once the others are in */
    holders_peer_t *peers;
    size_t n;
    vc_fanout_t *fan;
};

/* On the peer's thread. */
static void ask(void *arg)
{
    holders_peer_t *p = arg;
    holders_job_t *j = p->job;
    const char *args[] = {j->site, "here"};
    Vc__Reply *r = NULL;
    char why[256];
    if (cluster_call(j->f, p->node, "releases", args, 2, NULL, 0, &r, why, sizeof(why)) == 0 && r && r->ok) {
        p->answered = 1;
        p->ids = vc_calloc(r->n_records + 1, sizeof(char *));
        for (size_t i = 0; i < r->n_records; i++) {
            const char *id = vc_record_get(r->records[i], "id");
            if (id)
                p->ids[p->n++] = vc_strdup(id);
        }
    }
    if (r)
        vc__reply__free_unpacked(r, NULL);
}

/* On the thread of the last call to end. */
static void wake_loop(void *arg)
{
    cluster_put_item(arg, FED_ITEM_HOLDERS, NULL); /* the loop finds which */
}

static void job_free(holders_job_t *j)
{
    vc_fanout_end(j->fan);
    for (size_t i = 0; i < j->n; i++) {
        for (size_t k = 0; k < j->peers[i].n; k++)
            free(j->peers[i].ids[k]);
        free(j->peers[i].ids);
        free(j->peers[i].node);
    }
    free(j->peers);
    if (j->reply)
        vc__reply__free_unpacked(j->reply, NULL);
    free(j->site);
    free(j);
}

static int holds(const holders_peer_t *p, const char *id)
{
    for (size_t k = 0; k < p->n; k++)
        if (strcmp(p->ids[k], id) == 0)
            return 1;
    return 0;
}

/* Each release's "nodes": this one, and the others that hold it. */
static void answer(fed_t *f, holders_job_t *j)
{
    char *unanswered = vc_strdup("");
    for (size_t i = 0; i < j->n; i++) {
        if (!j->peers[i].answered) {
            char *more = vc_asprintf("%s%s%s", unanswered, *unanswered ? "," : "", j->peers[i].node);
            free(unanswered);
            unanswered = more;
        }
    }
    for (size_t r = 0; r < j->reply->n_records; r++) {
        const char *id = vc_record_get(j->reply->records[r], "id");
        char *nodes = vc_strdup(cluster_node(f));
        for (size_t i = 0; id && i < j->n; i++)
            if (holds(&j->peers[i], id)) {
                char *more = vc_asprintf("%s,%s", nodes, j->peers[i].node);
                free(nodes);
                nodes = more;
            }
        vc_record_field(j->reply->records[r], "nodes", "%s", nodes);
        free(nodes);
    }
    vc_reply_field(j->reply, "unanswered", "%s", unanswered);
    free(unanswered);
    vc_ctl_answer(f->d.ctl, j->later, j->reply);
    job_free(j);
}

void holders_done(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    for (holders_job_t **at = (holders_job_t **)&f->holding; *at;) {
        holders_job_t *j = *at;
        if (!vc_fanout_over(j->fan)) {
            at = &j->next;
            continue;
        }
        *at = j->next;
        answer(f, j);
    }
}

void holders_ask(fed_t *f, const vc_site_t *s, Vc__Reply *reply)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    char **peers = NULL, why[512] = "";
    size_t n = 0;
    int found = cluster_ready_now(f) && cluster_peers(f, s->name, &peers, &n, why, sizeof(why)) == 0;
    if (!found || n == 0) {
        /* There are no others, or they cannot be found: this node's list. */
        releases_list(f, s, reply);
        for (size_t r = 0; r < reply->n_records; r++)
            vc_record_field(reply->records[r], "nodes", "%s", cluster_node(f));
        if (!found)
            vc_reply_field(reply, "others", "%s", why[0] ? why : "this node's vc-fed is not linked to the cluster yet");
        cluster_peers_free(peers, n);
        return;
    }
    holders_job_t *j = vc_calloc(1, sizeof(*j));
    j->f = f;
    j->site = vc_strdup(s->name);
    j->reply = vc_malloc(sizeof(*j->reply));
    vc__reply__init(j->reply);
    releases_list(f, s, j->reply);
    j->peers = vc_calloc(n, sizeof(*j->peers));
    j->n = n;
    for (size_t i = 0; i < n; i++) {
        j->peers[i].job = j;
        j->peers[i].node = peers[i];
    }
    free(peers);
    j->later = vc_ctl_defer(f->d.ctl);
    j->next = f->holding;
    f->holding = j;
    /* A thread that cannot start: as a node that did not answer. */
    j->fan = vc_fanout_start(j->peers, n, sizeof(*j->peers), ask, NULL, wake_loop, f);
}

void holders_fini(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    for (holders_job_t *j = f->holding, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    f->holding = NULL;
}
