#include "cache_policy.h"
#include "vc_httpdate.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* A lifetime longer than this is taken as this: a year, as RFC 9111
 * suggests for Expires far away. */
#define MAX_LIFETIME_S (365LL * 86400)

static int is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && strncasecmp(name, want, len) == 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

int cache_policy_directive(const char *v, size_t len, const char *name, int64_t *secs)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < len;) {
        while (i < len && (is_space(v[i]) || v[i] == ','))
            i++;
        size_t start = i;
        while (i < len && v[i] != ',' && v[i] != '=' && !is_space(v[i]))
            i++;
        size_t tlen = i - start;
        /* token "=" value, nothing between (RFC 9111 5.2): "max-age = 60"
         * names max-age with no valid argument. */
        int spaced = i < len && is_space(v[i]);
        while (i < len && is_space(v[i]))
            i++;
        int64_t n = -1;
        if (i < len && v[i] == '=') {
            i++;
            spaced |= i < len && is_space(v[i]);
            while (i < len && is_space(v[i]))
                i++;
            int quoted = i < len && v[i] == '"';
            i += quoted;
            int digits = 0;
            int64_t acc = 0;
            while (i < len && v[i] >= '0' && v[i] <= '9') {
                if (acc < MAX_LIFETIME_S)
                    acc = acc * 10 + (v[i] - '0');
                digits++;
                i++;
            }
            n = digits && !spaced ? (acc > MAX_LIFETIME_S ? MAX_LIFETIME_S : acc) : -1;
            /* The rest of the value (a quoted list, a bad number). */
            while (i < len && v[i] != ',') {
                if (v[i] == '"')
                    quoted = !quoted;
                i++;
            }
        }
        if (tlen == nl && strncasecmp(v + start, name, nl) == 0) {
            *secs = n;
            return 1;
        }
        if (tlen == 0 && i < len && v[i] != ',')
            i++; /* a stray byte: no progress otherwise */
    }
    return 0;
}

/* An HTTP date (RFC 9110 5.6.7, vc_httpdate.h), in ms; -1 if it is not
 * one. */
static int64_t http_date(const char *v, size_t len)
{
    int64_t t = vc_httpdate_parse(v, len);
    return t < 0 ? -1 : t * 1000;
}

/* A delta-seconds value (RFC 9111 1.2.2), capped at a year; -1 if it is
 * not one (an invalid Age is ignored, 5.1). */
static int64_t delta_seconds(const char *v, size_t len)
{
    if (len == 0)
        return -1;
    int64_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        if (n < MAX_LIFETIME_S)
            n = n * 10 + (v[i] - '0');
    }
    return n > MAX_LIFETIME_S ? MAX_LIFETIME_S : n;
}

/* Every line of one field, in order: RFC 9110 5.3 makes them one list
 * ("Cache-Control: max-age=60" and a second "Cache-Control: private" is
 * a private answer). */
#define FIELD_LINES_MAX 16
typedef struct field {
    const cache_hdr_t *line[FIELD_LINES_MAX];
    size_t n;
    int over; /* more lines than that: refused */
} field_t;

static void field_add(field_t *f, const cache_hdr_t *h)
{
    if (f->n < FIELD_LINES_MAX)
        f->line[f->n++] = h;
    else
        f->over = 1;
}

/* cache_policy_directive over every line: the first occurrence counts
 * (RFC 9111 4.2.1). */
static int field_directive(const field_t *f, const char *name, int64_t *secs)
{
    for (size_t i = 0; i < f->n; i++)
        if (cache_policy_directive(f->line[i]->value, f->line[i]->value_len, name, secs))
            return 1;
    return 0;
}

int cache_policy_status_storable(int status)
{
    return status >= 200 && status <= 599 && status != 206 && status != 304;
}

int cache_policy_status_heuristic(int status)
{
    /* RFC 9110 15.1, "heuristically cacheable" (206 aside: ranges are
     * not stored). */
    switch (status) {
    case 200:
    case 203:
    case 204:
    case 300:
    case 301:
    case 308:
    case 404:
    case 405:
    case 410:
    case 414:
    case 501: return 1;
    default: return 0;
    }
}

/* One name of a Vary list: lower case, at most CACHE_VARY_NAME_MAX. */
typedef struct vary_name {
    char s[CACHE_VARY_NAME_MAX + 1];
    size_t len;
} vary_name_t;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const vary_name_t *)a)->s, ((const vary_name_t *)b)->s);
}

size_t cache_policy_vary_names(const cache_hdr_t *h, size_t n, char *out, size_t cap)
{
    vary_name_t names[CACHE_VARY_MAX];
    size_t count = 0;
    for (size_t k = 0; k < n; k++) {
        if (!is(h[k].name, h[k].name_len, "vary"))
            continue;
        const char *v = h[k].value;
        size_t len = h[k].value_len;
        for (size_t i = 0; i < len;) {
            while (i < len && (is_space(v[i]) || v[i] == ','))
                i++;
            size_t start = i;
            while (i < len && v[i] != ',' && !is_space(v[i]))
                i++;
            size_t nl = i - start;
            if (nl == 0 || is(v + start, nl, "accept-encoding"))
                continue; /* the front serves every encoding from one body */
            if ((nl == 1 && v[start] == '*') || nl > CACHE_VARY_NAME_MAX)
                return SIZE_MAX;
            vary_name_t one = {.len = nl};
            for (size_t c = 0; c < nl; c++) {
                char ch = v[start + c];
                if ((unsigned char)ch <= ' ' || ch == 0x7f)
                    return SIZE_MAX;
                one.s[c] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
            }
            one.s[nl] = '\0';
            int seen = 0;
            for (size_t c = 0; c < count && !seen; c++)
                seen = strcmp(names[c].s, one.s) == 0;
            if (seen)
                continue;
            if (count == CACHE_VARY_MAX)
                return SIZE_MAX;
            names[count++] = one;
        }
    }
    qsort(names, count, sizeof(*names), by_name);
    size_t at = 0;
    for (size_t c = 0; c < count; c++) {
        if (at + names[c].len + 2 > cap)
            return SIZE_MAX;
        if (c) {
            out[at++] = ',';
            out[at++] = ' ';
        }
        memcpy(out + at, names[c].s, names[c].len);
        at += names[c].len;
    }
    if (cap)
        out[at < cap ? at : cap - 1] = '\0';
    return at;
}

static void refuse(cache_decision_t *out, const char *why)
{
    out->store = 0;
    out->why = why;
}

void cache_policy_decide(int status, const cache_hdr_t *h, size_t n, int64_t now_ms, const cache_policy_opts_t *o,
                         cache_decision_t *out)
{
    memset(out, 0, sizeof(*out));
    field_t ours = {0}, surrogate = {0}, cc = {0};
    const cache_hdr_t *expires = NULL, *date = NULL, *age = NULL;
    int nexpires = 0;
    for (size_t i = 0; i < n; i++) {
        const char *nm = h[i].name;
        size_t nl = h[i].name_len;
        if (is(nm, nl, "set-cookie"))
            return refuse(out, "set-cookie");
        if (is(nm, nl, "velocity-cache-control"))
            field_add(&ours, &h[i]);
        else if (is(nm, nl, "surrogate-control"))
            field_add(&surrogate, &h[i]);
        else if (is(nm, nl, "cache-control"))
            field_add(&cc, &h[i]);
        else if (is(nm, nl, "expires") && nexpires++ == 0)
            expires = &h[i];
        else if (is(nm, nl, "date") && date == NULL)
            date = &h[i];
        else if (is(nm, nl, "age") && age == NULL)
            age = &h[i];
    }
    if (!cache_policy_status_storable(status))
        return refuse(out, "status");
    if (ours.over || surrogate.over || cc.over)
        return refuse(out, "cache-control"); /* more lines than anyone writes */
    char names[CACHE_VARY_LIST_MAX];
    if (cache_policy_vary_names(h, n, names, sizeof(names)) == SIZE_MAX)
        return refuse(out, "vary");
    int64_t s = -1, secs;
    /* `private` and `no-store` for the client hold for us too, whatever a
     * targeted field says: a page meant for one visitor is never stored. */
    if (field_directive(&cc, "private", &secs) || field_directive(&cc, "no-store", &secs))
        return refuse(out, "private");
    const field_t *target = ours.n ? &ours : surrogate.n ? &surrogate : NULL;
    if (target) {
        if (field_directive(target, "no-store", &secs))
            return refuse(out, "no-store");
        if (field_directive(target, "max-age", &secs))
            s = secs;
    } else if (cc.n) {
        if (field_directive(&cc, "no-cache", &secs))
            return refuse(out, "no-cache");
        if (field_directive(&cc, "s-maxage", &secs))
            s = secs;
        else if (field_directive(&cc, "max-age", &secs))
            s = secs;
    }
    if (s < 0 && target == NULL && expires) {
        /* Two Expires lines, or one that is not a date: already expired
         * (RFC 9111 5.3). */
        int64_t e = nexpires == 1 ? http_date(expires->value, expires->value_len) : -1;
        int64_t base = date ? http_date(date->value, date->value_len) : -1;
        s = e < 0 ? 0 : (e - (base >= 0 ? base : now_ms)) / 1000;
        if (s > MAX_LIFETIME_S)
            s = MAX_LIFETIME_S;
    }
    if (s < 0 && o->ttl_ms > 0) {
        /* The path's rule gives one: a lifetime the answer did not, so
         * only for the statuses that may have one unasked. */
        if (!cache_policy_status_heuristic(status))
            return refuse(out, "status");
        s = o->ttl_ms / 1000 > 0 ? o->ttl_ms / 1000 : 1;
        out->heuristic = 1;
    }
    if (s > 0 && o->max_ttl_ms >= 0 && s > o->max_ttl_ms / 1000)
        s = o->max_ttl_ms / 1000; /* the path's rule caps it */
    if (s <= 0)
        return refuse(out, s == 0 ? "expired" : "no-lifetime");
    /* Its age when it came (RFC 9111 4.2.3): what an upstream cache says
     * (Age), or how long ago its Date was, whichever is more. Fresh only
     * while the lifetime exceeds it. */
    int64_t date_ms = date ? http_date(date->value, date->value_len) : -1;
    int64_t apparent = date_ms >= 0 && now_ms > date_ms ? now_ms - date_ms : 0;
    int64_t age_s = age ? delta_seconds(age->value, age->value_len) : -1;
    out->age_ms = age_s > 0 && age_s * 1000 > apparent ? age_s * 1000 : apparent;
    if (out->age_ms >= s * 1000)
        return refuse(out, "expired");
    /* How long past its lifetime it may be served stale: while one
     * refresh runs (stale-while-revalidate, or the site's grace), and when
     * PHP fails (stale-if-error, at least as long). must-revalidate and
     * proxy-revalidate forbid both; s-maxage (proxy-revalidate for a shared
     * cache, RFC 9111 5.2.2.10) forbids the grace nobody asked for, but not
     * what the answer grants in the same field. */
    const field_t *src = target ? target : &cc;
    int64_t swr = 0, sie = 0, grace = o->grace_ms;
    if (field_directive(src, "must-revalidate", &secs) || field_directive(src, "proxy-revalidate", &secs)) {
        grace = 0;
    } else {
        if (field_directive(src, "stale-while-revalidate", &secs) && secs > 0)
            swr = secs * 1000;
        if (field_directive(src, "stale-if-error", &secs) && secs > 0)
            sie = secs * 1000;
        if (src == &cc && field_directive(&cc, "s-maxage", &secs))
            grace = 0;
    }
    out->store = 1;
    out->fresh_ms = s * 1000;
    out->stale_ms = swr > grace ? swr : grace;
    out->error_ms = sie > out->stale_ms ? sie : out->stale_ms;
}

int cache_policy_is_tag_header(const char *name, size_t len)
{
    return is(name, len, "surrogate-key") || is(name, len, "cache-tag") || is(name, len, "xkey");
}

int cache_policy_is_ours(const char *name, size_t len)
{
    return is(name, len, "velocity-cache-control") || is(name, len, "surrogate-control") ||
           cache_policy_is_tag_header(name, len);
}

void cache_policy_tags(const char *v, size_t len, size_t max, void (*fn)(void *arg, const char *tag, size_t len),
                       void *arg)
{
    size_t found = 0;
    for (size_t i = 0; i < len && found < max;) {
        while (i < len && (is_space(v[i]) || v[i] == ','))
            i++;
        size_t start = i;
        while (i < len && v[i] != ',' && !is_space(v[i]))
            i++;
        if (i > start) {
            fn(arg, v + start, i - start);
            found++;
        }
    }
}

/* Digits at v[*i..): 1 and *n, or 0 if none (or more than 19). */
static int number(const char *v, size_t len, size_t *i, uint64_t *n)
{
    size_t start = *i;
    *n = 0;
    while (*i < len && v[*i] >= '0' && v[*i] <= '9' && *i - start < 19)
        *n = *n * 10 + (uint64_t)(v[(*i)++] - '0');
    return *i > start && (*i == len || v[*i] < '0' || v[*i] > '9');
}

int cache_policy_range(const char *v, size_t len, uint64_t size, uint64_t *first, uint64_t *last)
{
    size_t i = 0;
    while (i < len && is_space(v[i]))
        i++;
    if (len - i < 6 || strncasecmp(v + i, "bytes=", 6) != 0)
        return 0;
    i += 6;
    while (i < len && is_space(v[i]))
        i++;
    uint64_t a = 0, b = 0;
    int has_a = 0, has_b = 0;
    if (i < len && v[i] != '-') {
        if (!number(v, len, &i, &a))
            return 0;
        has_a = 1;
    }
    if (i >= len || v[i] != '-')
        return 0;
    i++;
    if (i < len && v[i] >= '0' && v[i] <= '9') {
        if (!number(v, len, &i, &b))
            return 0;
        has_b = 1;
    }
    while (i < len && is_space(v[i]))
        i++;
    if (i != len || (!has_a && !has_b))
        return 0; /* more than one range, or not one at all */
    if (!has_a) {
        /* The last b bytes. */
        if (b == 0 || size == 0)
            return -1;
        *first = b >= size ? 0 : size - b;
        *last = size - 1;
        return 1;
    }
    if (has_b && b < a)
        return 0; /* invalid: ignored (RFC 9110 14.1.1) */
    if (a >= size)
        return -1;
    *first = a;
    *last = has_b && b < size ? b : size - 1;
    return 1;
}
