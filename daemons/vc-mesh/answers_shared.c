/*
 * Challenge answers across nodes (certs_shared.c has the rest of the
 * certificates' story). The load balancer may send the CA's check to any
 * node, so the answer the ordering node's vc-acme writes reaches every
 * node's vc-acme:
 *  - cert-answer put|del TYPE NAME [VALUE] publishes it, sealed, on
 *    vc.acme.answer, as a request that each other node answers once its
 *    vc-acme has it; cert-answered ASK says how many have, and vc-acme
 *    tells the CA to check once every node up has (it sends the answer
 *    again each second until then);
 *  - the answers still out are sent again to each node that joins;
 *  - a node whose vc-acme does not take one at once (starting, busy)
 *    keeps it and tries again every ANSWER_RETRY_MS, for ANSWER_KEEP_MS.
 */
#include "mesh.h"
#include "mesh_wire.h"
#include "vc_log.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* vc-acme writes an answer at once: the first try waits this long, a
 * try again less (the loop is held meanwhile). */
#define ACME_TIMEOUT_MS 5000
#define ACME_RETRY_TIMEOUT_MS 1000
#define ANSWER_RETRY_MS 500
#define ANSWER_KEEP_MS 60000

static size_t others_up(const mesh_t *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->nnodes; i++)
        n += m->nodes[i].state == NODE_UP && strcmp(m->nodes[i].name, m->cfg->node) != 0;
    return n;
}

/* Seals and publishes one answer; reply, when not NULL, is where the
 * nodes that take it say so. */
static natsStatus send_answer(mesh_t *m, int put, const char *type, const char *name, const char *value,
                              const char *reply)
{
    Vc__MeshAnswer a = VC__MESH_ANSWER__INIT;
    a.origin = (char *)m->cfg->node;
    a.put = put;
    a.type = (char *)type;
    a.name = (char *)name;
    if (put)
        a.value = (ProtobufCBinaryData){strlen(value), (uint8_t *)value};
    size_t plen = vc__mesh_answer__get_packed_size(&a), slen = 0;
    uint8_t *plain = vc_malloc(plen);
    vc__mesh_answer__pack(&a, plain);
    unsigned char *sealed = mesh_seal(m->seal_key, VC_MESH_ANSWER_SUBJECT, plain, plen, &slen);
    sodium_memzero(plain, plen);
    free(plain);
    natsStatus s = reply ? natsConnection_PublishRequest(m->nc, VC_MESH_ANSWER_SUBJECT, reply, sealed, (int)slen)
                         : natsConnection_Publish(m->nc, VC_MESH_ANSWER_SUBJECT, sealed, (int)slen);
    free(sealed);
    m->answers_sent++;
    return s;
}

static void forget_own(own_answer_t *o)
{
    sodium_memzero(o->value, strlen(o->value));
    free(o->type);
    free(o->name);
    free(o->value);
}

/* Keeps (put) or drops the answer this node sent for type and name. A
 * CA checks a few names at a time; past MESH_OWN_ANSWERS, the oldest is
 * no longer sent to a node that joins. */
static void remember_own(mesh_t *m, int put, const char *type, const char *name, const char *value)
{
    for (size_t i = 0; i < m->nown_answers; i++) {
        own_answer_t *o = &m->own_answers[i];
        if (strcmp(o->type, type) == 0 && strcmp(o->name, name) == 0) {
            forget_own(o);
            *o = m->own_answers[--m->nown_answers];
            break;
        }
    }
    if (!put)
        return;
    if (m->nown_answers == MESH_OWN_ANSWERS) {
        forget_own(&m->own_answers[0]);
        memmove(&m->own_answers[0], &m->own_answers[1], (MESH_OWN_ANSWERS - 1) * sizeof(own_answer_t));
        m->nown_answers--;
    }
    m->own_answers[m->nown_answers++] = (own_answer_t){vc_strdup(type), vc_strdup(name), vc_strdup(value)};
}

void certs_node_up(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (!m->ready || !m->connected)
        return;
    for (size_t i = 0; i < m->nown_answers; i++) {
        const own_answer_t *o = &m->own_answers[i];
        send_answer(m, 1, o->type, o->name, o->value, NULL);
    }
}

/* Publishes the sealed answer. A put's request asks the other nodes up
 * to say when they have it; the loop counts their replies
 * (certs_reply_heard) while vc-acme asks how many came (cert-answered),
 * so that two nodes publishing at once never wait on each other's loop.
 * With no other node up there is no one to ask: a node that comes up
 * later gets the answers still out when it joins (certs_node_up). */
void certs_answer_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    mesh_t *m = arg;
    if (certs_unready(m, cmd, 3, reply))
        return;
    int put = strcmp(cmd->args[0], "put") == 0;
    if ((put && cmd->n_args < 4) || (!put && strcmp(cmd->args[0], "del") != 0)) {
        vc_reply_fail(reply, "cert-answer put TYPE NAME VALUE, or del TYPE NAME");
        return;
    }
    uint64_t ask = ++m->answer_ask;
    answer_wait_t *w = &m->answer_waits[ask % MESH_ANSWER_WAITS];
    *w = (answer_wait_t){.ask = ask, .want = put ? others_up(m) : 0};
    char subject[96];
    snprintf(subject, sizeof(subject), "%s.%llu", m->answer_inbox, (unsigned long long)ask);
    natsStatus s = send_answer(m, put, cmd->args[1], cmd->args[2], put ? cmd->args[3] : NULL, w->want ? subject : NULL);
    if (s != NATS_OK) {
        vc_reply_fail(reply, "the answer was not sent: %s", natsStatus_GetText(s));
        return;
    }
    remember_own(m, put, cmd->args[1], cmd->args[2], put ? cmd->args[3] : NULL);
    vc_reply_ok(reply, "sent; %zu other nodes up to have it", w->want);
    vc_reply_field(reply, "ask", "%llu", (unsigned long long)ask);
    vc_reply_field(reply, "want", "%zu", w->want);
}

void certs_reply_heard(mesh_t *m, natsMsg *msg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    const char *dot = strrchr(natsMsg_GetSubject(msg), '.');
    uint64_t ask = dot ? strtoull(dot + 1, NULL, 10) : 0;
    answer_wait_t *w = &m->answer_waits[ask % MESH_ANSWER_WAITS];
    if (ask && w->ask == ask)
        w->got++;
}

/* cert-answered ASK: how many of the nodes asked have said they have it
 * (a request long gone counts as answered by all). */
void certs_answered_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    mesh_t *m = arg;
    uint64_t ask = cmd->n_args ? strtoull(cmd->args[0], NULL, 10) : 0;
    const answer_wait_t *w = &m->answer_waits[ask % MESH_ANSWER_WAITS];
    size_t want = w->ask == ask ? w->want : 0, got = w->ask == ask ? w->got : 0;
    vc_reply_ok(reply, "%zu of %zu", got, want);
    vc_reply_field(reply, "want", "%zu", want);
    vc_reply_field(reply, "got", "%zu", got);
}

static void free_pending(pending_answer_t *p)
{
    if (p->value)
        sodium_memzero(p->value, strlen(p->value));
    free(p->origin);
    free(p->type);
    free(p->name);
    free(p->value);
    free(p->reply);
}

static void drop_pending(mesh_t *m, size_t i)
{
    free_pending(&m->pending_answers[i]);
    m->pending_answers[i] = m->pending_answers[--m->npending_answers];
}

/* An answer for type and name came: one kept for them is older. */
static void forget_pending(mesh_t *m, const char *type, const char *name)
{
    for (size_t i = 0; i < m->npending_answers; i++)
        if (!strcmp(m->pending_answers[i].type, type) && !strcmp(m->pending_answers[i].name, name))
            drop_pending(m, i--);
}

/* Hands the answer to this node's vc-acme: NULL, or why not (in err). */
static const char *take(mesh_t *m, const pending_answer_t *p, int timeout_ms, char *err, size_t errlen)
{
    const char *args[] = {p->put ? "put" : "del", p->type, p->name, p->value ? p->value : ""};
    const char *fail = mesh_call(m, "vc-acme", "answer", args, p->put ? 4 : 3, timeout_ms, err, errlen);
    if (fail == NULL) {
        if (p->reply)
            natsConnection_PublishString(m->nc, p->reply, m->cfg->node);
        m->answers_applied++;
    }
    return fail;
}

/* Keeps p (its strings now the list's) to try again. */
static void keep(mesh_t *m, pending_answer_t p)
{
    if (m->npending_answers == MESH_PENDING_ANSWERS) {
        vc_log(VC_LOG_WARN, "certs", "node %s's %s answer for \"%s\" was not taken: too many waiting",
               m->pending_answers[0].origin, m->pending_answers[0].type, m->pending_answers[0].name);
        drop_pending(m, 0);
    }
    m->pending_answers[m->npending_answers++] = p;
}

void certs_answer_heard(mesh_t *m, natsMsg *msg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    size_t len = 0;
    unsigned char *plain = mesh_unseal(m->seal_key, VC_MESH_ANSWER_SUBJECT, natsMsg_GetData(msg),
                                       (size_t)natsMsg_GetDataLength(msg), &len);
    char why[128] = "it does not open with this node's cluster.secret_file";
    Vc__MeshAnswer *a = plain ? mesh_answer_read(plain, len, why, sizeof(why)) : NULL;
    if (a == NULL) {
        if (m->malformed++ == 0) /* said once: the count is in the status */
            vc_log(VC_LOG_WARN, "certs", "dropped a challenge's answer: %s", why);
    } else if (strcmp(a->origin, m->cfg->node) != 0) {
        uint64_t now = vc_mono_ms();
        const char *reply = natsMsg_GetReply(msg);
        pending_answer_t p = {.origin = vc_strdup(a->origin),
                              .type = vc_strdup(a->type),
                              .name = vc_strdup(a->name),
                              .value = a->put ? vc_strndup((const char *)a->value.data, a->value.len) : NULL,
                              .reply = reply ? vc_strdup(reply) : NULL,
                              .put = a->put,
                              .since_ms = now,
                              .next_ms = now + ANSWER_RETRY_MS};
        char err[512];
        forget_pending(m, p.type, p.name); /* a put withdrawn meanwhile, or put again */
        if (take(m, &p, ACME_TIMEOUT_MS, err, sizeof(err)) == NULL) {
            free_pending(&p);
        } else {
            vc_log(VC_LOG_DEBUG, "certs", "node %s's %s answer for \"%s\" not taken yet: %s", p.origin, p.type, p.name,
                   err);
            keep(m, p);
        }
    }
    if (a)
        vc__mesh_answer__free_unpacked(a, NULL);
    if (plain) {
        sodium_memzero(plain, len);
        free(plain);
    }
}

void certs_answers_tick(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < m->npending_answers; i++) {
        pending_answer_t *p = &m->pending_answers[i];
        if (now < p->next_ms)
            continue;
        char err[512];
        const char *fail = take(m, p, ACME_RETRY_TIMEOUT_MS, err, sizeof(err));
        if (fail && now - p->since_ms < ANSWER_KEEP_MS) {
            p->next_ms = now + ANSWER_RETRY_MS;
            continue;
        }
        if (fail)
            vc_log(VC_LOG_WARN, "certs", "node %s's %s answer for \"%s\" was not taken in %d s: %s", p->origin, p->type,
                   p->name, ANSWER_KEEP_MS / 1000, fail);
        drop_pending(m, i--);
    }
}

void answers_fini(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    for (size_t i = 0; i < m->nown_answers; i++)
        forget_own(&m->own_answers[i]);
    m->nown_answers = 0;
    while (m->npending_answers)
        drop_pending(m, 0);
}
