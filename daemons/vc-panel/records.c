/* records.h: JSON records in the panel's LMDB databases. */
#include "records.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct one {
    const char *key;
    json_t *rec;      /* read */
    const char *text; /* to write; NULL: delete */
} one_t;

static int get_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    one_t *o = arg;
    MDB_val k = {strlen(o->key), (void *)o->key}, v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc != 0)
        return vc_store_err(rc);
    o->rec = json_loadb(v.mv_data, v.mv_size, 0, NULL); /* copied out of the map */
    return 0;
}

json_t *records_get(vc_store_t *st, const char *db, const char *key)
{
    one_t o = {.key = key};
    if (vc_store_read(st, db, get_fn, &o) < 0)
        return NULL;
    if (o.rec != NULL && !json_is_object(o.rec)) {
        json_decref(o.rec);
        return NULL;
    }
    return o.rec;
}

static int put_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    one_t *o = arg;
    MDB_val k = {strlen(o->key), (void *)o->key};
    if (o->text == NULL) {
        int rc = mdb_del(txn, dbi, &k, NULL);
        return rc == MDB_NOTFOUND ? 0 : vc_store_err(rc);
    }
    MDB_val v = {strlen(o->text), (void *)o->text};
    return vc_store_err(mdb_put(txn, dbi, &k, &v, 0));
}

int records_put(vc_store_t *st, const char *db, const char *key, const json_t *rec)
{
    char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
    one_t o = {.key = key, .text = text};
    int rc = vc_store_write(st, db, put_fn, &o);
    free(text);
    return rc;
}

static int all_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    json_t *all = arg;
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, dbi, &c);
    if (rc != 0)
        return vc_store_err(rc);
    MDB_val k, v;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        char *key = vc_strndup(k.mv_data, k.mv_size);
        json_t *rec = json_loadb(v.mv_data, v.mv_size, 0, NULL);
        if (rec)
            json_object_set_new(all, key, rec);
        free(key);
    }
    mdb_cursor_close(c);
    return 0;
}

json_t *records_all(vc_store_t *st, const char *db)
{
    json_t *all = json_object();
    vc_store_read(st, db, all_fn, all);
    return all;
}
