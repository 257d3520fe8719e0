/*
 * Range requests on static files, tamed (RFC 9110, 14.1.2 and 14.2; the
 * CVE-2011-3192 lesson): before h2o's file handler sees a Range header,
 * its ranges are resolved against the file's size, sorted, and merged
 * where they overlap or touch. More than RANGES_MAX of them, or ranges
 * that add up to more bytes than the file, and the header is ignored:
 * the whole file, 200, as Apache answers since. 1,000 copies of
 * "bytes=0-" on a 200 MB file were one 206 of 209 GB.
 */
#ifndef VC_FRONT_RANGES_H
#define VC_FRONT_RANGES_H

#include <stddef.h>
#include <stdint.h>

#define RANGES_MAX 16

typedef enum ranges_verdict {
    RANGES_KEEP,    /* as sent: one range, already in order, or not ours to judge (bad syntax, none satisfiable) */
    RANGES_REWRITE, /* replace the header's value with out */
    RANGES_IGNORE,  /* drop the header: the whole file */
} ranges_verdict_t;

/* value: a Range header's value (not NUL-terminated, any bytes); size:
 * the file's. For RANGES_REWRITE, out holds "bytes=A-B,C-D" (NUL-ended,
 * at most outcap bytes; RANGES_MAX ranges always fit in 48 bytes each). */
ranges_verdict_t ranges_tame(const char *value, size_t len, uint64_t size, char *out, size_t outcap);

#endif
