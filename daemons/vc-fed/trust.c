/*
 * The keys this node trusts to sign releases ("trust" in LMDB). Changed
 * two ways:
 * - locally (trust-add, trust-remove): the control socket takes them only
 *   from root or the suite's user (vc_ctl_trust); they stay on this node;
 * - by a change signed with a key this node already trusts
 *   (trust-change, libcommon/vc_trust_change.h): applied here, and in a
 *   cluster put in the bucket, where every node applies it if it trusts
 *   the signer too.
 * A removed key leaves a record without a key, with when: a change older
 * than what a node has for that name (replayed from the bucket, say) is
 * never applied.
 */
#include "bucket_wire.h"
#include "fed.h"
#include "vc_log.h"
#include "vc_trust_change.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

typedef struct put {
    const char *name;
    const Vc__TrustedKey *key; /* NULL: delete */
} put_t;

static int put_txn(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
    put_t *p = ctx;
    MDB_val k = {strlen(p->name), (void *)p->name};
    return vc_store_put_proto(txn, dbi, &k, p->key ? &p->key->base : NULL);
}

typedef struct get {
    const char *name;
    Vc__TrustedKey *found;
} get_t;

static int get_txn(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
    get_t *g = ctx;
    MDB_val k = {strlen(g->name), (void *)g->name}, v;
    if (mdb_get(txn, dbi, &k, &v) == 0)
        g->found = vc__trusted_key__unpack(NULL, v.mv_size, v.mv_data);
    return 0;
}

/* What this node has for a name: a key, a removal (no key), or NULL. */
static Vc__TrustedKey *trust_get(fed_t *f, const char *name)
{
    get_t g = {name, NULL};
    vc_store_read(f->store, VC_DB_TRUST, get_txn, &g);
    return g.found;
}

/* Applies a change made by `by`: 1 if applied, 0 if this node has a
 * newer one for the name, -1 (why) if it could not be stored. */
static int apply(fed_t *f, const vc_trust_change_t *c, const char *by, char *why, size_t wlen)
{
    Vc__TrustedKey *had = trust_get(f, c->name);
    int64_t had_ms = had ? had->added_ms : 0;
    if (had)
        vc__trusted_key__free_unpacked(had, NULL);
    if (had_ms >= c->at_ms)
        return 0;
    Vc__TrustedKey key = VC__TRUSTED_KEY__INIT;
    key.name = (char *)c->name;
    key.public_key.data = c->add ? (uint8_t *)c->key : NULL;
    key.public_key.len = c->add ? VC_RELEASE_PUBLIC : 0;
    key.added_ms = c->at_ms;
    key.added_by = (char *)by;
    put_t p = {c->name, &key};
    int rc = vc_store_write(f->store, VC_DB_TRUST, put_txn, &p);
    if (rc < 0) {
        snprintf(why, wlen, "the change could not be stored: %s", vc_strerror(rc));
        return -1;
    }
    vc_log(VC_LOG_NOTICE, "trust",
           c->add ? "key \"%s\" is trusted to sign releases (%s)" : "key \"%s\" is no longer trusted (%s)", c->name,
           by);
    return 1;
}

void trust_add_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    unsigned char pk[VC_RELEASE_PUBLIC];
    size_t pklen = 0;
    if (cmd->n_args != 2 || !vc_trust_name_ok(cmd->args[0])) {
        vc_reply_fail(reply, "usage: trust-add NAME PUBLIC_KEY (NAME: up to %d letters, digits, '-', '_', '.', '@')",
                      VC_RELEASE_NAME_MAX);
        return;
    }
    if (sodium_base642bin(pk, sizeof(pk), cmd->args[1], strlen(cmd->args[1]), NULL, &pklen, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        pklen != sizeof(pk)) {
        vc_reply_fail(reply, "\"%s\" is not a public key: `vc key new NAME` prints one (%d bytes in base64)",
                      cmd->args[1], VC_RELEASE_PUBLIC);
        return;
    }
    vc_trust_change_t c = {.add = 1, .at_ms = vc_wall_ms()};
    snprintf(c.name, sizeof(c.name), "%s", cmd->args[0]);
    memcpy(c.key, pk, sizeof(pk));
    char why[256];
    if (apply(f, &c, "root", why, sizeof(why)) < 0)
        vc_reply_fail(reply, "%s", why);
    else
        vc_reply_ok(reply, "key \"%s\" is trusted to sign releases on this node", cmd->args[0]);
}

void trust_remove_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    if (cmd->n_args != 1) {
        vc_reply_fail(reply, "usage: trust-remove NAME");
        return;
    }
    Vc__TrustedKey *had = trust_get(f, cmd->args[0]);
    int live = had && had->public_key.len == VC_RELEASE_PUBLIC;
    if (had)
        vc__trusted_key__free_unpacked(had, NULL);
    if (!live) {
        vc_reply_fail(reply, "no key \"%s\" is trusted", cmd->args[0]);
        return;
    }
    vc_trust_change_t c = {.add = 0, .at_ms = vc_wall_ms()};
    snprintf(c.name, sizeof(c.name), "%s", cmd->args[0]);
    char why[256];
    if (apply(f, &c, "root", why, sizeof(why)) < 0)
        vc_reply_fail(reply, "%s", why);
    else
        vc_reply_ok(reply, "key \"%s\" is no longer trusted on this node", cmd->args[0]);
}

/* A signed change: believed if a key this node trusts signed it. 1, 0
 * (older than what is here), or -1 with why. */
static int signed_change(fed_t *f, const char *text, size_t len, const unsigned char sig[VC_RELEASE_SIGNATURE],
                         vc_trust_change_t *c, char *why, size_t wlen)
{
    char signer[VC_RELEASE_NAME_MAX + 1];
    if (vc_trust_change_parse(text, len, c) < 0) {
        snprintf(why, wlen, "not a change to the trusted keys");
        return -1;
    }
    if (trust_signer(f, text, len, sig, signer, sizeof(signer)) < 0) {
        snprintf(why, wlen, "the change is not signed by a key this node trusts");
        return -1;
    }
    char *by = vc_asprintf("key %s", signer);
    int rc = apply(f, c, by, why, wlen);
    free(by);
    return rc;
}

void trust_change_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    unsigned char sig[VC_RELEASE_SIGNATURE];
    if (cmd->n_args != 1 || vc_release_unhex(cmd->args[0], sig, sizeof(sig)) < 0) {
        vc_reply_fail(reply, "usage: trust-change SIGNATURE (+ the change, libcommon/vc_trust_change.h)");
        return;
    }
    vc_trust_change_t c;
    char why[256];
    int rc = signed_change(f, (const char *)cmd->payload.data, cmd->payload.len, sig, &c, why, sizeof(why));
    if (rc < 0) {
        vc_reply_fail(reply, "%s", why);
        return;
    }
    if (rc == 0) {
        vc_reply_fail(reply, "this node has a newer change for key \"%s\"", c.name);
        return;
    }
    const char *shared = trust_share(f, cmd->args[0], (const char *)cmd->payload.data, cmd->payload.len, &c);
    vc_reply_ok(reply, "key \"%s\" %s%s", c.name, c.add ? "is trusted to sign releases" : "is no longer trusted",
                shared);
}

/* In a cluster, the change goes in the bucket (trust.HEX), where every
 * node reads it: what to add to the answer. */
const char *trust_share(fed_t *f, const char *sig_hex, const char *text, size_t len, const vc_trust_change_t *c)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    if (!cluster_on(f))
        return "";
    kvStore *kv = cluster_bucket(f);
    char key[FED_KEY_MAX];
    if (kv == NULL || fed_key_write_trust(key, sizeof(key), c->name) < 0)
        return " on this node; the cluster is not linked yet, so only here";
    char *value = vc_asprintf("%s\n%.*s", sig_hex, (int)len, text);
    natsStatus st = kvStore_PutString(NULL, kv, key, value);
    free(value);
    return st == NATS_OK ? " on every node that trusts the signer" : " on this node; the cluster did not take it";
}

void trust_heard(fed_t *f, const void *data, size_t len)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    const char *text;
    size_t tlen;
    unsigned char sig[VC_RELEASE_SIGNATURE];
    vc_trust_change_t c;
    char why[256];
    if (fed_trust_read(data, len, sig, &text, &tlen) < 0) {
        vc_log(VC_LOG_WARN, "trust", "ignored a malformed change in the cluster's bucket");
        return;
    }
    if (signed_change(f, text, tlen, sig, &c, why, sizeof(why)) < 0)
        vc_log(VC_LOG_WARN, "trust", "refused a change to the trusted keys from the cluster: %s", why);
}

/* Each trusted key, to fn; stops when fn returns 1. */
typedef struct walk {
    int (*fn)(const Vc__TrustedKey *k, void *arg);
    void *arg;
} walk_t;

static int walk_txn(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
    walk_t *w = ctx;
    MDB_cursor *c;
    if (mdb_cursor_open(txn, dbi, &c) != 0)
        return -VC_ERR_PROTO;
    MDB_val k, v;
    int stop = 0;
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0 && !stop; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        Vc__TrustedKey *key = vc__trusted_key__unpack(NULL, v.mv_size, v.mv_data);
        if (key && key->public_key.len == VC_RELEASE_PUBLIC)
            stop = w->fn(key, w->arg);
        if (key)
            vc__trusted_key__free_unpacked(key, NULL);
    }
    mdb_cursor_close(c);
    return 0;
}

static int list_one(const Vc__TrustedKey *k, void *arg)
{
    char b64[sodium_base64_ENCODED_LEN(VC_RELEASE_PUBLIC, sodium_base64_VARIANT_ORIGINAL)];
    sodium_bin2base64(b64, sizeof(b64), k->public_key.data, k->public_key.len, sodium_base64_VARIANT_ORIGINAL);
    Vc__Record *rec = vc_reply_record(arg);
    vc_record_field(rec, "name", "%s", k->name);
    vc_record_field(rec, "public_key", "%s", b64);
    vc_record_field(rec, "added_ms", "%lld", (long long)k->added_ms);
    vc_record_field(rec, "added_by", "%s", k->added_by);
    return 0;
}

void trust_list_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    (void)cmd;
    fed_t *f = arg;
    walk_t w = {list_one, reply};
    vc_store_read(f->store, VC_DB_TRUST, walk_txn, &w);
    vc_reply_ok(reply, "%zu keys trusted", reply->n_records);
}

typedef struct check {
    const char *text;
    size_t len;
    const unsigned char *sig;
    char *name;
    size_t nlen;
    int found;
} check_t;

static int check_one(const Vc__TrustedKey *k, void *arg)
{
    check_t *c = arg;
    if (vc_release_verify(c->text, c->len, c->sig, k->public_key.data) != 0)
        return 0;
    snprintf(c->name, c->nlen, "%s", k->name);
    c->found = 1;
    return 1;
}

int trust_signer(fed_t *f, const char *text, size_t len, const unsigned char sig[VC_RELEASE_SIGNATURE], char *name,
                 size_t nlen)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    check_t c = {text, len, sig, name, nlen, 0};
    walk_t w = {check_one, &c};
    vc_store_read(f->store, VC_DB_TRUST, walk_txn, &w);
    return c.found ? 0 : -1;
}
