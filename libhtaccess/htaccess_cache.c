/*
 * The compiled .htaccess of each directory of the sites' trees
 * (htaccess_cache.h): compiled when the file changes, looked at no more
 * than once a second, never parsed per request.
 */
#include "htaccess_cache.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BUCKETS 1024
#define MAX_ENTRIES 16384 /* past this (a client asking for many paths), the cache starts again */

typedef struct dir_entry {
    char *dir;
    struct dir_entry *next;
    uint64_t checked_s;
    struct stat seen; /* the .htaccess compiled, or st_ino 0 for none */
    int is_dir;       /* dir is a directory (else nothing below it has a .htaccess) */
    htaccess_t *h;
} dir_entry_t;

static dir_entry_t *buckets[BUCKETS];
static size_t nentries;
static uint64_t generation;

static void flush(void)
{
    for (size_t i = 0; i < BUCKETS; i++)
        for (dir_entry_t *e = buckets[i], *next; e; e = next) {
            next = e->next;
            htaccess_free(e->h);
            free(e->dir);
            free(e);
        }
    memset(buckets, 0, sizeof(buckets));
    nentries = 0;
    generation++;
}

static void compile(dir_entry_t *e, const char *file, const struct stat *st)
{
    size_t len;
    char *text = vc_read_file(file, &len);
    htaccess_free(e->h);
    /* There, but not readable by the front: closed, as Apache answers. */
    e->h = text ? htaccess_compile(file, text, len) : htaccess_closed(file, strerror(errno));
    e->seen = *st;
    free(text);
    if (htaccess_unreadable(e->h))
        vc_log(VC_LOG_WARN, "htaccess", "%s: %s and what is below it answer 403", htaccess_unreadable(e->h), e->dir);
    for (size_t i = 0; htaccess_ignored(e->h, i); i++)
        vc_log(VC_LOG_NOTICE, "htaccess",
               "%s: not applied (docs/front.md lists the .htaccess directives the front applies; vc configtest "
               "lists those it does not)",
               htaccess_ignored(e->h, i));
}

static dir_entry_t *entry(const char *dir, size_t len, uint64_t now);

const htaccess_t *htaccess_cached(const char *dir, size_t len, uint64_t now, int *is_dir)
{
    dir_entry_t *e = entry(dir, len, now);
    if (is_dir)
        *is_dir = e->is_dir;
    return e->h;
}

/* Eight bytes at a time: asked for several directories a request, whose
 * paths share a long root. */
static uint32_t dir_hash(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ len, w;
    for (; len >= 8; s += 8, len -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s, len);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53u;
    return (uint32_t)(h ^ (h >> 29));
}

/* dir's entry, looked at again if it was not this second. */
static dir_entry_t *entry(const char *dir, size_t len, uint64_t now)
{
    uint32_t hash = dir_hash(dir, len);
    dir_entry_t **slot = &buckets[hash % BUCKETS], *e = *slot;
    while (e && (strncmp(e->dir, dir, len) != 0 || e->dir[len] != '\0'))
        e = e->next;
    if (e && e->checked_s == now)
        return e;
    if (e == NULL) {
        if (nentries >= MAX_ENTRIES) {
            flush();
            slot = &buckets[hash % BUCKETS];
        }
        e = vc_calloc(1, sizeof(*e));
        e->dir = vc_strndup(dir, len);
        e->next = *slot;
        *slot = e;
        nentries++;
    }
    e->checked_s = now;
    char file[PATH_MAX];
    struct stat st;
    if ((size_t)snprintf(file, sizeof(file), "%s/.htaccess", e->dir) >= sizeof(file) || stat(file, &st) != 0) {
        int missing = errno == ENOENT;
        htaccess_free(e->h); /* gone, or never there */
        e->h = NULL;
        e->seen.st_ino = 0;
        e->is_dir = missing && stat(e->dir, &st) == 0 && S_ISDIR(st.st_mode);
        return e;
    }
    e->is_dir = 1;
    if (st.st_ino != e->seen.st_ino || st.st_dev != e->seen.st_dev || st.st_size != e->seen.st_size ||
        st.st_mtim.tv_sec != e->seen.st_mtim.tv_sec || st.st_mtim.tv_nsec != e->seen.st_mtim.tv_nsec) {
        compile(e, file, &st);
    }
    return e;
}

uint64_t htaccess_cache_generation(void)
{
    return generation;
}

int htaccess_none_above(const char *file, size_t root_len)
{
    const char *slash = strrchr(file, '/');
    size_t end = slash ? (size_t)(slash - file) : 0;
    uint64_t now = vc_mono_ms() / 1000;
    if (end < root_len)
        return 1;
    for (size_t at = root_len;;) {
        int is_dir;
        if (htaccess_cached(file, at, now, &is_dir) != NULL)
            return 0;
        if (!is_dir || at >= end)
            return 1;
        const char *next = memchr(file + at + 1, '/', end - at);
        at = next ? (size_t)(next - file) : end;
    }
}
