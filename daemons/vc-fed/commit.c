/*
 * The files a staging needs (`object`), and the check that makes it a
 * release (`commit`): every file's bytes and mode as the manifest says,
 * the shared paths linked to DEPLOY_TO/shared, then one rename.
 */
#include "fed.h"
#include "vc_beneath.h"
#include "vc_delta.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static fed_staging_t *staging_of(fed_t *f, const Vc__Command *cmd, size_t nargs, Vc__Reply *reply)
{
    if (cmd->n_args != nargs) {
        vc_reply_fail(reply, "usage: %s",
                      !strcmp(cmd->verb, "object")  ? "object SITE RELEASE HASH OFFSET"
                      : !strcmp(cmd->verb, "delta") ? "delta SITE RELEASE HASH"
                                                    : "commit SITE RELEASE");
        return NULL;
    }
    fed_staging_t **s = stage_find(f, cmd->args[0], cmd->args[1]);
    if (s == NULL) {
        vc_reply_fail(reply,
                      "no release %s of site \"%s\" is staging (stage it first; an idle one is dropped "
                      "after fed.stage_timeout)",
                      cmd->args[1], cmd->args[0]);
        return NULL;
    }
    VC_CHECK_OBJ(*s, STAGING_MAGIC);
    (*s)->touched_ms = (int64_t)vc_mono_ms();
    return *s;
}

static int need_cmp(const void *a, const void *b)
{
    return memcmp(((const fed_need_t *)a)->hash, ((const fed_need_t *)b)->hash, VC_RELEASE_HASH);
}

static char *object_path(const fed_staging_t *s, const unsigned char *hash)
{
    char hex[2 * VC_RELEASE_HASH + 1];
    vc_release_hex(hash, VC_RELEASE_HASH, hex);
    return vc_asprintf("%s/%s", s->objects, hex);
}

static int hash_file(const char *path, unsigned char out[VC_RELEASE_HASH], uint64_t *size)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = vc_release_hash_fd(fd, out, size);
    close(fd);
    return rc;
}

/* The need a command names (args[2], a hash), or NULL with the reply set. */
static fed_need_t *need_of(fed_staging_t *s, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_need_t key, *n = NULL;
    if (vc_release_unhex(cmd->args[2], key.hash, VC_RELEASE_HASH) < 0 || s->nneed == 0 ||
        (n = bsearch(&key, s->need, s->nneed, sizeof(*s->need), need_cmp)) == NULL)
        vc_reply_fail(reply, "release %s needs no file %s", s->id, cmd->args[2]);
    return n;
}

void delta_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    fed_staging_t *s = staging_of(f, cmd, 3, reply);
    fed_need_t *n = s ? need_of(s, cmd, reply) : NULL;
    if (n == NULL)
        return;
    if (n->base == NULL || n->done) {
        vc_reply_fail(reply, "file %s: %s", cmd->args[2], n->done ? "it came already" : "no delta was offered for it");
        return;
    }
    int fd = open(n->base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    vc_delta_out_t out = {0};
    if (fd < 0 || vc_delta_apply(fd, cmd->payload.data, cmd->payload.len, n->size, &out) < 0 || out.len != n->size) {
        if (fd >= 0)
            close(fd);
        free(out.data);
        vc_reply_fail(reply, "the delta for %s does not rebuild it; send it whole", cmd->args[2]);
        return;
    }
    close(fd);
    char *path = object_path(s, n->hash);
    int ofd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int ok = ofd >= 0 && write(ofd, out.data, out.len) == (ssize_t)out.len;
    if (ofd >= 0)
        close(ofd);
    free(out.data);
    unsigned char got[VC_RELEASE_HASH];
    if (ok && hash_file(path, got, NULL) == 0 && memcmp(got, n->hash, VC_RELEASE_HASH) == 0) {
        n->received = n->size;
        n->done = 1;
        s->bytes_received += cmd->payload.len;
        vc_reply_ok(reply, "%zu bytes of delta rebuilt %llu", cmd->payload.len, (unsigned long long)n->size);
    } else {
        unlink(path);
        vc_reply_fail(reply, "the delta for %s does not rebuild it; send it whole", cmd->args[2]);
    }
    free(path);
}

void object_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    fed_staging_t *s = staging_of(f, cmd, 4, reply);
    if (s == NULL)
        return;
    fed_need_t *n = need_of(s, cmd, reply);
    if (n == NULL)
        return;
    char *end = NULL;
    unsigned long long off = strtoull(cmd->args[3], &end, 10);
    if (end == cmd->args[3] || *end || off != n->received || off + cmd->payload.len > n->size) {
        vc_reply_fail(reply, "file %s: %zu bytes at %s, where %llu of %llu came", cmd->args[2], cmd->payload.len,
                      cmd->args[3], (unsigned long long)n->received, (unsigned long long)n->size);
        return;
    }
    char *path = object_path(s, n->hash);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    ssize_t w = fd < 0 ? -1 : pwrite(fd, cmd->payload.data, cmd->payload.len, (off_t)off);
    if (fd >= 0)
        close(fd);
    if (w != (ssize_t)cmd->payload.len) {
        vc_reply_fail(reply, "cannot write \"%s\": %s", path, w < 0 ? strerror(errno) : "short write");
        free(path);
        return;
    }
    n->received += cmd->payload.len;
    s->bytes_received += cmd->payload.len;
    unsigned char got[VC_RELEASE_HASH];
    if (n->received == n->size) {
        if (hash_file(path, got, NULL) < 0 || memcmp(got, n->hash, VC_RELEASE_HASH) != 0) {
            n->received = 0; /* what came is not what was signed: from the start */
            if (truncate(path, 0) != 0)
                unlink(path);
            vc_reply_fail(reply, "the bytes sent for %s do not have its hash; send it again", cmd->args[2]);
            free(path);
            return;
        }
        n->done = 1;
    }
    free(path);
    vc_reply_ok(reply, "%llu of %llu bytes", (unsigned long long)n->received, (unsigned long long)n->size);
}

static int copy_file(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int out = in < 0 ? -1 : open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    char buf[65536];
    ssize_t n = 0;
    while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
        if (write(out, buf, (size_t)n) != n) {
            n = -1;
            break;
        }
    int rc = in >= 0 && out >= 0 && n == 0 ? 0 : -1;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return rc;
}

/* One file of the release, in place and checked: bytes, size, mode. */
static int place_file(fed_staging_t *s, const vc_rel_entry_t *e, char *why, size_t wlen)
{
    char *dst = vc_asprintf("%s/%s", s->tree, e->path);
    struct stat st;
    int rc = 0;
    if (lstat(dst, &st) != 0) {
        /* From the objects: linked where the mode agrees, or is still the
         * object's own; copied where another path made it another mode. */
        char *src = object_path(s, e->hash);
        if (stat(src, &st) != 0)
            rc = -1;
        else if (st.st_nlink > 1 && (st.st_mode & 0777) != e->mode)
            rc = copy_file(src, dst);
        else
            rc = link(src, dst);
        if (rc != 0)
            snprintf(why, wlen, "file \"%s\" did not come (or cannot be placed: %s)", e->path, strerror(errno));
        free(src);
    }
    unsigned char got[VC_RELEASE_HASH];
    uint64_t size = 0;
    int fd = rc == 0 ? open(dst, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (rc == 0 && (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || vc_release_hash_fd(fd, got, &size) < 0 ||
                    size != e->size || memcmp(got, e->hash, VC_RELEASE_HASH) != 0)) {
        snprintf(why, wlen, "file \"%s\" does not match the manifest", e->path);
        rc = -1;
    }
    if (rc == 0 && (st.st_mode & 07777) != e->mode && fchmod(fd, e->mode) != 0) {
        snprintf(why, wlen, "cannot set the mode of \"%s\": %s", e->path, strerror(errno));
        rc = -1;
    }
    if (fd >= 0)
        close(fd);
    free(dst);
    return rc;
}

/* A shared path: a link to DEPLOY_TO/shared/PATH, relative, so it holds
 * wherever the directory is seen from (a pool's own mount namespace). */
static int link_shared(fed_staging_t *s, const char *path, char *why, size_t wlen)
{
    char *dst = vc_asprintf("%s/%s", s->tree, path);
    fed_remove_tree(dst);
    /* Its directories, if the release did not have them. */
    for (char *slash = strchr(dst + strlen(s->tree) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(dst, 0755);
        *slash = '/';
    }
    char target[8192] = "";
    for (const char *c = path; *c; c++)
        if (*c == '/')
            strcat(target, "../");
    snprintf(target + strlen(target), sizeof(target) - strlen(target), "../../shared/%s", path);
    int rc = symlink(target, dst);
    if (rc != 0)
        snprintf(why, wlen, "cannot link \"%s\" to the shared one: %s", path, strerror(errno));
    free(dst);
    return rc;
}

/* Each link of the release as the kernel follows it, shared paths' links
 * too: none may leave DEPLOY_TO (the manifest's own check, made when it
 * was read, keeps them inside the release but for the shared paths). */
static int links_stay(const vc_site_t *site, fed_staging_t *s, char *why, size_t wlen)
{
    int base = open(site->deploy_to, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (base < 0) {
        snprintf(why, wlen, "cannot open \"%s\": %s", site->deploy_to, strerror(errno));
        return -1;
    }
    const char *tree = s->tree + strlen(site->deploy_to) + 1;
    int rc = 0;
    for (size_t i = 0; i < s->rel.n && rc == 0; i++) {
        const vc_rel_entry_t *e = &s->rel.entries[i];
        if (e->kind != VC_REL_LINK || fed_is_shared(site, e->path))
            continue;
        char *rel = vc_asprintf("%s/%s", tree, e->path);
        if (vc_stays_beneath(base, rel) == 0) {
            snprintf(why, wlen, "the link \"%s\" -> \"%s\" leaves \"%s\" as the kernel follows it", e->path, e->target,
                     site->deploy_to);
            rc = -1;
        }
        free(rel);
    }
    close(base);
    return rc;
}

static int finish_tree(const vc_site_t *site, fed_staging_t *s, char *why, size_t wlen)
{
    for (size_t i = 0; i < s->rel.n; i++) {
        const vc_rel_entry_t *e = &s->rel.entries[i];
        if (e->kind == VC_REL_FILE && !fed_is_shared(site, e->path) && place_file(s, e, why, wlen) < 0)
            return -1;
    }
    for (size_t i = 0; i < site->nshared; i++)
        if (link_shared(s, site->shared[i], why, wlen) < 0)
            return -1;
    if (links_stay(site, s, why, wlen) < 0)
        return -1;
    /* Directories last: a 0555 one is filled by now. */
    for (size_t i = s->rel.n; i-- > 0;) {
        const vc_rel_entry_t *e = &s->rel.entries[i];
        char *dir = vc_asprintf("%s/%s", s->tree, e->path);
        int rc = e->kind == VC_REL_DIR && !fed_is_shared(site, e->path) ? chmod(dir, e->mode) : 0;
        free(dir);
        if (rc != 0) {
            snprintf(why, wlen, "cannot set the mode of \"%s\": %s", e->path, strerror(errno));
            return -1;
        }
    }
    if (chmod(s->tree, 0755) != 0) {
        snprintf(why, wlen, "cannot set the mode of the release: %s", strerror(errno));
        return -1;
    }
    /* On disk before anything may point at it. */
    int fd = open(s->tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        syncfs(fd);
        close(fd);
    }
    return 0;
}

void commit_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    fed_staging_t *s = staging_of(f, cmd, 2, reply);
    if (s == NULL)
        return;
    const vc_site_t *site = fed_site(f, s->site, reply);
    if (site == NULL)
        return;
    size_t missing = 0;
    for (size_t i = 0; i < s->nneed; i++)
        missing += !s->need[i].done;
    if (missing) {
        vc_reply_fail(reply, "release %s still needs %zu of its %zu files", s->id, missing, s->nneed);
        return;
    }
    char why[1024];
    fed_staging_t **slot = stage_find(f, s->site, s->id);
    char *final = vc_asprintf("%s/releases/%s", site->deploy_to, s->id);
    int rc = finish_tree(site, s, why, sizeof(why));
    if (rc == 0) {
        fed_remove_tree(final); /* a release no record names: a crash's leftover */
        if ((rc = rename(s->tree, final)) != 0)
            snprintf(why, sizeof(why), "cannot rename the staging to \"%s\": %s", final, strerror(errno));
    }
    Vc__Release r = VC__RELEASE__INIT;
    if (rc == 0) {
        r.site = s->site;
        r.id = s->id;
        r.state = "staged";
        r.manifest.data = (uint8_t *)s->manifest;
        r.manifest.len = s->mlen;
        r.signature.data = s->sig;
        r.signature.len = sizeof(s->sig);
        r.key = s->key;
        r.staged_ms = vc_wall_ms();
        r.bytes_received = s->bytes_received;
        r.files_linked = s->files_linked;
        if ((rc = releases_put(f, &r)) < 0)
            snprintf(why, sizeof(why), "the release could not be recorded: %s", vc_strerror(rc));
    }
    if (rc < 0) {
        stage_fail(f, reply, s->site, s->id, "%s", why);
        fed_remove_tree(final);
    } else {
        f->staged++;
        char bytes[24], linked[24];
        snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)s->bytes_received);
        snprintf(linked, sizeof(linked), "%llu", (unsigned long long)s->files_linked);
        vc_log(VC_LOG_NOTICE, "stage", "site \"%s\" release %s is staged: %s bytes received, %s files linked", s->site,
               s->id, bytes, linked);
        vc_bus_publish(f->d.bus, VC_EVENT(FED_RELEASE_STAGED), VC__SEVERITY__NOTICE, "site", s->site, "release", s->id,
                       "bytes_received", bytes, "files_linked", linked, NULL);
        vc_reply_ok(reply, "release %s is staged", s->id);
        vc_reply_field(reply, "bytes_received", "%s", bytes);
        vc_reply_field(reply, "files_linked", "%s", linked);
        together_committed(f, site, s->id); /* a node catching up switches now */
    }
    free(final);
    stage_free(s, 1);
    *slot = NULL;
}
