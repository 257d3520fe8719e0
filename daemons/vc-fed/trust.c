/*
 * The keys this node trusts to sign releases ("trust" in LMDB). The
 * control socket takes these verbs only from root or the suite's user
 * (vc_ctl_trust): a key is added locally, by whoever runs the suite.
 */
#include "fed.h"
#include "vc_log.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static int name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= VC_RELEASE_NAME_MAX &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@") == n;
}

typedef struct put {
    const char *name;
    const Vc__TrustedKey *key; /* NULL: delete */
} put_t;

static int put_txn(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
    put_t *p = ctx;
    MDB_val k = {strlen(p->name), (void *)p->name};
    if (p->key == NULL) {
        int rc = mdb_del(txn, dbi, &k, NULL);
        return rc == MDB_NOTFOUND ? -VC_ERR_NOTFOUND : vc_store_err(rc);
    }
    size_t len = vc__trusted_key__get_packed_size(p->key);
    uint8_t *buf = vc_malloc(len ? len : 1);
    vc__trusted_key__pack(p->key, buf);
    MDB_val v = {len, buf};
    int rc = vc_store_err(mdb_put(txn, dbi, &k, &v, 0));
    free(buf);
    return rc;
}

void trust_add_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    unsigned char pk[VC_RELEASE_PUBLIC];
    size_t pklen = 0;
    if (cmd->n_args != 2 || !name_ok(cmd->args[0])) {
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
    Vc__TrustedKey key = VC__TRUSTED_KEY__INIT;
    key.name = cmd->args[0];
    key.public_key.data = pk;
    key.public_key.len = sizeof(pk);
    key.added_ms = vc_wall_ms();
    key.added_by = "root";
    put_t p = {cmd->args[0], &key};
    int rc = vc_store_write(f->store, VC_DB_TRUST, put_txn, &p);
    if (rc < 0) {
        vc_reply_fail(reply, "the key could not be stored: %s", vc_strerror(rc));
        return;
    }
    vc_log(VC_LOG_NOTICE, "trust", "key \"%s\" is trusted to sign releases", cmd->args[0]);
    vc_reply_ok(reply, "key \"%s\" is trusted to sign releases", cmd->args[0]);
}

void trust_remove_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    if (cmd->n_args != 1) {
        vc_reply_fail(reply, "usage: trust-remove NAME");
        return;
    }
    put_t p = {cmd->args[0], NULL};
    int rc = vc_store_write(f->store, VC_DB_TRUST, put_txn, &p);
    if (rc == -VC_ERR_NOTFOUND)
        vc_reply_fail(reply, "no key \"%s\" is trusted", cmd->args[0]);
    else if (rc < 0)
        vc_reply_fail(reply, "the key could not be removed: %s", vc_strerror(rc));
    else {
        vc_log(VC_LOG_NOTICE, "trust", "key \"%s\" is no longer trusted", cmd->args[0]);
        vc_reply_ok(reply, "key \"%s\" is no longer trusted", cmd->args[0]);
    }
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
    check_t c = {text, len, sig, name, nlen, 0};
    walk_t w = {check_one, &c};
    vc_store_read(f->store, VC_DB_TRUST, walk_txn, &w);
    return c.found ? 0 : -1;
}
