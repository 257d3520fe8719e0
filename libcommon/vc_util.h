/*
 * vc_util: the pieces every module needs: always-on asserts, allocation
 * that aborts on exhaustion, error codes, clocks and small string helpers.
 */
#ifndef VC_UTIL_H
#define VC_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Invariants of our own code. Stays compiled in under NDEBUG: a broken
 * invariant is a bug and continuing would corrupt state. Never use it on
 * anything that came from outside the process. */
#define VC_ASSERT(cond)                                                                                                \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            vc_assert_fail(#cond, __FILE__, __LINE__, __func__);                                                       \
    } while (0)

void vc_assert_fail(const char *expr, const char *file, int line, const char *func) __attribute__((noreturn));

/* A long-lived struct that modules hand each other carries a magic number
 * in its field "magic", checked where it comes back (Varnish's CHECK_OBJ):
 * a stale or wrong pointer stops the daemon there, not three calls later
 * with its state corrupted. Cleared when the struct is freed. */
#define VC_CHECK_OBJ(p, m) VC_ASSERT((p) != NULL && (p)->magic == (m))
/* The same for a pointer that may be NULL on purpose. */
#define VC_CHECK_OBJ_OR_NULL(p, m) VC_ASSERT((p) == NULL || (p)->magic == (m))

/* Allocation wrappers: abort with a message when memory runs out, so callers
 * never check for NULL. Budgets we set on purpose are checked elsewhere. */
void *vc_malloc(size_t n);
void *vc_calloc(size_t count, size_t n);
void *vc_realloc(void *p, size_t n);
/* The one growable array: returns arr (of *cap elements of elem bytes),
 * moved if it had to grow, with room for at least need, doubling from
 * first. Arrays of frames, parts, subscribers and paths all grow here:
 * VC_GROW(a, cap, need, first) assigns the result back. */
void *vc_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first);
#define VC_GROW(a, cap, need, first) ((a) = vc_grow((a), &(cap), (need), sizeof(*(a)), (first)))
char *vc_strdup(const char *s);
char *vc_strndup(const char *s, size_t n);
/* Returns a malloc'd string; the caller owns it. */
char *vc_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Error codes beyond errno values, returned negated like errno ones. */
enum {
    VC_ERR_BASE = 10000,
    VC_ERR_CONFIG,     /* configuration rejected */
    VC_ERR_PROTO,      /* a message did not decode */
    VC_ERR_STORE,      /* LMDB refused */
    VC_ERR_NOTFOUND,   /* no such key, site, daemon */
    VC_ERR_TIMEOUT,    /* a peer did not answer in time */
    VC_ERR_NOTRUNNING, /* the suite (or a daemon) is not running */
    VC_ERR_GONE        /* the daemon asked stopped before it answered */
};
/* A message for a negative error code (errno or VC_ERR_*); static storage. */
const char *vc_strerror(int err);

struct sockaddr;
/* "1.2.3.4" or "::1" into buf (empty for other families); returns the
 * port. */
unsigned vc_sockaddr_host(const struct sockaddr *sa, char *buf, size_t len);

/* Clocks: wall time for events and logs, monotonic for timeouts. */
uint64_t vc_now_us(void);
uint64_t vc_mono_ms(void);
/* The wall clock in ms since the epoch (what the cache's entries keep). */
int64_t vc_wall_ms(void);
/* CLOCK_BOOTTIME in ms: as the monotonic clock, one for every process of
 * the machine, and counting a suspend too (the cache's lease, vc_cache.h). */
uint64_t vc_boot_ms(void);

/* Parses "5m", "30s", "2h", "1d", "1500ms" into milliseconds; -1 on error. */
int64_t vc_parse_duration_ms(const char *s);
/* "8M", "64k", "1G", "512" (bytes): the size, or -1. */
int64_t vc_parse_size(const char *s);

/* Appends s to out as the inside of a JSON string (no quotes added). */
void vc_json_escape(FILE *out, const char *s, size_t len);

/* mkdir -p with the given mode; 0 or -errno. */
int vc_mkdirs(const char *path, int mode);

/* Reads a whole file into a malloc'd NUL-terminated buffer (caller frees);
 * NULL with errno set on failure. */
char *vc_read_file(const char *path, size_t *len);
/* Whether name (no '/') is an executable file in a directory of $PATH
 * (or of /usr/local/bin:/usr/bin:/bin without one). */
int vc_program_on_path(const char *name);

/* FNV-1a of bytes, of a string: the hash of the rooms' and the bans'
 * tables, and of the cache's tombstones. */
uint32_t vc_hash_bytes(const void *data, size_t len);
uint32_t vc_hash_str(const char *s);

#define VC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* The struct of type whose member ptr points at. */
#define VC_CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif
