/* vc_config_for_pool: a pool's copy of the configuration keeps its
 * settings and loses every secret, from files, the environment and the
 * command line alike; the link keys only where its own links need them. */
#include "vc_config.h"
#include "config_source.h"
#include "vc_test.h"
#include "vc_util.h"

static void field(Vc__Field ***list, size_t *n, const char *key, const char *value)
{
    Vc__Field *f = vc_malloc(sizeof(*f));
    vc__field__init(f);
    f->key = vc_strdup(key);
    f->value = vc_strdup(value);
    *list = vc_realloc(*list, (*n + 1) * sizeof(**list));
    (*list)[(*n)++] = f;
}

/* Every byte of the version, packed, as the pool's file holds it. */
static int holds(const Vc__ConfigVersion *v, const char *needle)
{
    size_t len = protobuf_c_message_get_packed_size(&v->base);
    uint8_t *buf = vc_malloc(len + 1);
    protobuf_c_message_pack(&v->base, buf);
    buf[len] = '\0';
    int found = memmem(buf, len, needle, strlen(needle)) != NULL;
    free(buf);
    return found;
}

static Vc__ConfigVersion *made(const char *main_text, const char *site_text, const char *env_key)
{
    Vc__ConfigVersion *v = vc_malloc(sizeof(*v));
    vc__config_version__init(v);
    add(v, "/etc/vc/vc.conf", main_text, 0);
    add(v, "/etc/vc/sites-enabled/shop.conf", site_text, 1);
    if (env_key)
        field(&v->env, &v->n_env, env_key, "env-link-key-0123456789abcdef0123456789");
    field(&v->overrides, &v->n_overrides, "php.workers", "3");
    return v;
}

int main(void)
{
    char *root = vc_test_tmpdir(), err[1024];
    char *site = vc_asprintf("site: { hosts = [\"shop.test\"]; root = \"%s\";\n"
                             "  realtime_apps = [\"app1 key1 app-secret-value-1\"];\n"
                             "  mercure_subscriber_key = \"mercure-secret-value-2\"; };\n",
                             root);
    const char *main_ipc = "# comments go when a file loses a secret\n"
                           "cache: { purge_token = \"purge-secret-value-3\"; max_size = \"64M\"; };\n"
                           "acme: { eab_kid = \"kid\"; eab_hmac_key = \"eab-secret-value-4\"; };\n"
                           "php: { admin_ini = [\"memory_limit=77M\"]; };\n";

    /* Over the Unix socket the pool needs no key at all. */
    Vc__ConfigVersion *v = made(main_ipc, site, "VC_LINK_KEY");
    vc_config_t *cfg = vc_config_parse(v, "/data", err, sizeof(err));
    CHECK(cfg != NULL);
    Vc__ConfigVersion *mine = cfg ? vc_config_for_pool(v, cfg, "default", err, sizeof(err)) : NULL;
    CHECK(mine != NULL);
    if (mine) {
        CHECK(holds(v, "purge-secret-value-3")); /* the supervisor's, still whole */
        for (const char *s = "app-secret-value-1\0mercure-secret-value-2\0purge-secret-value-3\0"
                             "eab-secret-value-4\0env-link-key-\0";
             *s; s += strlen(s) + 1)
            CHECK(!holds(mine, s));
        CHECK(holds(mine, "memory_limit=77M") && holds(mine, "64M") && holds(mine, root));
        CHECK(mine->n_env == 0 && mine->n_overrides == 1);
        vc_config_t *pool = vc_config_parse(mine, "/data", err, sizeof(err));
        CHECK(pool != NULL && pool->php.workers == 3 && pool->link_key == NULL);
        CHECK(pool != NULL && pool->sites[0].nrealtime_apps == 0);
        vc_config_destroy(&pool);
    }
    vc_config_version_free(&mine);
    vc_config_destroy(&cfg);
    vc_config_version_free(&v);

    /* Over TCP it proves the link key to its fronts: that one it keeps. */
    char *main_tcp = vc_asprintf("%sendpoints: { php = \"tcp://127.0.0.1:7001\"; };\n", main_ipc);
    v = made(main_tcp, site, "VC_LINK_KEY");
    cfg = vc_config_parse(v, "/data", err, sizeof(err));
    CHECK(cfg != NULL);
    mine = cfg ? vc_config_for_pool(v, cfg, "default", err, sizeof(err)) : NULL;
    CHECK(mine != NULL && holds(mine, "env-link-key-") && !holds(mine, "purge-secret-value-3"));
    /* A named pool's link is its own endpoint: still over the socket. */
    Vc__ConfigVersion *other = cfg ? vc_config_for_pool(v, cfg, "shop", err, sizeof(err)) : NULL;
    CHECK(other != NULL && !holds(other, "env-link-key-"));
    vc_config_version_free(&other);
    vc_config_version_free(&mine);
    vc_config_destroy(&cfg);
    vc_config_version_free(&v);
    free(main_tcp);
    free(site);
    free(root);
    return vc_test_result("vc_config_withhold");
}
