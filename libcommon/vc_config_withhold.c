/*
 * The configuration a PHP pool reads (vc_config_for_pool). A pool runs as
 * its own user, and so do its scripts: whatever its copy holds, one
 * site's PHP can read. It gets the settings and paths, never a key:
 * PHP publishes and purges through its front (publish.c, cache_purge.c),
 * which holds the apps' secrets and checks the site.
 */
#include "vc_config.h"
#include "vc_util.h"

#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every setting that holds a secret, as vc_config.c names it (a site
 * file's settings under "site."). A new secret goes here, or a pool can
 * read it. */
static const struct {
    const char *path;
    int link; /* kept where the pool's own links need it: 1 the request link, 2 ZeroMQ */
} secrets[] = {
    {"link_key", 1},
    {"curve_secret_key", 2},
    {"cache.purge_token", 0},
    {"acme.eab_hmac_key", 0},
    {"acme.eab_kid", 0},       /* not secret, but it goes with the key */
    {"site.realtime_apps", 0}, /* "ID KEY SECRET" */
    {"site.realtime_webhooks", 0},
    {"site.mercure_publisher_key", 0},
    {"site.mercure_subscriber_key", 0},
};

typedef struct keep {
    int request_link_tcp; /* the pool listens on tcp:// (fronts prove link_key) */
    int zmq_tcp;          /* it speaks ZeroMQ over tcp:// (CurveZMQ) */
} keep_t;

static int withheld(const char *path, const keep_t *k)
{
    for (size_t i = 0; i < VC_ARRAY_SIZE(secrets); i++)
        if (strcmp(secrets[i].path, path) == 0)
            return !((secrets[i].link == 1 && k->request_link_tcp) || (secrets[i].link == 2 && k->zmq_tcp));
    return 0;
}

int vc_config_is_secret(const char *path)
{
    keep_t none = {0, 0};
    return path && withheld(path, &none);
}

/* Removes the secrets below group (at prefix); returns how many. */
static int prune(config_setting_t *group, const char *prefix, const keep_t *k)
{
    int n = 0;
    for (int i = config_setting_length(group) - 1; i >= 0; i--) {
        config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        char path[160];
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", config_setting_name(s));
        if (withheld(path, k)) {
            config_setting_remove_elem(group, (unsigned)i);
            n++;
        } else if (config_setting_is_group(s)) {
            n += prune(s, path, k);
        }
    }
    return n;
}

/* The source's text without its secrets, or NULL if it does not parse. */
static char *prune_text(const ProtobufCBinaryData *text, const keep_t *k, int *pruned)
{
    char *in = vc_strndup((const char *)text->data, text->len);
    config_t lc;
    config_init(&lc);
    char *out = NULL;
    size_t outlen = 0;
    if (config_read_string(&lc, in) == CONFIG_TRUE) {
        *pruned = prune(config_root_setting(&lc), "", k);
        FILE *f = open_memstream(&out, &outlen);
        if (f) {
            config_write(&lc, f);
            fclose(f);
        }
    }
    config_destroy(&lc);
    free(in);
    return out;
}

static int is_tcp(const vc_config_t *cfg, const char *name)
{
    char *ep = vc_config_endpoint(cfg, name);
    int tcp = strncmp(ep, "tcp://", 6) == 0;
    free(ep);
    return tcp;
}

Vc__ConfigVersion *vc_config_for_pool(const Vc__ConfigVersion *v, const vc_config_t *cfg, const char *pool, char *err,
                                      size_t errlen)
{
    char link[48];
    snprintf(link, sizeof(link), "%s%s", strcmp(pool, "default") ? "php." : "php", strcmp(pool, "default") ? pool : "");
    keep_t k = {is_tcp(cfg, link), 0};
    /* Its events and its control endpoint: any ZeroMQ endpoint moved to
     * TCP may be one of them. */
    for (size_t i = 0; i < cfg->nendpoints; i++)
        if (strncmp(cfg->endpoints[i].name, "php", 3) != 0 && strncmp(cfg->endpoints[i].uri, "tcp://", 6) == 0)
            k.zmq_tcp = 1;
    /* A deep copy, through the wire format: everything in it malloc'd. */
    size_t len = protobuf_c_message_get_packed_size(&v->base);
    uint8_t *buf = vc_malloc(len ? len : 1);
    protobuf_c_message_pack(&v->base, buf);
    Vc__ConfigVersion *copy = vc__config_version__unpack(NULL, len, buf);
    free(buf);
    VC_ASSERT(copy != NULL);
    for (size_t i = 0; i < copy->n_files; i++) {
        int pruned = 0;
        char *text = prune_text(&copy->files[i]->text, &k, &pruned);
        if (text == NULL) {
            snprintf(err, errlen, "%s: cannot be read again to take its secrets out", copy->files[i]->name);
            vc__config_version__free_unpacked(copy, NULL);
            return NULL;
        }
        if (pruned) { /* else the text as written, comments and lines kept */
            free(copy->files[i]->text.data);
            copy->files[i]->text.data = (uint8_t *)text;
            copy->files[i]->text.len = strlen(text);
        } else {
            free(text);
        }
    }
    /* The environment's and the command line's settings, by the setting
     * each one names. */
    size_t kept = 0;
    for (size_t i = 0; i < copy->n_env; i++) {
        const char *path = vc_config_env_path(copy->env[i]->key);
        if (path && withheld(path, &k))
            vc__field__free_unpacked(copy->env[i], NULL);
        else
            copy->env[kept++] = copy->env[i];
    }
    copy->n_env = kept;
    kept = 0;
    for (size_t i = 0; i < copy->n_overrides; i++) {
        if (withheld(copy->overrides[i]->key, &k))
            vc__field__free_unpacked(copy->overrides[i], NULL);
        else
            copy->overrides[kept++] = copy->overrides[i];
    }
    copy->n_overrides = kept;
    return copy;
}
