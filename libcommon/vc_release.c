/* A release's manifest (vc_release.h). */
#include "vc_release.h"
#include "vc_util.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ENTRIES 2000000

int vc_release_path_ok(const char *p)
{
    if (p[0] == '\0' || p[0] == '/' || strlen(p) > 4096)
        return 0;
    for (const char *part = p;;) {
        size_t n = strcspn(part, "/");
        if (n == 0 || n > 255 || (n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.'))
            return 0;
        if (part[n] == '\0')
            return 1;
        part += n + 1;
    }
}

int vc_release_target_ok(const char *path, const char *target)
{
    if (target[0] == '\0' || target[0] == '/' || strlen(target) > 4096)
        return 0;
    /* Depth below the release of the link's directory, then each part. */
    int depth = 0;
    for (const char *c = path; *c; c++)
        depth += *c == '/';
    for (const char *part = target;;) {
        size_t n = strcspn(part, "/");
        if (n == 2 && part[0] == '.' && part[1] == '.') {
            if (--depth < 0)
                return 0;
        } else if (n > 0 && !(n == 1 && part[0] == '.'))
            depth++;
        if (part[n] == '\0')
            return 1;
        part += n + 1;
    }
}

int vc_release_id_ok(const char *id)
{
    size_t n = strlen(id);
    return n > 0 && n <= VC_RELEASE_ID_MAX && id[0] != '.' &&
           strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
}

void vc_release_hex(const unsigned char *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static int nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int vc_release_unhex(const char *hex, unsigned char *out, size_t n)
{
    if (strlen(hex) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

int vc_release_hash_fd(int fd, unsigned char out[VC_RELEASE_HASH], uint64_t *size)
{
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, VC_RELEASE_HASH);
    unsigned char buf[65536];
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        crypto_generichash_update(&h, buf, (size_t)n);
        total += (uint64_t)n;
    }
    crypto_generichash_final(&h, out, VC_RELEASE_HASH);
    if (size)
        *size = total;
    return 0;
}

void vc_release_sign(const char *text, size_t len, const unsigned char sk[VC_RELEASE_SECRET],
                     unsigned char sig[VC_RELEASE_SIGNATURE])
{
    crypto_sign_detached(sig, NULL, (const unsigned char *)text, len, sk);
}

int vc_release_verify(const char *text, size_t len, const unsigned char sig[VC_RELEASE_SIGNATURE],
                      const unsigned char pk[VC_RELEASE_PUBLIC])
{
    return crypto_sign_verify_detached(sig, (const unsigned char *)text, len, pk) == 0 ? 0 : -1;
}

/* Escaping: what would split a line or a field, and '%'. */
static int plain(unsigned char c)
{
    return c > ' ' && c < 127 && c != '%';
}

static void put_escaped(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (plain(*p))
            fputc(*p, f);
        else
            fprintf(f, "%%%02x", *p);
    }
}

/* Unescapes [s, s+n) into a new string; NULL if malformed or holding NUL. */
static char *unescape(const char *s, size_t n)
{
    char *out = vc_malloc(n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i], v = 0;
        if (c == '%') {
            char h[3] = {0};
            if (n - i < 3 || (h[0] = s[i + 1], h[1] = s[i + 2], vc_release_unhex(h, &v, 1) < 0) || v == 0) {
                free(out);
                return NULL;
            }
            *o++ = (char)v;
            i += 2;
        } else if (plain(c)) {
            *o++ = (char)c;
        } else {
            free(out);
            return NULL;
        }
    }
    *o = '\0';
    return out;
}

vc_rel_entry_t *vc_release_add(vc_release_t *r, vc_rel_kind_t kind, const char *path)
{
    r->entries = vc_grow(r->entries, &r->cap, r->n + 1, sizeof(*r->entries), 64);
    vc_rel_entry_t *e = &r->entries[r->n++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->path = vc_strdup(path);
    return e;
}

void vc_release_free(vc_release_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->entries[i].path);
        free(r->entries[i].target);
    }
    free(r->entries);
    free(r->site);
    free(r->id);
    free(r->signer);
    free(r->message);
    memset(r, 0, sizeof(*r));
}

char *vc_release_format(const vc_release_t *r, size_t *len)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (f == NULL)
        vc_assert_fail("open_memstream", __FILE__, __LINE__, __func__);
    fprintf(f, "velocity-release 1\nsite ");
    put_escaped(f, r->site);
    fprintf(f, "\nid ");
    put_escaped(f, r->id);
    fprintf(f, "\ncreated %lld\nsigner ", (long long)r->created);
    put_escaped(f, r->signer);
    fprintf(f, "\nmessage ");
    put_escaped(f, r->message ? r->message : "");
    fputc('\n', f);
    for (size_t i = 0; i < r->n; i++) {
        const vc_rel_entry_t *e = &r->entries[i];
        if (e->kind == VC_REL_DIR) {
            fprintf(f, "d %o ", e->mode);
        } else if (e->kind == VC_REL_FILE) {
            char hex[2 * VC_RELEASE_HASH + 1];
            vc_release_hex(e->hash, VC_RELEASE_HASH, hex);
            fprintf(f, "f %o %llu %s ", e->mode, (unsigned long long)e->size, hex);
        } else {
            fprintf(f, "l ");
        }
        put_escaped(f, e->path);
        if (e->kind == VC_REL_LINK) {
            fputc(' ', f);
            put_escaped(f, e->target);
        }
        fputc('\n', f);
    }
    fclose(f);
    *len = n;
    return text;
}

/* The line's fields, split at single spaces; at most max. */
static size_t fields(const char *line, size_t len, const char **f, size_t *flen, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i <= len && n < max + 1;) {
        size_t j = i;
        while (j < len && line[j] != ' ')
            j++;
        if (n == max)
            return max + 1; /* too many */
        f[n] = line + i;
        flen[n++] = j - i;
        i = j + 1;
    }
    return n;
}

static int number(const char *s, size_t n, int base, uint64_t max, uint64_t *out)
{
    if (n == 0 || n > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d >= (unsigned)base || v > (max - d) / (unsigned)base)
            return -1;
        v = v * (unsigned)base + d;
    }
    *out = v;
    return 0;
}

/* Whether path's parent is a directory listed (the release's root is).
 * The entries so far are sorted (checked before this): a binary search. */
static int parent_listed(const vc_release_t *r, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return 1;
    size_t n = (size_t)(slash - path), lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *p = r->entries[mid].path;
        int c = strncmp(p, path, n);
        if (c == 0 && p[n] != '\0')
            c = 1; /* longer than the parent: after it */
        if (c == 0)
            return r->entries[mid].kind == VC_REL_DIR;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static const char *const header[] = {"velocity-release", "site", "id", "created", "signer", "message"};

static int entry(vc_release_t *r, const char **f, size_t *fl, size_t nf, char *why, size_t wlen)
{
    char kind = fl[0] == 1 ? f[0][0] : 0;
    size_t want = kind == 'd' ? 3 : kind == 'f' ? 5 : kind == 'l' ? 3 : 0;
    if (want == 0 || nf != want) {
        snprintf(why, wlen, "not an entry (d MODE PATH, f MODE SIZE HASH PATH, l PATH TARGET)");
        return -1;
    }
    uint64_t mode = 0, size = 0;
    unsigned char hash[VC_RELEASE_HASH];
    if (kind != 'l' && number(f[1], fl[1], 8, 0777, &mode) < 0) {
        snprintf(why, wlen, "the mode is octal permission bits, 0777 at most");
        return -1;
    }
    if (kind == 'f' && number(f[2], fl[2], 10, VC_RELEASE_MAX_FILE, &size) < 0) {
        snprintf(why, wlen, "the size is a number of bytes, %lld at most", (long long)VC_RELEASE_MAX_FILE);
        return -1;
    }
    if (kind == 'f') {
        char hex[2 * VC_RELEASE_HASH + 1];
        if (fl[3] != 2 * VC_RELEASE_HASH ||
            (memcpy(hex, f[3], fl[3]), hex[fl[3]] = '\0', vc_release_unhex(hex, hash, VC_RELEASE_HASH) < 0)) {
            snprintf(why, wlen, "the hash is %d lowercase hex digits", 2 * VC_RELEASE_HASH);
            return -1;
        }
    }
    size_t pi = kind == 'f' ? 4 : kind == 'd' ? 2 : 1;
    char *path = unescape(f[pi], fl[pi]);
    char *target = kind == 'l' ? unescape(f[2], fl[2]) : NULL;
    int rc = -1;
    if (path == NULL || !vc_release_path_ok(path))
        snprintf(why, wlen, "the path is not one inside a release (relative, no \"..\")");
    else if (kind == 'l' && (target == NULL || !vc_release_target_ok(path, target)))
        snprintf(why, wlen, "the link's target is absolute or leaves the release");
    else if (r->n && strcmp(r->entries[r->n - 1].path, path) >= 0)
        snprintf(why, wlen, "entries are sorted by path, each once");
    else if (!parent_listed(r, path))
        snprintf(why, wlen, "its directory is not listed before it");
    else if (r->n >= MAX_ENTRIES)
        snprintf(why, wlen, "more than %d entries", MAX_ENTRIES);
    else
        rc = 0;
    if (rc == 0) {
        vc_rel_entry_t *e = vc_release_add(r, (vc_rel_kind_t)kind, path);
        e->mode = (unsigned)mode;
        e->size = size;
        if (kind == 'f')
            memcpy(e->hash, hash, sizeof(hash));
        e->target = target;
        target = NULL;
    }
    free(path);
    free(target);
    return rc;
}

int vc_release_parse(const char *text, size_t len, vc_release_t *out, char *why, size_t wlen)
{
    memset(out, 0, sizeof(*out));
    char reason[160] = "";
    size_t lineno = 0, pos = 0;
    int rc = 0;
    if (len > VC_RELEASE_MAX_BYTES) {
        snprintf(why, wlen, "the manifest is over %d bytes", VC_RELEASE_MAX_BYTES);
        return -1;
    }
    while (rc == 0 && pos < len) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        if (nl == NULL) {
            snprintf(reason, sizeof(reason), "the last line has no end");
            rc = -1;
            lineno++;
            break;
        }
        size_t n = (size_t)(nl - line);
        pos += n + 1;
        const char *f[6];
        size_t fl[6];
        size_t nf = fields(line, n, f, fl, 5);
        if (lineno < VC_ARRAY_SIZE(header)) {
            const char *name = header[lineno];
            if (nf != 2 || fl[0] != strlen(name) || memcmp(f[0], name, fl[0]) != 0) {
                snprintf(reason, sizeof(reason), "expected \"%s VALUE\"", name);
                rc = -1;
            } else if (lineno == 0 && !(fl[1] == 1 && f[1][0] == '1')) {
                snprintf(reason, sizeof(reason), "this node reads manifests of version 1");
                rc = -1;
            } else if (lineno == 3) {
                uint64_t t = 0;
                rc = number(f[1], fl[1], 10, INT64_MAX, &t);
                out->created = (int64_t)t;
                if (rc < 0)
                    snprintf(reason, sizeof(reason), "created is seconds since 1970");
            } else if (lineno > 0) {
                char *v = unescape(f[1], fl[1]);
                char **slot[] = {NULL, &out->site, &out->id, NULL, &out->signer, &out->message};
                *slot[lineno] = v;
                if (v == NULL || (lineno == 2 && !vc_release_id_ok(v)) || (lineno != 5 && v[0] == '\0')) {
                    snprintf(reason, sizeof(reason), "%s is not a valid value", name);
                    rc = -1;
                }
            }
        } else {
            rc = entry(out, f, fl, nf, reason, sizeof(reason));
        }
        lineno++;
    }
    if (rc == 0 && lineno < VC_ARRAY_SIZE(header)) {
        snprintf(reason, sizeof(reason), "the header ends early");
        lineno++;
        rc = -1;
    }
    if (rc < 0) {
        snprintf(why, wlen, "manifest line %zu: %s", lineno, reason);
        vc_release_free(out);
    } else if ((rc = vc_release_links_ok(out, why, wlen)) < 0) {
        vc_release_free(out);
    }
    return rc;
}
