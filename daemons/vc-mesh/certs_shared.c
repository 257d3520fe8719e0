/*
 * Certificates across nodes (mesh.h, docs/cluster.md). vc-acme stays the
 * one daemon that talks to the CA; in a cluster it asks this one before
 * it orders, and tells it what it got:
 *  - cert-lock SITE HOSTS NOT_AFTER: one node orders a site's certificate
 *    at a time. The lock is the key "lock.HEX" of the vc_certs bucket,
 *    taken by compare-and-set (created, or updated at the revision read);
 *    a lock whose node the roster does not show up, or older than
 *    LOCK_STALE_S, is taken over. If the bucket holds a certificate for
 *    the same hosts that outlives the node's own (NOT_AFTER), the answer
 *    is "have": that one is installed, and nothing is ordered;
 *  - cert-answer and cert-answered: a challenge's answer reaches every
 *    node (answers_shared.c);
 *  - cert-share SITE HOSTS NOT_AFTER CERT KEY: the issued pair, sealed,
 *    under "cert.HEX". Every node's vc-mesh watches those keys and hands
 *    each pair to its vc-acme (verb install), which keeps it if it is
 *    newer than its own;
 *  - cert-unlock SITE.
 * Whatever carries a key is sealed with the cluster's secret (mesh_wire.h):
 * the NATS servers keep the bucket on disk, and see the answers pass.
 */
#include "mesh.h"
#include "mesh_wire.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A lock this old is taken over even if its node is up (an order takes
 * seconds; a DNS-01 wait, minutes). */
#define LOCK_STALE_S 900
/* vc-acme writes an answer or installs a pair at once. */
#define ACME_TIMEOUT_MS 5000

/* "cert.HEX" or "lock.HEX" (malloc'd): a key's characters are limited,
 * a site's name and an on-demand host are not quite. */
static char *key_of(const char *kind, const char *site)
{
    size_t n = strlen(site);
    char *hex = vc_malloc(2 * n + 1);
    sodium_bin2hex(hex, 2 * n + 1, (const unsigned char *)site, n);
    char *key = vc_asprintf("%s.%s", kind, hex);
    free(hex);
    return key;
}

/* The pair in the bucket for site (NULL: none, or it does not open). */
static Vc__MeshCert *stored_cert(mesh_t *m, const char *site)
{
    char *key = key_of("cert", site);
    kvEntry *e = NULL;
    Vc__MeshCert *c = NULL;
    if (kvStore_Get(&e, m->certs, key) == NATS_OK && kvEntry_ValueLen(e) > 0) {
        size_t len = 0;
        unsigned char *plain = mesh_unseal(m->seal_key, key, kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), &len);
        char why[128];
        c = plain ? mesh_cert_read(plain, len, why, sizeof(why)) : NULL;
        if (c && strcmp(c->site, site) != 0) {
            vc__mesh_cert__free_unpacked(c, NULL);
            c = NULL;
        }
        if (plain) {
            sodium_memzero(plain, len);
            free(plain);
        }
    }
    if (e)
        kvEntry_Destroy(e);
    free(key);
    return c;
}

/* Hands a pair to this node's vc-acme, which keeps it if it is newer
 * than its own. 1, or -1 if vc-acme did not take it. */
static int install(mesh_t *m, const Vc__MeshCert *c)
{
    char na[24];
    snprintf(na, sizeof(na), "%lld", (long long)c->not_after);
    char *cert = vc_strndup((const char *)c->cert_pem.data, c->cert_pem.len);
    char *key = vc_strndup((const char *)c->key_pem.data, c->key_pem.len);
    const char *args[] = {c->site, c->hosts, na, cert, key, c->origin};
    char err[512];
    const char *why = mesh_call(m, "vc-acme", "install", args, 6, ACME_TIMEOUT_MS, err, sizeof(err));
    sodium_memzero(key, strlen(key));
    free(key);
    free(cert);
    if (why) {
        vc_log(VC_LOG_WARN, "certs", "the certificate of \"%s\" from node %s was not installed: %s", c->site, c->origin,
               why);
        return -1;
    }
    m->certs_handed++;
    return 1;
}

static void on_cert_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc, (void)sub;
    vc_nats_inbox_push(&((mesh_t *)closure)->inbox, INBOX_CERT, msg);
}

static void on_reply_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc, (void)sub;
    vc_nats_inbox_push(&((mesh_t *)closure)->inbox, INBOX_ANSWER_REPLY, msg);
}

static void on_answer_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc, (void)sub;
    vc_nats_inbox_push(&((mesh_t *)closure)->inbox, INBOX_ANSWER, msg);
}

natsStatus certs_setup(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (!m->can_seal)
        return NATS_OK; /* no secret: certificates stay on their node */
    natsStatus s = NATS_OK;
    if (m->certs == NULL) {
        s = vc_nats_kv_bucket(&m->certs, m->js, VC_MESH_CERTS, m->cfg->replicas, 0);
    }
    if (s == NATS_OK && m->answer_sub == NULL)
        s = natsConnection_Subscribe(&m->answer_sub, m->nc, VC_MESH_ANSWER_SUBJECT, on_answer_msg, m);
    if (s == NATS_OK && m->reply_sub == NULL) {
        natsInbox *ib = NULL;
        s = natsInbox_Create(&ib);
        if (s == NATS_OK) {
            snprintf(m->answer_inbox, sizeof(m->answer_inbox), "%s", ib);
            char *all = vc_asprintf("%s.*", ib);
            s = natsConnection_Subscribe(&m->reply_sub, m->nc, all, on_reply_msg, m);
            free(all);
        }
        natsInbox_Destroy(ib);
    }
    if (s == NATS_OK && m->cert_sub == NULL) {
        /* Each site's last pair, then every new one, as it is put. */
        s = vc_nats_kv_watch(&m->cert_sub, m->js, VC_MESH_CERTS, "cert.>", on_cert_msg, m);
    }
    return s;
}

void certs_heard(mesh_t *m, natsMsg *msg)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    const char *key = natsMsg_GetSubject(msg) + strlen("$KV." VC_MESH_CERTS ".");
    if (natsMsg_GetDataLength(msg) == 0)
        return; /* a delete: what is installed stays until it is renewed */
    size_t len = 0;
    unsigned char *plain =
        mesh_unseal(m->seal_key, key, natsMsg_GetData(msg), (size_t)natsMsg_GetDataLength(msg), &len);
    char why[128] = "it does not open with this node's cluster.secret_file";
    Vc__MeshCert *c = plain ? mesh_cert_read(plain, len, why, sizeof(why)) : NULL;
    char *want = c ? key_of("cert", c->site) : NULL;
    if (c && strcmp(want, key) != 0)
        snprintf(why, sizeof(why), "its site is not its key");
    if (c && strcmp(want, key) == 0)
        install(m, c);
    else if (m->malformed++ == 0) /* said once: the count is in the status */
        vc_log(VC_LOG_WARN, "certs", "dropped the certificate under \"%.80s\": %s", key, why);
    free(want);
    if (c)
        vc__mesh_cert__free_unpacked(c, NULL);
    if (plain) {
        sodium_memzero(plain, len);
        free(plain);
    }
}

int certs_unready(mesh_t *m, const Vc__Command *cmd, size_t nargs, Vc__Reply *reply)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (cmd->n_args < nargs) {
        vc_reply_fail(reply, "%s takes %zu arguments", cmd->verb, nargs);
        return 1;
    }
    if (m->certs && m->ready && m->connected)
        return 0;
    vc_reply_fail(reply, "%s", m->can_seal ? "not linked to the cluster yet" : "cluster.secret_file is not usable");
    return 1;
}

static void held(Vc__Reply *reply, const char *state, const char *holder)
{
    vc_reply_ok(reply, "%s%s%s", state, holder ? " by node " : "", holder ? holder : "");
    vc_reply_field(reply, "lock", "%s", state);
    if (holder)
        vc_reply_field(reply, "holder", "%s", holder);
}

/* Takes the lock on key unless a live node holds it. */
static void take_lock(mesh_t *m, const char *key, Vc__Reply *reply)
{
    const char *me = m->cfg->node;
    uint64_t rev = 0;
    if (kvStore_Create(&rev, m->certs, key, me, (int)strlen(me)) == NATS_OK) {
        held(reply, "held", NULL);
        return;
    }
    kvEntry *e = NULL;
    if (kvStore_Get(&e, m->certs, key) != NATS_OK) { /* released meanwhile: ask again */
        held(reply, "busy", "(released)");
        return;
    }
    char holder[VC_MESH_NODE_MAX + 1];
    snprintf(holder, sizeof(holder), "%.*s", kvEntry_ValueLen(e), (const char *)kvEntry_Value(e));
    int64_t age_s = (vc_wall_ms() - kvEntry_Created(e) / 1000000) / 1000;
    int stale = strcmp(holder, me) == 0 || !roster_node_up(m, holder) || age_s > LOCK_STALE_S;
    if (stale && kvStore_Update(&rev, m->certs, key, me, (int)strlen(me), kvEntry_Revision(e)) == NATS_OK) {
        if (strcmp(holder, me) != 0)
            vc_log(VC_LOG_NOTICE, "certs", "took over the order lock \"%s\" from node %s (%s)", key, holder,
                   roster_node_up(m, holder) ? "held too long" : "not up");
        held(reply, "held", NULL);
    } else {
        held(reply, "busy", holder);
    }
    kvEntry_Destroy(e);
}

void certs_lock_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    mesh_t *m = arg;
    if (certs_unready(m, cmd, 3, reply))
        return;
    const char *site = cmd->args[0], *hosts = cmd->args[1];
    long long own = strtoll(cmd->args[2], NULL, 10);
    Vc__MeshCert *c = stored_cert(m, site);
    int have = c && strcmp(c->hosts, hosts) == 0 && c->not_after > own && c->not_after > vc_wall_ms() / 1000;
    if (have && install(m, c) == 1) {
        held(reply, "have", c->origin);
    } else {
        char *key = key_of("lock", site);
        take_lock(m, key, reply);
        free(key);
    }
    if (c)
        vc__mesh_cert__free_unpacked(c, NULL);
}

void certs_unlock_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    mesh_t *m = arg;
    if (certs_unready(m, cmd, 1, reply))
        return;
    char *key = key_of("lock", cmd->args[0]);
    kvEntry *e = NULL;
    if (kvStore_Get(&e, m->certs, key) == NATS_OK && (size_t)kvEntry_ValueLen(e) == strlen(m->cfg->node) &&
        memcmp(kvEntry_Value(e), m->cfg->node, strlen(m->cfg->node)) == 0)
        kvStore_Delete(m->certs, key);
    if (e)
        kvEntry_Destroy(e);
    free(key);
    vc_reply_ok(reply, "released");
}

void certs_share_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    mesh_t *m = arg;
    if (certs_unready(m, cmd, 5, reply))
        return;
    Vc__MeshCert c = VC__MESH_CERT__INIT;
    c.origin = (char *)m->cfg->node;
    c.site = cmd->args[0];
    c.hosts = cmd->args[1];
    c.not_after = strtoll(cmd->args[2], NULL, 10);
    c.cert_pem = (ProtobufCBinaryData){strlen(cmd->args[3]), (uint8_t *)cmd->args[3]};
    c.key_pem = (ProtobufCBinaryData){strlen(cmd->args[4]), (uint8_t *)cmd->args[4]};
    size_t plen = vc__mesh_cert__get_packed_size(&c), slen = 0;
    uint8_t *plain = vc_malloc(plen);
    vc__mesh_cert__pack(&c, plain);
    char *key = key_of("cert", c.site);
    unsigned char *sealed = mesh_seal(m->seal_key, key, plain, plen, &slen);
    sodium_memzero(plain, plen);
    free(plain);
    uint64_t rev = 0;
    natsStatus s = kvStore_Put(&rev, m->certs, key, sealed, (int)slen);
    free(sealed);
    free(key);
    if (s != NATS_OK) {
        vc_reply_fail(reply, "the certificate was not stored: %s", natsStatus_GetText(s));
        return;
    }
    m->certs_shared++;
    vc_reply_ok(reply, "stored for every node");
}

void certs_fini(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    if (m->cert_sub)
        natsSubscription_Destroy(m->cert_sub);
    if (m->answer_sub)
        natsSubscription_Destroy(m->answer_sub);
    if (m->reply_sub)
        natsSubscription_Destroy(m->reply_sub);
    m->reply_sub = NULL;
    if (m->certs)
        kvStore_Destroy(m->certs);
    m->cert_sub = m->answer_sub = NULL;
    m->certs = NULL;
    answers_fini(m);
    sodium_memzero(m->seal_key, sizeof(m->seal_key));
}
