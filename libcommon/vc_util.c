#include "vc_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void vc_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "assertion \"%s\" failed at %s:%d in %s()\n", expr, file, line, func);
    abort();
}

static void *oom(size_t n)
{
    fprintf(stderr, "out of memory allocating %zu bytes\n", n);
    abort();
}

void *vc_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *vc_calloc(size_t count, size_t n)
{
    void *p = calloc(count ? count : 1, n ? n : 1);
    return p ? p : oom(count * n);
}

void *vc_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

void *vc_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (*cap >= need)
        return arr;
    size_t c = *cap ? *cap * 2 : first;
    while (c < need)
        c *= 2;
    *cap = c;
    return vc_realloc(arr, c * elem);
}

char *vc_strdup(const char *s)
{
    return vc_strndup(s, strlen(s));
}

char *vc_strndup(const char *s, size_t n)
{
    char *p = vc_malloc(n + 1);
    if (n > 0) /* s may be NULL for an empty protobuf bytes field */
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *vc_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    int n = vasprintf(&out, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(strlen(fmt));
    return out;
}

const char *vc_strerror(int err)
{
    if (err < 0)
        err = -err;
    switch (err) {
    case VC_ERR_CONFIG: return "configuration rejected";
    case VC_ERR_PROTO: return "malformed message";
    case VC_ERR_STORE: return "state store error";
    case VC_ERR_NOTFOUND: return "not found";
    case VC_ERR_TIMEOUT: return "timed out";
    case VC_ERR_NOTRUNNING: return "not running";
    case VC_ERR_GONE: return "it stopped before it answered";
    default: return strerror(err);
    }
}

uint64_t vc_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t vc_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t vc_boot_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t vc_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t vc_parse_size(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    int64_t mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1024, end++;
    else if (*end == 'm' || *end == 'M')
        mul = 1024 * 1024, end++;
    else if (*end == 'g' || *end == 'G')
        mul = 1024LL * 1024 * 1024, end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || v > INT64_MAX / mul)
        return -1;
    return v * mul;
}

int64_t vc_parse_duration_ms(const char *s)
{
    if (s == NULL || *s == '\0')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || v < 0)
        return -1;
    double mul;
    if (*end == '\0' || strcmp(end, "s") == 0)
        mul = 1000;
    else if (strcmp(end, "ms") == 0)
        mul = 1;
    else if (strcmp(end, "m") == 0)
        mul = 60e3;
    else if (strcmp(end, "h") == 0)
        mul = 3600e3;
    else if (strcmp(end, "d") == 0)
        mul = 86400e3;
    else
        return -1;
    double ms = v * mul;
    if (ms > 9.2e15)
        return -1;
    return (int64_t)ms;
}

void vc_json_escape(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (c < 0x20 || c == 0x7f)
                fprintf(out, "\\u%04x", c);
            else
                fputc(c, out);
        }
    }
}

int vc_mkdirs(const char *path, int mode)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

char *vc_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = vc_malloc(cap);
    for (;;) {
        if (n + 1 >= cap)
            buf = vc_realloc(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

unsigned vc_sockaddr_host(const struct sockaddr *sa, char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &a->sin_addr, buf, (socklen_t)len);
        return ntohs(a->sin_port);
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &a->sin6_addr, buf, (socklen_t)len);
        return ntohs(a->sin6_port);
    }
    return 0;
}

uint32_t vc_hash_bytes(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

uint32_t vc_hash_str(const char *s)
{
    return vc_hash_bytes(s, strlen(s));
}

int vc_program_on_path(const char *name)
{
    const char *path = getenv("PATH");
    char *dirs = vc_strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
    int found = 0;
    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *file = vc_asprintf("%s/%s", d, name);
        struct stat st;
        found = *d == '/' && stat(file, &st) == 0 && S_ISREG(st.st_mode) && access(file, X_OK) == 0;
        free(file);
    }
    free(dirs);
    return found;
}
