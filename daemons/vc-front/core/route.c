#include "route.h"
#include "root_links.h"

#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

static route_kind_t refuse(route_t *out, route_kind_t kind, const char *why)
{
    out->kind = kind;
    out->why = why;
    return kind;
}

/* realpath() asks the kernel about every component of the path (a
 * readlink each): six system calls, with the stat, for a script five
 * directories deep, on every request. What they found is kept for a
 * second, as PHP keeps its realpath cache (for two minutes) and nginx its
 * open_file_cache: a file that appears shows at once (misses are not
 * kept), one that moves or goes shows within a second. Keyed by the joined
 * path; the containment check is not cached, it runs on every lookup. */
#define CACHE_SLOTS 512
#define CACHE_TTL_MS 1000

typedef struct cached {
    uint64_t hash, at_ms, epoch;
    char *joined, *real;
    int mode;
    int root_links; /* outside the root only through root's own links */
} cached_t;

static cached_t cache[CACHE_SLOTS];
/* Bumped when what is kept must go at once (release_watch.h). */
static uint64_t epoch;

void route_forget_real_paths(void)
{
    epoch++;
}

static uint64_t coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int below(const char *root, size_t root_len, const char *real)
{
    /* Inside means the root itself or below it, not a sibling such as
     * "/srv/www2" for the root "/srv/www". */
    size_t n = strlen(real);
    return n >= root_len && memcmp(real, root, root_len) == 0 && (n == root_len || real[root_len] == '/');
}

/* What a root reached through a link above it resolves to now (a deployed
 * site's DEPLOY_TO/current/public, docs/deploys.md), kept for a second as
 * the files' own real paths are: within a second of a switch, the new
 * release. NULL if it does not resolve. */
#define ROOT_SLOTS 16
static struct {
    uint64_t hash, at_ms, epoch;
    char root[PATH_MAX], real[PATH_MAX];
    int ok;
} real_roots[ROOT_SLOTS];

static const char *root_now(const route_site_t *site)
{
    uint64_t h = fnv1a(site->root), now = coarse_ms();
    __typeof__(real_roots[0]) *c = &real_roots[h % ROOT_SLOTS];
    if (c->hash == h && c->epoch == epoch && now - c->at_ms < CACHE_TTL_MS && strcmp(c->root, site->root) == 0)
        return c->ok ? c->real : NULL;
    if (site->root_len >= sizeof(c->root))
        return NULL;
    c->hash = h;
    c->at_ms = now;
    c->epoch = epoch;
    memcpy(c->root, site->root, site->root_len + 1);
    c->ok = realpath(site->root, c->real) != NULL;
    return c->ok ? c->real : NULL;
}

static int inside(const route_site_t *site, const char *real)
{
    const char *now = NULL;
    if (site->base && ((now = root_now(site)) == NULL || !below(site->base, strlen(site->base), now)))
        return 0;
    if (below(site->root, site->root_len, real))
        return 1;
    if (now == NULL)
        now = root_now(site);
    return now && strcmp(now, site->root) != 0 && below(now, strlen(now), real);
}

/* The real path and file type of joined (S_IFREG, S_IFDIR), 0 if missing
 * or neither; *root_links: it is outside the site's root only through
 * links root made (root_links.h). */
static int real_path(const route_site_t *site, const char *joined, char out[PATH_MAX], int *root_links)
{
    uint64_t h = fnv1a(joined), now = coarse_ms();
    cached_t *c = &cache[h % CACHE_SLOTS];
    if (c->joined && c->hash == h && c->epoch == epoch && now - c->at_ms < CACHE_TTL_MS &&
        strcmp(c->joined, joined) == 0) {
        strcpy(out, c->real);
        *root_links = c->root_links;
        return c->mode;
    }
    /* One stat first: a framework's routes are all misses (its front
     * controller then runs), and a miss costs realpath() a readlink for
     * each directory above it. stat() follows symlinks as realpath()
     * does, so the mode is the real file's. */
    struct stat st;
    if (stat(joined, &st) != 0)
        return 0;
    int mode = S_ISREG(st.st_mode) ? S_IFREG : S_ISDIR(st.st_mode) ? S_IFDIR : 0;
    if (mode == 0 || realpath(joined, out) == NULL)
        return 0;
    *root_links = !inside(site, out) && root_links_only(site->root, site->root_len, joined);
    free(c->joined);
    free(c->real);
    *c = (cached_t){.hash = h,
                    .at_ms = now,
                    .epoch = epoch,
                    .joined = strdup(joined),
                    .real = strdup(out),
                    .mode = mode,
                    .root_links = *root_links};
    if (c->joined == NULL || c->real == NULL) {
        free(c->joined);
        free(c->real);
        memset(c, 0, sizeof(*c));
    }
    return mode;
}

/* rel must begin with '/'. Resolves root + rel and checks, after symlinks,
 * that the result is inside root, or reached through root's own links.
 * Returns the file type (S_IFREG/S_IFDIR), 0 if missing or outside. */
static int resolve(const route_site_t *site, const char *rel, size_t rlen, char out[PATH_MAX])
{
    char joined[PATH_MAX];
    if (site->root_len + rlen + 1 > sizeof(joined))
        return 0;
    memcpy(joined, site->root, site->root_len);
    memcpy(joined + site->root_len, rel, rlen);
    joined[site->root_len + rlen] = '\0';
    int root_links = 0;
    int mode = real_path(site, joined, out, &root_links);
    if (mode == 0)
        return 0;
    for (size_t i = 0; i < site->nnever; i++)
        if (below(site->never[i], strlen(site->never[i]), out))
            return 0;
    return inside(site, out) || root_links ? mode : 0;
}

/* PHP source by another name (archives, templates, old extensions, any
 * case): never sent as a static file, as Debian's Apache configuration
 * denies them. A .php file in the right case runs; these are 404. */
static int php_source(const char *file)
{
    static const char *const exts[] = {".php",  ".phar", ".phtml", ".pht",  ".phps", ".php3",
                                       ".php4", ".php5", ".php7",  ".php8", ".inc"};
    const char *dot = strrchr(file, '.');
    if (dot == NULL || strchr(dot, '/'))
        return 0;
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
        if (strcasecmp(dot, exts[i]) == 0)
            return 1;
    return 0;
}

static int entry_script(const route_site_t *site, const char *name)
{
    if (site->nentry_scripts == 0)
        return 1;
    for (size_t i = 0; i < site->nentry_scripts; i++)
        if (fnmatch(site->entry_scripts[i], name, FNM_PATHNAME) == 0)
            return 1;
    return 0;
}

static int copy(char dst[PATH_MAX], const char *src, size_t len)
{
    if (len >= PATH_MAX)
        return -1;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

static route_kind_t php(const route_site_t *site, route_t *out, const char *script, size_t slen, const char *info,
                        size_t ilen, const char *doc_uri, size_t dlen)
{
    if (copy(out->script_name, script, slen) || copy(out->path_info, info, ilen) ||
        copy(out->document_uri, doc_uri, dlen))
        return refuse(out, ROUTE_BAD, "path too long");
    if (!entry_script(site, out->script_name + 1)) {
        /* An uploaded shell.php is as if it were not there, and so is a
         * missing one: the front controller, as nginx's try_files when
         * only the entry scripts go to PHP (Laravel's, Symfony's). */
        if (site->front_controller && strcmp(out->script_name, "/index.php") != 0)
            return php(site, out, "/index.php", 10, "", 0, "/index.php", 10);
        return refuse(out, ROUTE_NOT_FOUND, "not an entry script");
    }
    if (resolve(site, script, slen, out->file) != S_IFREG)
        return refuse(out, ROUTE_NOT_FOUND, "no such script");
    /* The real file must itself be a .php entry: a symlink "x.php" to a
     * data file is not a script. */
    size_t flen = strlen(out->file);
    if (flen < 4 || strcmp(out->file + flen - 4, ".php") != 0)
        return refuse(out, ROUTE_NOT_FOUND, "script is not a .php file");
    out->kind = ROUTE_PHP;
    return ROUTE_PHP;
}

static route_kind_t static_file(route_t *out, const char *file, const char *uri, size_t ulen)
{
    if (copy(out->document_uri, uri, ulen))
        return refuse(out, ROUTE_BAD, "path too long");
    memcpy(out->file, file, strlen(file) + 1);
    out->kind = ROUTE_STATIC;
    return ROUTE_STATIC;
}

/* mod_dir: the first of the site's index names that is a file, a script
 * run or a file served; none is 403 (no listing). */
static route_kind_t directory_index(const route_site_t *site, const char *path, size_t len, route_t *out)
{
    for (size_t i = 0; i < site->nindex; i++) {
        const char *name = site->index[i];
        char idx[PATH_MAX], file[PATH_MAX];
        int n = name[0] == '/' ? snprintf(idx, sizeof(idx), "%s", name)
                               : snprintf(idx, sizeof(idx), "%.*s%s", (int)len, path, name);
        if (n <= 0 || (size_t)n >= sizeof(idx) || strstr(idx, "/.") || resolve(site, idx, (size_t)n, file) != S_IFREG)
            continue;
        if (n > 4 && !strcmp(idx + n - 4, ".php"))
            return php(site, out, idx, (size_t)n, "", 0, idx, (size_t)n);
        if (php_source(file))
            continue;
        return static_file(out, file, idx, (size_t)n);
    }
    return refuse(out, ROUTE_FORBIDDEN, "directory without an index");
}

route_kind_t route_resolve(const route_site_t *site, const char *path, size_t len, route_t *out)
{
    out->why = NULL;
    out->script_name[0] = out->path_info[0] = out->document_uri[0] = out->file[0] = '\0';
    if (len == 0 || path[0] != '/')
        return refuse(out, ROUTE_BAD, "path does not start with /");
    if (memchr(path, '\0', len) != NULL)
        return refuse(out, ROUTE_BAD, "NUL in path");
    if (len >= PATH_MAX - 16)
        return refuse(out, ROUTE_BAD, "path too long");
    /* No segment may start with a dot: no dotfiles (.htaccess, .user.ini,
     * .env), no .git/, and no "." or ".." left by a broken normaliser.
     * RFC 8615's /.well-known/ is the one exception. */
    for (size_t i = 0; i + 1 < len; i++)
        if (path[i] == '/' && path[i + 1] == '.') {
            if (i == 0 && len >= 13 && memcmp(path, "/.well-known/", 13) == 0)
                continue;
            return refuse(out, ROUTE_NOT_FOUND, "dotfile");
        }
    /* site.deny: nginx's `location ^~ /PREFIX/ { deny all; }`. */
    for (size_t i = 0; i < site->ndeny; i++) {
        size_t n = strlen(site->deny[i]);
        if (len >= n && memcmp(path, site->deny[i], n) == 0)
            return refuse(out, ROUTE_FORBIDDEN, "denied by the site");
    }

    /* fastcgi_split_path_info ^(.+?\.php)(/.*)$ : the first ".php" with at
     * least one character before it that ends the path or precedes '/'. */
    for (size_t i = 2; i + 4 <= len; i++) {
        if (memcmp(path + i, ".php", 4) != 0 || path[i - 1] == '/')
            continue;
        size_t end = i + 4;
        if (end == len)
            return php(site, out, path, len, "", 0, path, len);
        /* nginx's try_files $fastcgi_script_name sets $uri to the script:
         * DOCUMENT_URI is the script, not the whole path. */
        if (path[end] == '/')
            return php(site, out, path, end, path + end, len - end, path, end);
    }

    char file[PATH_MAX];
    int kind = resolve(site, path, len, file);
    if (kind == S_IFREG) {
        if (php_source(file))
            return refuse(out, ROUTE_NOT_FOUND, "PHP source");
        return static_file(out, file, path, len);
    }
    if (kind == S_IFDIR) {
        if (path[len - 1] != '/')
            return refuse(out, ROUTE_DIR_REDIRECT, "directory");
        char idx[PATH_MAX];
        if (site->index_set)
            return directory_index(site, path, len, out);
        snprintf(idx, sizeof(idx), "%.*sindex.php", (int)len, path);
        if (resolve(site, idx, strlen(idx), file) == S_IFREG)
            return php(site, out, idx, strlen(idx), "", 0, idx, strlen(idx));
        snprintf(idx, sizeof(idx), "%.*sindex.html", (int)len, path);
        if (resolve(site, idx, strlen(idx), file) == S_IFREG)
            return static_file(out, file, idx, strlen(idx));
        return refuse(out, ROUTE_FORBIDDEN, "directory without an index");
    }
    if (site->front_controller && resolve(site, "/index.php", 10, file) == S_IFREG)
        return php(site, out, "/index.php", 10, "", 0, "/index.php", 10);
    return refuse(out, ROUTE_NOT_FOUND, "no such file");
}
