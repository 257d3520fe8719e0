/*
 * Staging a release (fed.h): `stage` checks the signed manifest and lays
 * out what the node has (files with the same bytes and mode in an earlier
 * release are hard-linked), `object` takes the bytes of the others, and
 * `commit` checks every file against the manifest before the release is
 * staged. Until then it is DEPLOY_TO/releases/.staging-ID, which nothing
 * serves; a staging nobody adds to for fed.stage_timeout is dropped.
 */
#include "fed.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int unlock_dir(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (type == FTW_D)
        chmod(path, 0700); /* a release's 0555 directory: its entries can go */
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

int fed_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    nftw(path, unlock_dir, 16, FTW_PHYS);
    return nftw(path, remove_one, 16, FTW_PHYS | FTW_DEPTH);
}

void stage_free(fed_staging_t *s, int remove)
{
    if (s == NULL)
        return;
    VC_CHECK_OBJ(s, STAGING_MAGIC);
    s->magic = 0;
    if (remove) {
        fed_remove_tree(s->tree);
        fed_remove_tree(s->objects);
    }
    free(s->site);
    free(s->id);
    free(s->key);
    vc_release_free(&s->rel);
    for (size_t i = 0; i < s->nneed; i++)
        free(s->need[i].base);
    free(s->manifest);
    free(s->tree);
    free(s->objects);
    free(s->need);
    free(s);
}

fed_staging_t **stage_find(fed_t *f, const char *site, const char *id)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    for (size_t i = 0; i < FED_STAGINGS; i++)
        if (f->staging[i] && strcmp(f->staging[i]->site, site) == 0 && strcmp(f->staging[i]->id, id) == 0)
            return &f->staging[i];
    return NULL;
}

/* Whether a release path is a shared one or inside one: those come from
 * DEPLOY_TO/shared, never from the deployer. */
int fed_is_shared(const vc_site_t *s, const char *path)
{
    for (size_t i = 0; i < s->nshared; i++) {
        size_t n = strlen(s->shared[i]);
        if (strncmp(path, s->shared[i], n) == 0 && (path[n] == '\0' || path[n] == '/'))
            return 1;
    }
    return 0;
}

void stage_fail(fed_t *f, Vc__Reply *reply, const char *site, const char *id, const char *fmt, ...)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    f->refused++;
    vc_log(VC_LOG_ERR, "stage", "site \"%s\" release %s: %s", site, id ? id : "?", why);
    vc_bus_publish(f->d.bus, VC_EVENT(FED_RELEASE_FAILED), VC__SEVERITY__ERROR, "site", site, "release", id ? id : "",
                   "error", why, NULL);
    vc_reply_fail(reply, "%s", why);
}

/* A file an earlier release has: its bytes and mode, and where it is. */
typedef struct known {
    unsigned char hash[VC_RELEASE_HASH];
    unsigned mode;
    uint64_t size;
    char *path;
} known_t;

static int known_cmp(const void *a, const void *b)
{
    const known_t *x = a, *y = b;
    int c = memcmp(x->hash, y->hash, VC_RELEASE_HASH);
    return c ? c : (int)x->mode - (int)y->mode;
}

static size_t known_files(fed_t *f, const vc_site_t *s, known_t **out)
{
    Vc__Release **all;
    size_t n = releases_of(f, s->name, &all), nk = 0, cap = 0;
    known_t *k = NULL;
    for (size_t i = 0; i < n; i++) {
        vc_release_t rel;
        char why[256];
        if (vc_release_parse((const char *)all[i]->manifest.data, all[i]->manifest.len, &rel, why, sizeof(why)) < 0)
            continue;
        for (size_t e = 0; e < rel.n; e++)
            if (rel.entries[e].kind == VC_REL_FILE && !fed_is_shared(s, rel.entries[e].path)) {
                k = vc_grow(k, &cap, nk + 1, sizeof(*k), 256);
                memcpy(k[nk].hash, rel.entries[e].hash, VC_RELEASE_HASH);
                k[nk].mode = rel.entries[e].mode;
                k[nk].size = rel.entries[e].size;
                k[nk++].path = vc_asprintf("%s/releases/%s/%s", s->deploy_to, all[i]->id, rel.entries[e].path);
            }
        vc_release_free(&rel);
    }
    releases_free(all, n);
    if (nk > 1) /* qsort() and bsearch() take no NULL, even for nothing */
        qsort(k, nk, sizeof(*k), known_cmp);
    *out = k;
    return nk;
}

static int need_cmp(const void *a, const void *b)
{
    return memcmp(((const fed_need_t *)a)->hash, ((const fed_need_t *)b)->hash, VC_RELEASE_HASH);
}

/* Lays out the tree: directories, links, files from earlier releases; the
 * rest is needed. 0, or -1 with why. */
static int lay_out(fed_t *f, const vc_site_t *site, fed_staging_t *s, char *why, size_t wlen)
{
    known_t *k;
    size_t nk = known_files(f, site, &k), cap = 0;
    char current[VC_RELEASE_ID_MAX + 1];
    fed_current(site, current, sizeof(current));
    int rc = 0;
    for (size_t i = 0; i < s->rel.n && rc == 0; i++) {
        const vc_rel_entry_t *e = &s->rel.entries[i];
        if (fed_is_shared(site, e->path))
            continue;
        char *dst = vc_asprintf("%s/%s", s->tree, e->path);
        if (e->kind == VC_REL_DIR)
            rc = mkdir(dst, 0700);
        else if (e->kind == VC_REL_LINK)
            rc = symlink(e->target, dst);
        else if (e->size == 0) {
            int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            rc = fd < 0 ? -1 : close(fd);
        } else {
            known_t key = {.mode = e->mode}, *hit;
            memcpy(key.hash, e->hash, VC_RELEASE_HASH);
            hit = nk ? bsearch(&key, k, nk, sizeof(*k), known_cmp) : NULL;
            struct stat st;
            if (hit && lstat(hit->path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == e->size &&
                link(hit->path, dst) == 0) {
                s->files_linked++;
            } else {
                s->need = vc_grow(s->need, &cap, s->nneed + 1, sizeof(*s->need), 64);
                fed_need_t *n = &s->need[s->nneed++];
                memset(n, 0, sizeof(*n));
                memcpy(n->hash, e->hash, VC_RELEASE_HASH);
                n->size = e->size;
                /* The same path in the current release: what changed in it
                 * may come as a delta. Not worth it for a small file. */
                char *base = current[0] ? vc_asprintf("%s/releases/%s/%s", site->deploy_to, current, e->path) : NULL;
                if (base && e->size >= 1024 && lstat(base, &st) == 0 && S_ISREG(st.st_mode))
                    n->base = base;
                else
                    free(base);
            }
        }
        if (rc != 0)
            snprintf(why, wlen, "cannot make \"%s\": %s", dst, strerror(errno));
        free(dst);
    }
    for (size_t i = 0; i < nk; i++)
        free(k[i].path);
    free(k);
    /* One entry a hash: the same bytes at two paths come once. */
    if (s->nneed > 1)
        qsort(s->need, s->nneed, sizeof(*s->need), need_cmp);
    size_t u = 0;
    for (size_t i = 0; i < s->nneed; i++)
        if (u == 0 || need_cmp(&s->need[u - 1], &s->need[i]) != 0)
            s->need[u++] = s->need[i];
        else
            free(s->need[i].base);
    s->nneed = u;
    return rc;
}

static int free_slot(fed_t *f)
{
    for (int i = 0; i < FED_STAGINGS; i++)
        if (f->staging[i] == NULL)
            return i;
    return -1;
}

static void stage_with(fed_t *f, const vc_site_t *site, const char *text, size_t len, const char *sig_hex,
                       Vc__Reply *reply);

void stage_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    if (cmd->n_args != 2 && cmd->n_args != 3) {
        vc_reply_fail(reply, "usage: stage SITE SIGNATURE [BASE], with the manifest (or its delta against release "
                             "BASE's) as the payload");
        return;
    }
    const vc_site_t *site = fed_site(f, cmd->args[0], reply);
    if (site == NULL)
        return;
    const char *text = (const char *)cmd->payload.data;
    size_t len = cmd->payload.len;
    char why[512];
    char *patched = NULL;
    if (cmd->n_args == 3) {
        patched = deltas_manifest(f, site->name, cmd->args[2], text, len, &len, why, sizeof(why));
        if (patched == NULL)
            return stage_fail(f, reply, site->name, NULL, "%s", why);
        text = patched;
    }
    stage_with(f, site, text, len, cmd->args[1], reply);
    free(patched);
}

/* The manifest text, whole. */
static void stage_with(fed_t *f, const vc_site_t *site, const char *text, size_t len, const char *sig_hex,
                       Vc__Reply *reply)
{
    unsigned char sig[VC_RELEASE_SIGNATURE];
    char key[VC_RELEASE_NAME_MAX + 1], why[512];
    if (vc_release_unhex(sig_hex, sig, sizeof(sig)) < 0)
        return stage_fail(f, reply, site->name, NULL, "the signature is not %d hex digits", 2 * VC_RELEASE_SIGNATURE);
    if (trust_signer(f, text, len, sig, key, sizeof(key)) < 0)
        return stage_fail(
            f, reply, site->name, NULL,
            "the manifest is not signed by a key this node trusts (vc trust list; vc trust add NAME KEY)");
    fed_staging_t *s = vc_calloc(1, sizeof(*s));
    s->magic = STAGING_MAGIC;
    if (vc_release_parse(text, len, &s->rel, why, sizeof(why)) < 0) {
        stage_free(s, 0);
        return stage_fail(f, reply, site->name, NULL, "%s", why);
    }
    if (strcmp(s->rel.site, site->name) != 0) {
        stage_fail(f, reply, site->name, s->rel.id, "the manifest is for site \"%s\"", s->rel.site);
        return stage_free(s, 0);
    }
    Vc__Release *had = releases_get(f, site->name, s->rel.id);
    if (had) {
        vc_reply_ok(reply, "release %s of site \"%s\" is staged already", had->id, site->name);
        vc_reply_field(reply, "release", "%s", had->id);
        vc_reply_field(reply, "need", "0");
        vc_reply_field(reply, "staged", "yes");
        vc__release__free_unpacked(had, NULL);
        return stage_free(s, 0);
    }
    fed_staging_t **again = stage_find(f, site->name, s->rel.id);
    if (again) { /* the deployer starts over */
        stage_free(*again, 1);
        *again = NULL;
    }
    int slot = free_slot(f);
    if (slot < 0) {
        stage_fail(f, reply, site->name, s->rel.id, "%d releases are staging already", FED_STAGINGS);
        return stage_free(s, 0);
    }
    s->site = vc_strdup(site->name);
    s->id = vc_strdup(s->rel.id);
    s->key = vc_strdup(key);
    s->manifest = vc_strndup(text, len);
    s->mlen = len;
    memcpy(s->sig, sig, sizeof(sig));
    char *releases = vc_asprintf("%s/releases", site->deploy_to);
    mkdir(releases, 0755);
    s->tree = vc_asprintf("%s/.staging-%s", releases, s->id);
    s->objects = vc_asprintf("%s/.objects-%s", releases, s->id);
    free(releases);
    fed_remove_tree(s->tree);
    fed_remove_tree(s->objects);
    if (mkdir(s->tree, 0700) != 0 || mkdir(s->objects, 0700) != 0) {
        stage_fail(f, reply, site->name, s->id,
                   "cannot write in \"%s/releases\": %s (it is vc-fed's: the suite's user)", site->deploy_to,
                   strerror(errno));
        return stage_free(s, 1);
    }
    if (lay_out(f, site, s, why, sizeof(why)) < 0) {
        stage_fail(f, reply, site->name, s->id, "%s", why);
        return stage_free(s, 1);
    }
    s->touched_ms = (int64_t)vc_mono_ms();
    f->staging[slot] = s;
    char nfiles[24], nneed[24];
    snprintf(nfiles, sizeof(nfiles), "%zu", s->rel.n);
    snprintf(nneed, sizeof(nneed), "%zu", s->nneed);
    vc_log(VC_LOG_NOTICE, "stage",
           "site \"%s\" release %s signed by \"%s\": %zu entries, %llu files linked, %zu needed", s->site, s->id, key,
           s->rel.n, (unsigned long long)s->files_linked, s->nneed);
    vc_bus_publish(f->d.bus, VC_EVENT(FED_RELEASE_STAGING), VC__SEVERITY__INFO, "site", s->site, "release", s->id,
                   "key", key, "files", nfiles, "need", nneed, NULL);
    vc_reply_ok(reply, "release %s: %zu files to send, %llu linked from earlier releases", s->id, s->nneed,
                (unsigned long long)s->files_linked);
    vc_reply_field(reply, "release", "%s", s->id);
    vc_reply_field(reply, "need", "%zu", s->nneed);
    vc_reply_field(reply, "linked", "%llu", (unsigned long long)s->files_linked);
    for (size_t i = 0; i < s->nneed; i++) {
        char hex[2 * VC_RELEASE_HASH + 1];
        vc_release_hex(s->need[i].hash, VC_RELEASE_HASH, hex);
        Vc__Record *rec = vc_reply_record(reply);
        vc_record_field(rec, "hash", "%s", hex);
        vc_record_field(rec, "size", "%llu", (unsigned long long)s->need[i].size);
    }
    deltas_signatures(s, reply);
}

void stage_tick(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    int64_t now = (int64_t)vc_mono_ms();
    for (size_t i = 0; i < FED_STAGINGS; i++) {
        fed_staging_t *s = f->staging[i];
        if (s && now - s->touched_ms > f->cfg->stage_timeout_ms) {
            vc_log(VC_LOG_WARN, "stage", "site \"%s\" release %s: nothing came for %lld ms; dropped", s->site, s->id,
                   (long long)f->cfg->stage_timeout_ms);
            vc_bus_publish(f->d.bus, VC_EVENT(FED_RELEASE_FAILED), VC__SEVERITY__WARNING, "site", s->site, "release",
                           s->id, "error", "the deployer went silent (fed.stage_timeout)", NULL);
            stage_free(s, 1);
            f->staging[i] = NULL;
        }
    }
}

void stage_fini(fed_t *f)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    for (size_t i = 0; i < FED_STAGINGS; i++) {
        stage_free(f->staging[i], 1);
        f->staging[i] = NULL;
    }
}
