/* The "releases" database: SITE "/" ID -> Release (fed.proto). */
#include "fed.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct op {
    const char *site, *id;
    const Vc__Release *put; /* NULL: delete */
    Vc__Release *got;
    Vc__Release **all;
    size_t n, cap;
} op_t;

static size_t key_of(const char *site, const char *id, char *buf, size_t len)
{
    return (size_t)snprintf(buf, len, "%s/%s", site, id);
}

static int write_txn(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
    op_t *o = ctx;
    char key[512];
    MDB_val k = {key_of(o->site, o->id, key, sizeof(key)), key};
    int rc = vc_store_put_proto(txn, dbi, &k, o->put ? &o->put->base : NULL);
    return rc == -VC_ERR_NOTFOUND ? 0 : rc;
}

int releases_put(fed_t *f, const Vc__Release *r)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    op_t o = {.site = r->site, .id = r->id, .put = r};
    return vc_store_write(f->store, VC_DB_RELEASES, write_txn, &o);
}

int releases_del(fed_t *f, const char *site, const char *id)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    op_t o = {.site = site, .id = id};
    return vc_store_write(f->store, VC_DB_RELEASES, write_txn, &o);
}

static int get_txn(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
    op_t *o = ctx;
    char key[512];
    MDB_val k = {key_of(o->site, o->id, key, sizeof(key)), key}, v;
    if (mdb_get(txn, dbi, &k, &v) != 0)
        return -VC_ERR_NOTFOUND;
    o->got = vc__release__unpack(NULL, v.mv_size, v.mv_data);
    return 0;
}

Vc__Release *releases_get(fed_t *f, const char *site, const char *id)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    op_t o = {.site = site, .id = id};
    vc_store_read(f->store, VC_DB_RELEASES, get_txn, &o);
    return o.got;
}

static int all_txn(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
    op_t *o = ctx;
    char prefix[256];
    size_t plen = (size_t)snprintf(prefix, sizeof(prefix), "%s/", o->site);
    MDB_cursor *c;
    if (mdb_cursor_open(txn, dbi, &c) != 0)
        return -VC_ERR_STORE;
    MDB_val k = {plen, prefix}, v;
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
            break;
        Vc__Release *r = vc__release__unpack(NULL, v.mv_size, v.mv_data);
        if (r == NULL)
            continue;
        o->all = vc_grow(o->all, &o->cap, o->n + 1, sizeof(*o->all), 8);
        o->all[o->n++] = r;
    }
    mdb_cursor_close(c);
    return 0;
}

static int by_staging(const void *a, const void *b)
{
    const Vc__Release *x = *(Vc__Release *const *)a, *y = *(Vc__Release *const *)b;
    return x->staged_ms < y->staged_ms ? -1 : x->staged_ms > y->staged_ms ? 1 : strcmp(x->id, y->id);
}

size_t releases_of(fed_t *f, const char *site, Vc__Release ***out)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    op_t o = {.site = site};
    vc_store_read(f->store, VC_DB_RELEASES, all_txn, &o);
    if (o.n > 1)
        qsort(o.all, o.n, sizeof(*o.all), by_staging);
    *out = o.all;
    return o.n;
}

void releases_free(Vc__Release **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        vc__release__free_unpacked(r[i], NULL);
    free(r);
}

void releases_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    int here = cmd->n_args == 2 && strcmp(cmd->args[1], "here") == 0;
    if (cmd->n_args != 1 && !here) {
        vc_reply_fail(reply, "usage: releases SITE [here]");
        return;
    }
    const vc_site_t *s = fed_site(f, cmd->args[0], reply);
    if (s == NULL)
        return;
    if (here || !cluster_on(f))
        releases_list(f, s, reply);
    else
        holders_ask(f, s, reply); /* with the nodes that hold each */
}

void releases_list(fed_t *f, const vc_site_t *s, Vc__Reply *reply)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    char current[VC_RELEASE_ID_MAX + 1];
    fed_current(s, current, sizeof(current));
    Vc__Release **all;
    size_t n = releases_of(f, s->name, &all);
    for (size_t i = 0; i < n; i++) {
        Vc__Record *rec = vc_reply_record(reply);
        vc_release_t rel;
        char why[256];
        if (vc_release_parse((const char *)all[i]->manifest.data, all[i]->manifest.len, &rel, why, sizeof(why)) < 0)
            memset(&rel, 0, sizeof(rel));
        vc_record_field(rec, "id", "%s", all[i]->id);
        vc_record_field(rec, "state", "%s", strcmp(all[i]->id, current) == 0 ? "current" : all[i]->state);
        vc_record_field(rec, "bad", "%s", all[i]->bad ? "yes" : "no");
        vc_record_field(rec, "created", "%lld", (long long)rel.created);
        vc_record_field(rec, "key", "%s", all[i]->key);
        vc_record_field(rec, "message", "%s", rel.message ? rel.message : "");
        vc_record_field(rec, "entries", "%zu", rel.n);
        vc_record_field(rec, "staged_ms", "%lld", (long long)all[i]->staged_ms);
        vc_record_field(rec, "switched_ms", "%lld", (long long)all[i]->switched_ms);
        vc_record_field(rec, "bytes_received", "%llu", (unsigned long long)all[i]->bytes_received);
        vc_record_field(rec, "files_linked", "%llu", (unsigned long long)all[i]->files_linked);
        vc_release_free(&rel);
    }
    releases_free(all, n);
    vc_reply_ok(reply, "%zu releases of site \"%s\"; current: %s", n, s->name, current[0] ? current : "none");
    vc_reply_field(reply, "current", "%s", current);
}
