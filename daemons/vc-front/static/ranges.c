#include "ranges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct span {
    uint64_t first, last; /* inclusive */
} span_t;

/* A decimal number of at most 19 digits (no overflow). */
static int number(const char **p, const char *end, uint64_t *v)
{
    const char *s = *p;
    uint64_t n = 0;
    while (*p < end && **p >= '0' && **p <= '9' && *p - s < 19)
        n = n * 10 + (uint64_t)(*(*p)++ - '0');
    if (*p == s || (*p < end && **p >= '0' && **p <= '9'))
        return -1;
    *v = n;
    return 0;
}

static void skip_ows(const char **p, const char *end)
{
    while (*p < end && (**p == ' ' || **p == '\t'))
        (*p)++;
}

static int by_first(const void *a, const void *b)
{
    const span_t *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

ranges_verdict_t ranges_tame(const char *value, size_t len, uint64_t size, char *out, size_t outcap)
{
    const char *p = value, *end = value + len;
    if (len < 6 || strncasecmp(p, "bytes=", 6) != 0)
        return RANGES_KEEP;
    p += 6;
    span_t spans[RANGES_MAX + 1];
    size_t n = 0, listed = 0;
    uint64_t asked = 0; /* bytes asked for, before merging */
    for (;;) {
        skip_ows(&p, end);
        if (p < end && *p == ',') { /* empty list elements are allowed */
            p++;
            continue;
        }
        if (p == end)
            break;
        uint64_t a = 0, b = 0;
        int suffix = *p == '-';
        if (suffix)
            p++;
        if (number(&p, end, &a) < 0)
            return RANGES_KEEP;
        int open = 0;
        if (!suffix) {
            if (p == end || *p != '-')
                return RANGES_KEEP;
            p++;
            open = p == end || *p == ',' || *p == ' ' || *p == '\t';
            if (!open && number(&p, end, &b) < 0)
                return RANGES_KEEP;
            if (!open && b < a)
                return RANGES_KEEP; /* invalid: the whole header is ignored by h2o, as RFC 9110 allows */
        }
        skip_ows(&p, end);
        if (p < end && *p != ',')
            return RANGES_KEEP;
        if (++listed > 10 * RANGES_MAX)
            return RANGES_IGNORE; /* no need to read on */
        span_t s;
        if (suffix) {
            if (a == 0 || size == 0)
                continue; /* unsatisfiable */
            s.first = a >= size ? 0 : size - a;
            s.last = size - 1;
        } else {
            if (a >= size)
                continue; /* unsatisfiable */
            s.first = a;
            s.last = open || b >= size ? size - 1 : b;
        }
        asked += s.last - s.first + 1;
        if (asked > size)
            return RANGES_IGNORE;
        if (n == RANGES_MAX + 1)
            return RANGES_IGNORE;
        spans[n++] = s;
    }
    if (n == 0)
        return RANGES_KEEP; /* none satisfiable: h2o answers 416 */
    int sorted = 1;
    for (size_t i = 1; i < n; i++)
        sorted &= spans[i].first > spans[i - 1].last + 1;
    if (sorted && n <= RANGES_MAX && n == listed)
        return RANGES_KEEP;
    qsort(spans, n, sizeof(spans[0]), by_first);
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (spans[i].first <= spans[m].last + 1) {
            if (spans[i].last > spans[m].last)
                spans[m].last = spans[i].last;
        } else {
            spans[++m] = spans[i];
        }
    }
    m++;
    if (m > RANGES_MAX)
        return RANGES_IGNORE;
    size_t at = (size_t)snprintf(out, outcap, "bytes=");
    for (size_t i = 0; i < m && at < outcap; i++)
        at += (size_t)snprintf(out + at, outcap - at, "%s%llu-%llu", i ? "," : "", (unsigned long long)spans[i].first,
                               (unsigned long long)spans[i].last);
    return at < outcap ? RANGES_REWRITE : RANGES_IGNORE;
}
