#include "vc_confstore.h"
#include "vc_test.h"
#include "vc_util.h"

static Vc__ConfigVersion *make(const char *text)
{
    Vc__ConfigVersion *v = vc_malloc(sizeof(*v));
    vc__config_version__init(v);
    Vc__ConfigSource *s = vc_malloc(sizeof(*s));
    vc__config_source__init(s);
    s->name = vc_strdup("vc.conf");
    s->text.data = (uint8_t *)vc_strdup(text);
    s->text.len = strlen(text);
    v->files = vc_malloc(sizeof(*v->files));
    v->files[0] = s;
    v->n_files = 1;
    return v;
}

int main(void)
{
    char *data = vc_test_tmpdir();
    char *state = vc_asprintf("%s/state", data);
    char err[512];
    /* Nothing stored yet: a clear reason. */
    CHECK(vc_confstore_load(data, err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "no configuration loaded");

    vc_store_t *st = vc_store_open(state, 1 << 20, err, sizeof(err));
    CHECK(st != NULL);
    for (int i = 1; i <= 5; i++) {
        char text[64];
        snprintf(text, sizeof(text), "php: { workers = %d; };\n", i);
        Vc__ConfigVersion *v = make(text);
        CHECK(vc_confstore_put(st, v, 3) == i);
        CHECK(v->version == (uint64_t)i);
        vc_config_version_free(&v);
    }
    int r = 0;
    Vc__ConfigVersion *cur = vc_confstore_current(st, &r);
    CHECK(cur != NULL && cur->version == 5);
    vc_config_version_free(&cur);
    vc_store_destroy(&st);

    /* The current version parses into the configuration daemons use. */
    vc_config_t *cfg = vc_confstore_load(data, err, sizeof(err));
    CHECK(cfg != NULL);
    CHECK(cfg && cfg->php.workers == 5 && cfg->version == 5);
    vc_config_destroy(&cfg);

    /* Old versions beyond `keep` are gone, the newest stay. */
    st = vc_store_open(state, 1 << 20, err, sizeof(err));
    MDB_txn *txn;
    MDB_dbi dbi;
    mdb_txn_begin(vc_store_env(st), NULL, MDB_RDONLY, &txn);
    mdb_dbi_open(txn, VC_DB_CONFIG, 0, &dbi);
    MDB_stat ms;
    mdb_stat(txn, dbi, &ms);
    CHECK(ms.ms_entries == 4); /* versions 3, 4, 5 and "current" */
    unsigned char key[8];
    vc_store_u64_key(2, key);
    MDB_val k = {8, key}, v;
    CHECK(mdb_get(txn, dbi, &k, &v) == MDB_NOTFOUND);
    mdb_txn_abort(txn);
    vc_store_destroy(&st);

    free(state);
    vc_test_rmtree(data);
    free(data);
    return vc_test_result("vc_confstore");
}
