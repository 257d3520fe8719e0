/* A signed release handed to one vc-fed (vc_push.h). */
#include "vc_push.h"
#include "vc_ctl.h"
#include "vc_delta.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (512 << 10) /* under NATS's default payload limit of 1 MiB */

/* A command; its failure said in p->why. 0 and *r, or -1. */
static int call(vc_push_t *p, const char *verb, const char *const *args, size_t nargs, const void *payload, size_t plen,
                Vc__Reply **r)
{
    *r = NULL;
    if (p->call(p->arg, verb, args, nargs, payload, plen, r, p->why, sizeof(p->why)) < 0 || *r == NULL)
        return -1;
    if (!(*r)->ok) {
        snprintf(p->why, sizeof(p->why), "%s", (*r)->message);
        p->refused = 1;
        return -1;
    }
    return 0;
}

static void said(vc_push_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void said(vc_push_t *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof(p->why), fmt, ap);
    va_end(ap);
}

/* The manifest as a delta against the node's current release's: 0 with
 * p->base, or -1 (it goes whole: the node has none yet, or it is big). */
static int manifest_delta(vc_push_t *p, vc_delta_out_t *delta)
{
    Vc__Reply *r = NULL;
    const char *args[] = {p->rel->site};
    char why[sizeof(p->why)];
    int rc = p->call(p->arg, "manifest", args, 1, NULL, 0, &r, why, sizeof(why)) == 0 && r && r->ok ? 0 : -1;
    vc_delta_in_t in = {-1, p->text, p->len};
    if (rc == 0)
        p->received += r->payload.len;
    if (rc == 0 && r->payload.len && vc_reply_get(r, "release"))
        rc = vc_delta_make(r->payload.data, r->payload.len, in, p->len / 2, delta);
    else
        rc = -1;
    if (rc == 0)
        snprintf(p->base, sizeof(p->base), "%s", vc_reply_get(r, "release"));
    if (r)
        vc__reply__free_unpacked(r, NULL);
    return rc;
}

static const char *file_with(const vc_push_t *p, const char *hex)
{
    unsigned char hash[VC_RELEASE_HASH];
    if (hex == NULL || vc_release_unhex(hex, hash, sizeof(hash)) < 0)
        return NULL;
    for (size_t i = 0; i < p->rel->n; i++)
        if (p->rel->entries[i].kind == VC_REL_FILE && !memcmp(p->rel->entries[i].hash, hash, sizeof(hash)))
            return p->rel->entries[i].path;
    return NULL;
}

/* A needed file as a delta against the node's file at its path, if the
 * node offered a signature (in stage's payload) and the delta is small:
 * 0 if sent and taken; else -1, and it goes whole. */
static int send_delta(vc_push_t *p, int fd, const Vc__Record *need, const Vc__Reply *stage)
{
    const char *off = vc_record_get(need, "sig_off"), *len = vc_record_get(need, "sig_len");
    struct stat st;
    if (off == NULL || len == NULL || fstat(fd, &st) != 0)
        return -1;
    size_t o = strtoull(off, NULL, 10), n = strtoull(len, NULL, 10);
    if (o > stage->payload.len || n > stage->payload.len - o)
        return -1;
    vc_delta_out_t delta = {0};
    vc_delta_in_t in = {fd, NULL, 0};
    if (vc_delta_make(stage->payload.data + o, n, in, (size_t)st.st_size / 2, &delta) < 0)
        return -1;
    const char *args[] = {p->rel->site, p->rel->id, vc_record_get(need, "hash")};
    Vc__Reply *r = NULL;
    int rc = call(p, "delta", args, 3, delta.data, delta.len, &r);
    if (rc == 0)
        p->sent += delta.len;
    if (r)
        vc__reply__free_unpacked(r, NULL);
    free(delta.data);
    if (rc < 0)
        lseek(fd, 0, SEEK_SET); /* whole, from the start */
    return rc;
}

static int send_file(vc_push_t *p, const Vc__Record *need, const Vc__Reply *stage)
{
    const char *hex = vc_record_get(need, "hash");
    const char *rel = file_with(p, hex);
    if (rel == NULL) {
        said(p, "the node asked for %s, which the release does not hold", hex ? hex : "a file without a hash");
        return -1;
    }
    char *path = vc_asprintf("%s/%s", p->root, rel);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), rc = 0;
    if (fd < 0) {
        said(p, "cannot read \"%s\": %s", path, strerror(errno));
        free(path);
        return -1;
    }
    free(path);
    if (send_delta(p, fd, need, stage) == 0) {
        close(fd);
        return 0;
    }
    char *buf = vc_malloc(CHUNK);
    uint64_t off = 0;
    for (ssize_t n; rc == 0 && (n = read(fd, buf, CHUNK)) > 0; off += (uint64_t)n) {
        char offs[24];
        snprintf(offs, sizeof(offs), "%llu", (unsigned long long)off);
        const char *args[] = {p->rel->site, p->rel->id, hex, offs};
        Vc__Reply *r = NULL;
        rc = call(p, "object", args, 4, buf, (size_t)n, &r);
        if (r)
            vc__reply__free_unpacked(r, NULL);
        p->sent += (uint64_t)n;
    }
    free(buf);
    close(fd);
    return rc;
}

int vc_push_stage(vc_push_t *p)
{
    vc_delta_out_t mdelta = {0};
    int as_delta = manifest_delta(p, &mdelta) == 0;
    const char *args[3] = {p->rel->site, p->sig_hex, p->base};
    Vc__Reply *r = NULL;
    int rc = call(p, "stage", args, as_delta ? 3 : 2, as_delta ? mdelta.data : (const void *)p->text,
                  as_delta ? mdelta.len : p->len, &r);
    p->manifest_bytes = as_delta ? mdelta.len : p->len;
    p->sent += p->manifest_bytes;
    free(mdelta.data);
    if (rc < 0) {
        if (r)
            vc__reply__free_unpacked(r, NULL);
        return -1;
    }
    p->received += r->payload.len;
    p->nneed = r->n_records;
    for (size_t i = 0; i < r->n_records; i++) {
        const char *size = vc_record_get(r->records[i], "size");
        p->need_bytes += size ? strtoull(size, NULL, 10) : 0;
    }
    const char *linked = vc_reply_get(r, "linked");
    p->linked = linked ? strtoull(linked, NULL, 10) : 0;
    if (p->progress)
        p->progress(p, 0);
    for (size_t i = 0; rc == 0 && i < r->n_records; i++) {
        rc = send_file(p, r->records[i], r);
        if (rc == 0 && p->progress)
            p->progress(p, i + 1);
    }
    vc__reply__free_unpacked(r, NULL);
    r = NULL; /* a file that failed skips the commit: nothing more to free */
    const char *ids[2] = {p->rel->site, p->rel->id};
    if (rc == 0)
        rc = call(p, "commit", ids, 2, NULL, 0, &r);
    if (r)
        vc__reply__free_unpacked(r, NULL);
    return rc;
}
