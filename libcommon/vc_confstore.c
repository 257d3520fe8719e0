#include "vc_confstore.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CURRENT_KEY "current"

struct put_ctx {
    Vc__ConfigVersion *v;
    unsigned keep;
};

static int put_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    struct put_ctx *c = arg;
    MDB_val ck = {sizeof(CURRENT_KEY) - 1, CURRENT_KEY}, cv;
    uint64_t next = 1;
    /* The highest numbered key is the last version ever stored (the
     * "current" key sorts after the 8-byte numbers' first byte 0x00). */
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc)
        return vc_store_err(rc);
    MDB_val k, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    uint64_t first = 0;
    while (rc == 0) {
        if (k.mv_size == 8) {
            uint64_t n = vc_store_u64_from_key(k.mv_data);
            if (first == 0)
                first = n;
            if (n >= next)
                next = n + 1;
        }
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    c->v->version = next;
    size_t len = vc__config_version__get_packed_size(c->v);
    unsigned char key[8];
    vc_store_u64_key(next, key);
    k.mv_size = 8;
    k.mv_data = key;
    v.mv_size = len;
    rc = mdb_put(txn, dbi, &k, &v, MDB_RESERVE);
    if (rc)
        return vc_store_err(rc);
    vc__config_version__pack(c->v, v.mv_data);
    cv.mv_size = 8;
    cv.mv_data = key;
    rc = mdb_put(txn, dbi, &ck, &cv, 0);
    if (rc)
        return vc_store_err(rc);
    /* Drop versions older than the newest `keep`. */
    for (uint64_t n = first; first && n + c->keep < next + 1 && n < next; n++) {
        unsigned char old[8];
        vc_store_u64_key(n, old);
        MDB_val ok = {8, old};
        mdb_del(txn, dbi, &ok, NULL);
    }
    return 0;
}

int64_t vc_confstore_put(vc_store_t *st, Vc__ConfigVersion *v, unsigned keep)
{
    struct put_ctx c = {v, keep ? keep : 1};
    int r = vc_store_write(st, VC_DB_CONFIG, put_fn, &c);
    return r < 0 ? r : (int64_t)v->version;
}

static int current_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    Vc__ConfigVersion **out = arg;
    MDB_val ck = {sizeof(CURRENT_KEY) - 1, CURRENT_KEY}, cv, v;
    int rc = mdb_get(txn, dbi, &ck, &cv);
    if (rc)
        return vc_store_err(rc);
    if (cv.mv_size != 8)
        return -VC_ERR_STORE;
    rc = mdb_get(txn, dbi, &cv, &v);
    if (rc)
        return vc_store_err(rc);
    /* Unpack copies out of the map, so the result outlives the txn. */
    *out = vc__config_version__unpack(NULL, v.mv_size, v.mv_data);
    return *out ? 0 : -VC_ERR_PROTO;
}

Vc__ConfigVersion *vc_confstore_current(vc_store_t *st, int *err)
{
    Vc__ConfigVersion *v = NULL;
    int r = vc_store_read(st, VC_DB_CONFIG, current_fn, &v);
    if (err)
        *err = r;
    return r < 0 ? NULL : v;
}

/* The PHP pool's copy (vc_config_pool_file): its user may not open LMDB. */
static Vc__ConfigVersion *read_pool_file(const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char *bytes = vc_read_file(path, &len);
    if (bytes == NULL) {
        snprintf(err, errlen, "cannot read the pool's configuration \"%s\": %s", path, strerror(errno));
        return NULL;
    }
    Vc__ConfigVersion *v = vc__config_version__unpack(NULL, len, (const uint8_t *)bytes);
    free(bytes);
    if (v == NULL)
        snprintf(err, errlen, "the pool's configuration \"%s\" is not a configuration version", path);
    return v;
}

static int from_files;
static char *files_dir;

void vc_confstore_use_files(const char *conf_dir)
{
    from_files = 1;
    free(files_dir);
    files_dir = conf_dir ? vc_strdup(conf_dir) : NULL;
}

static vc_config_t *load_files(const char *data_dir, char *err, size_t errlen)
{
    return vc_config_load(files_dir, data_dir, NULL, 0, NULL, err, errlen);
}

vc_config_t *vc_confstore_load(const char *data_dir, char *err, size_t errlen)
{
    if (from_files)
        return load_files(data_dir, err, errlen);
    const char *pool_file = getenv("VC_CONFIG_FILE");
    if (pool_file && *pool_file) {
        Vc__ConfigVersion *pv = read_pool_file(pool_file, err, errlen);
        if (pv == NULL)
            return NULL;
        vc_config_t *cfg = vc_config_parse(pv, data_dir, err, errlen);
        vc_config_version_free(&pv);
        return cfg;
    }
    char *dir = vc_asprintf("%s/state", data_dir);
    vc_store_t *st = vc_store_open(dir, 1 << 20, err, errlen);
    free(dir);
    if (st == NULL)
        return NULL;
    int r;
    Vc__ConfigVersion *v = vc_confstore_current(st, &r);
    vc_store_destroy(&st);
    if (v == NULL) {
        snprintf(err, errlen, "no configuration loaded under \"%s\" (%s): start the suite with `vc up`", data_dir,
                 vc_strerror(r));
        return NULL;
    }
    vc_config_t *cfg = vc_config_parse(v, data_dir, err, errlen);
    vc_config_version_free(&v);
    return cfg;
}
