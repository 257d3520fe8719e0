/* What the cache stores and for how long (daemons/vc-front/cache/cache_policy.c),
 * the key of an answer and the entry codec (libcommon/vc_cache.c). */
#include "cache/cache_policy.h"
#include "vc_cache.h"
#include "vc_test.h"

#include <stdlib.h>
#include <string.h>

#define NOW 1790000000000LL /* a wall clock in ms */

static cache_decision_t decide_grace(int status, int64_t grace_ms, const char *const *pairs)
{
    cache_hdr_t h[16];
    size_t n = 0;
    for (; pairs[2 * n]; n++)
        h[n] = (cache_hdr_t){pairs[2 * n], pairs[2 * n + 1], strlen(pairs[2 * n]), strlen(pairs[2 * n + 1])};
    cache_decision_t d;
    cache_policy_opts_t o = {.grace_ms = grace_ms, .ttl_ms = -1, .max_ttl_ms = -1};
    cache_policy_decide(status, h, n, NOW, &o, &d);
    return d;
}

static cache_decision_t decide(int status, const char *const *pairs)
{
    return decide_grace(status, 0, pairs);
}

#define H(...) ((const char *const[]){__VA_ARGS__, NULL})

static void policy(void)
{
    cache_decision_t d;
    d = decide(200, H("Cache-Control", "max-age=60"));
    CHECK(d.store && d.fresh_ms == 60000 && d.stale_ms == 0);
    d = decide(200, H("Cache-Control", "public, max-age=60, s-maxage=300"));
    CHECK(d.store && d.fresh_ms == 300000);
    d = decide(200, H("Cache-Control", "max-age=\"30\""));
    CHECK(d.store && d.fresh_ms == 30000);
    /* Safe defaults. */
    d = decide(200, H("Cache-Control", "max-age=60", "Set-Cookie", "a=b"));
    CHECK(!d.store && !strcmp(d.why, "set-cookie"));
    d = decide(200, H("Cache-Control", "private, max-age=60"));
    CHECK(!d.store && !strcmp(d.why, "private"));
    d = decide(200, H("Cache-Control", "max-age=60,no-store"));
    CHECK(!d.store);
    d = decide(200, H("Cache-Control", "no-cache, max-age=60"));
    CHECK(!d.store && !strcmp(d.why, "no-cache"));
    d = decide(200, H("Cache-Control", "max-age=60", "Vary", "*"));
    CHECK(!d.store && !strcmp(d.why, "vary"));
    d = decide(200, H("Cache-Control", "max-age=60", "Vary", "Cookie"));
    CHECK(d.store); /* a variant */
    d = decide(200, H("Cache-Control", "max-age=60", "Vary", "a, b, c, d, e, f, g, h, i"));
    CHECK(!d.store && !strcmp(d.why, "vary"));
    d = decide(200, H("Cache-Control", "max-age=60", "Vary", "accept-encoding , Accept-Encoding"));
    CHECK(d.store);
    d = decide(200, H("Content-Type", "text/html"));
    CHECK(!d.store && !strcmp(d.why, "no-lifetime"));
    d = decide(200, H("Cache-Control", "max-age=0"));
    CHECK(!d.store && !strcmp(d.why, "expired"));
    d = decide(404, H("Cache-Control", "max-age=60"));
    CHECK(d.store);
    /* Not fooled by a directive inside another's name or value. */
    d = decide(200, H("Cache-Control", "x-max-age=60"));
    CHECK(!d.store);
    d = decide(200, H("Cache-Control", "max-age=abc"));
    CHECK(!d.store);
    d = decide(200, H("Cache-Control", "ext=\"private, no-store\", max-age=5"));
    CHECK(d.store && d.fresh_ms == 5000);
    /* Targeted fields (RFC 9213) win over Cache-Control for us. */
    d = decide(200, H("Cache-Control", "max-age=0", "Velocity-Cache-Control", "max-age=120"));
    CHECK(d.store && d.fresh_ms == 120000);
    d = decide(200, H("Cache-Control", "no-cache", "Surrogate-Control", "max-age=10"));
    CHECK(d.store && d.fresh_ms == 10000);
    d = decide(200, H("Cache-Control", "max-age=60", "Surrogate-Control", "no-store"));
    CHECK(!d.store);
    d = decide(200, H("Cache-Control", "private", "Velocity-Cache-Control", "max-age=120"));
    CHECK(!d.store); /* but never a private page */
    /* Expires against Date; a bad one is expired. */
    d = decide(200, H("Date", "Mon, 21 Sep 2026 14:13:20 GMT", "Expires", "Mon, 21 Sep 2026 14:14:20 GMT"));
    CHECK(d.store && d.fresh_ms == 60000);
    d = decide(200, H("Expires", "0"));
    CHECK(!d.store);
    d = decide(200, H("Cache-Control", "max-age=10", "Expires", "Sun, 06 Nov 1994 08:50:37 GMT"));
    CHECK(d.store && d.fresh_ms == 10000);
    /* Staleness allowed: while refreshed, and when PHP fails (at least as
     * long). */
    d = decide(200, H("Cache-Control", "max-age=10, stale-while-revalidate=30, stale-if-error=60"));
    CHECK(d.store && d.stale_ms == 30000 && d.error_ms == 60000);
    d = decide(200, H("Cache-Control", "max-age=10, stale-while-revalidate=30"));
    CHECK(d.store && d.stale_ms == 30000 && d.error_ms == 30000);
    /* The site's grace, unless the answer forbids it. */
    d = decide_grace(200, 5000, H("Cache-Control", "max-age=10"));
    CHECK(d.store && d.stale_ms == 5000 && d.error_ms == 5000);
    d = decide_grace(200, 5000, H("Cache-Control", "max-age=10, stale-if-error=2"));
    CHECK(d.store && d.stale_ms == 5000 && d.error_ms == 5000);
    d = decide_grace(200, 5000, H("Cache-Control", "max-age=10, must-revalidate, stale-while-revalidate=30"));
    CHECK(d.store && d.stale_ms == 0 && d.error_ms == 0);
    d = decide_grace(200, 5000, H("Cache-Control", "max-age=10, proxy-revalidate"));
    CHECK(d.store && d.stale_ms == 0);
    d = decide_grace(200, 5000, H("Cache-Control", "s-maxage=10"));
    CHECK(d.store && d.stale_ms == 0);
    d = decide_grace(200, 5000, H("Cache-Control", "s-maxage=10, stale-while-revalidate=20"));
    CHECK(d.store && d.stale_ms == 20000);
    /* Our targeted field's own directives, not the client's. */
    d = decide(200, H("Cache-Control", "max-age=0, must-revalidate", "Velocity-Cache-Control",
                      "max-age=60, stale-while-revalidate=30"));
    CHECK(d.store && d.fresh_ms == 60000 && d.stale_ms == 30000);
    /* A lifetime past a year is a year. */
    d = decide(200, H("Cache-Control", "max-age=99999999999999999999"));
    CHECK(d.store && d.fresh_ms == 365LL * 86400 * 1000);

    CHECK(cache_policy_is_ours("Surrogate-Key", 13) && cache_policy_is_ours("xkey", 4) &&
          cache_policy_is_ours("velocity-cache-control", 22) && !cache_policy_is_ours("cache-control", 13));
}

static char tags_seen[256];

/* RFC 9110 5.3: every line of a field, one list; and RFC 9111 5.2's
 * grammar. */
static void field_lines(void)
{
    cache_decision_t d;
    /* Field lines combine into one list (RFC 9110 5.3). */
    d = decide(200, H("Cache-Control", "max-age=3600", "Cache-Control", "private"));
    CHECK(!d.store && !strcmp(d.why, "private"));
    d = decide(200, H("Cache-Control", "max-age=3600", "Cache-Control", "s-maxage=1"));
    CHECK(d.store && d.fresh_ms == 1000);
    d = decide(200, H("Cache-Control", "public", "Cache-Control", "max-age=60"));
    CHECK(d.store && d.fresh_ms == 60000);
}

/* RFC 9111 4.2.3 and 5.3: the age an answer comes with, and Expires
 * against its Date. */
static void ages_and_dates(void)
{
    cache_decision_t d;
    /* Its age when it came counts (RFC 9111 4.2.3): Age, or how long ago
     * its Date was, whichever is more; an invalid Age is ignored. */
    d = decide(200, H("Cache-Control", "max-age=3600", "Age", "7200"));
    CHECK(!d.store && !strcmp(d.why, "expired"));
    d = decide(200, H("Cache-Control", "max-age=3600", "Age", "600"));
    CHECK(d.store && d.fresh_ms == 3600000 && d.age_ms == 600000);
    d = decide(200, H("Cache-Control", "max-age=3600", "Age", "-5"));
    CHECK(d.store && d.age_ms == 0);
    d = decide(200, H("Cache-Control", "max-age=3600", "Date", "Mon, 21 Sep 2026 14:03:20 GMT", "Age", "60"));
    CHECK(d.store && d.age_ms == 600000);
    d = decide(200, H("Cache-Control", "max-age=60", "Date", "Mon, 21 Sep 2026 14:03:20 GMT"));
    CHECK(!d.store && !strcmp(d.why, "expired"));
    d = decide(200, H("Cache-Control", "max-age=60", "Cache-Control", "max-age=5"));
    CHECK(d.store && d.fresh_ms == 60000); /* the first occurrence (RFC 9111 4.2.1) */
    d = decide(200, H("Surrogate-Control", "max-age=60", "Surrogate-Control", "no-store"));
    CHECK(!d.store && !strcmp(d.why, "no-store"));
    d = decide(200, H("Cache-Control", "max-age=60", "Cache-Control", "must-revalidate", "Cache-Control",
                      "stale-while-revalidate=30"));
    CHECK(d.store && d.stale_ms == 0);
    /* No whitespace around "=" in the grammar (RFC 9111 5.2). */
    d = decide(200, H("Cache-Control", "max-age = 3600"));
    CHECK(!d.store && !strcmp(d.why, "no-lifetime"));
    d = decide(200, H("Cache-Control", "max-age= 3600"));
    CHECK(!d.store);
    /* Expires: strict dates, measured from the answer's Date; an invalid
     * one, or two lines, is already expired (RFC 9111 5.3). */
    d = decide(200, H("Date", "Mon, 21 Sep 2026 14:13:20 GMT", "Expires", "Mon, 21 Sep 2026 14:13:21 GMT"));
    CHECK(d.store && d.fresh_ms == 1000);
    d = decide(200, H("Date", "Mon, 21 Sep 2026 14:13:20 GMT", "Expires", "Monday, 21-Sep-26 14:14:20 GMT"));
    CHECK(d.store && d.fresh_ms == 60000);
    d = decide(200, H("Date", "Mon, 21 Sep 2026 14:13:20 GMT", "Expires", "Mon Sep 21 14:15:20 2026"));
    CHECK(d.store && d.fresh_ms == 120000);
    d = decide(200, H("Date", "Mon, 21 Sep 2026 14:13:20 GMT", "Expires", "Mon, 21 Sep 2026 14:14:20 gmt"));
    CHECK(d.store && d.fresh_ms == 60000);
    d = decide(200, H("Date", "Mon, 21 Sep 2026 14:13:20 GMT", "Expires", "Mon,  21 Sep 2026 14:14:20 GMT"));
    CHECK(!d.store && !strcmp(d.why, "expired"));
    d = decide(200, H("Date", "Mon, 21 Sep 2026 14:13:20 GMT", "Expires", "Mon, 21 Sep 2026 4:14:20 GMT"));
    CHECK(!d.store && !strcmp(d.why, "expired"));
    d = decide(200, H("Date", "Mon, 21 Sep 2026 14:13:20 GMT", "Expires", "Mon, 21 Sep 2026 14:14:20 GMT", "Expires",
                      "Mon, 21 Sep 2026 14:14:20 GMT"));
    CHECK(!d.store && !strcmp(d.why, "expired"));
}

/* RFC 9111 3: which statuses are stored, with whose lifetime. */
static void statuses(void)
{
    cache_decision_t d;
    /* Any final status with a lifetime of its own (RFC 9111 3), but 206
     * and 304; a rule's lifetime only for the heuristically cacheable. */
    d = decide(500, H("Cache-Control", "max-age=60"));
    CHECK(d.store && d.fresh_ms == 60000 && !d.heuristic);
    for (int st = 200; st < 600; st++) {
        d = decide(st, H("Cache-Control", "max-age=60"));
        CHECK(d.store == (st != 206 && st != 304));
    }
    {
        cache_hdr_t none[1] = {{"Content-Type", "text/html", 12, 9}};
        cache_policy_opts_t o = {.grace_ms = 0, .ttl_ms = 60000, .max_ttl_ms = -1};
        cache_policy_decide(302, none, 1, NOW, &o, &d);
        CHECK(!d.store && !strcmp(d.why, "status"));
        cache_policy_decide(404, none, 1, NOW, &o, &d);
        CHECK(d.store && d.heuristic && d.fresh_ms == 60000);
    }
}

static void add_tag(void *arg, const char *t, size_t n)
{
    strncat(tags_seen, t, n);
    strcat(tags_seen, "|");
}

static const char *key(const char *scheme, const char *host, const char *path, const char *query)
{
    static char out[VC_CACHE_KEY_MAX + 1];
    static char *strip[] = {"utm_*", "fbclid"};
    size_t n = vc_cache_key(scheme, host, strlen(host), path, strlen(path), query, strlen(query), strip, 2, out,
                            VC_CACHE_KEY_MAX);
    out[n] = '\0';
    return out;
}

static void rules(void)
{
    vc_cache_rule_t r;
    char err[256];
    CHECK(vc_cache_rule_parse("/api/ off", &r, err, sizeof(err)) == 0 && r.off && !strcmp(r.prefix, "/api/"));
    CHECK(vc_cache_rule_parse("/blog/ ttl=10m max_ttl=1h grace=30s", &r, err, sizeof(err)) == 0 && !r.off &&
          r.ttl_ms == 600000 && r.max_ttl_ms == 3600000 && r.grace_ms == 30000);
    CHECK(vc_cache_rule_parse("/x/ ttl=5m", &r, err, sizeof(err)) == 0 && r.max_ttl_ms == -1 && r.grace_ms == -1);
    CHECK(vc_cache_rule_parse("/x/ sessions", &r, err, sizeof(err)) == 0 && r.sessions && !r.off);
    CHECK(vc_cache_rule_parse("api off", &r, err, sizeof(err)) < 0 && strstr(err, "path"));
    CHECK(vc_cache_rule_parse("/x/", &r, err, sizeof(err)) < 0 && strstr(err, "says nothing"));
    CHECK(vc_cache_rule_parse("/x/ ttl=soon", &r, err, sizeof(err)) < 0 && strstr(err, "ttl=soon"));
    CHECK(vc_cache_rule_parse("/x/ often", &r, err, sizeof(err)) < 0);
    CHECK(vc_cache_rule_parse("", &r, err, sizeof(err)) < 0);
    /* A rule's lifetime for answers that give none, and its cap. */
    cache_hdr_t none[1] = {{"Content-Type", "text/html", 12, 9}};
    cache_hdr_t long_one[1] = {{"Cache-Control", "max-age=86400", 13, 13}};
    cache_hdr_t cookie[2] = {{"Set-Cookie", "a=1", 10, 3}, {"Content-Type", "text/html", 12, 9}};
    cache_policy_opts_t o = {.grace_ms = 0, .ttl_ms = 300000, .max_ttl_ms = 60000};
    cache_decision_t d;
    cache_policy_decide(200, none, 1, NOW, &o, &d);
    CHECK(d.store && d.fresh_ms == 60000); /* given 5 min, capped at 1 */
    cache_policy_decide(200, long_one, 1, NOW, &o, &d);
    CHECK(d.store && d.fresh_ms == 60000);
    cache_policy_decide(200, cookie, 2, NOW, &o, &d);
    CHECK(!d.store && !strcmp(d.why, "set-cookie")); /* a rule never stores what must not be */
    o.max_ttl_ms = 0;
    cache_policy_decide(200, long_one, 1, NOW, &o, &d);
    CHECK(!d.store); /* max_ttl=0: nothing lives */
}

static void variant_keys(void)
{
    char out[64];
    const char *values[] = {" fr ", NULL,
                            "a\x01"
                            "b"};
    size_t lens[] = {4, 0, 3};
    size_t n = vc_cache_variant_key("http://h/p", 10, values, lens, 3, out, sizeof(out));
    CHECK(n == 10 + 1 + 2 + 1 + 1 + 3 + 1 && !memcmp(out,
                                                     "http://h/p\x01"
                                                     "fr\x01\x01"
                                                     "a b\x01",
                                                     n));
    CHECK(vc_cache_variant_key("http://h/p", 10, values, lens, 3, out, 15) == 0); /* does not fit */
    /* A list's optional whitespace makes no variant of its own (RFC 9111 4.1). */
    const char *forms[] = {"fr,de", "fr, de", " fr ,  de ", "fr\t,\tde"};
    char first[64];
    size_t fl = 0;
    for (size_t i = 0; i < 4; i++) {
        size_t len = strlen(forms[i]);
        n = vc_cache_variant_key("http://h/p", 10, &forms[i], &len, 1, out, sizeof(out));
        if (i == 0) {
            memcpy(first, out, n);
            fl = n;
            CHECK(n == 10 + 1 + 6 + 1 && !memcmp(out + 11, "fr, de", 6));
        }
        CHECK(n == fl && !memcmp(out, first, n));
    }
    /* A URL with the separator in it has no key. */
    CHECK_STR(key("http", "h", "/a\x01", ""), "");
}

static void keys(void)
{
    CHECK_STR(key("https", "Example.COM:443", "/a.php", ""), "https://example.com/a.php");
    CHECK_STR(key("http", "example.com:8080", "/a.php", ""), "http://example.com:8080/a.php");
    CHECK_STR(key("http", "example.com:80", "/a.php", "b=2&a=1"), "http://example.com/a.php?a=1&b=2");
    CHECK_STR(key("http", "h", "/", "utm_source=x&id=3&fbclid=y&utm_medium=z"), "http://h/?id=3");
    CHECK_STR(key("http", "h", "/", "&&a&"), "http://h/?a");
    CHECK_STR(key("http", "h", "/", "utm_source=x"), "http://h/");
    /* The path as sent: PHP sees it so. */
    CHECK_STR(key("http", "h", "/A%20b", ""), "http://h/A%20b");
    char big[600];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK_STR(key("http", "h", big, ""), "");

    cache_policy_tags(" a, b  c,,d ", 12, 3, add_tag, NULL);
    CHECK_STR(tags_seen, "a|b|c|");
}

static void entries(void)
{
    vc_cache_header_t hs[2] = {{"Content-Type", "text/plain", 12, 10}, {"ETag", "\"x\"", 4, 3}};
    const char *tags[] = {"post-1", "home"};
    size_t tag_lens[] = {6, 4};
    vc_cache_entry_in_t in = {.status = 200,
                              .stored_ms = 1,
                              .fresh_ms = 2,
                              .stale_ms = 3,
                              .error_ms = 4,
                              .seq = 9,
                              .nheaders = 2,
                              .headers = hs,
                              .ntags = 2,
                              .tags = tags,
                              .tag_lens = tag_lens,
                              .body = "hello",
                              .body_len = 5};
    size_t n = vc_cache_entry_size(&in);
    char *buf = malloc(n);
    vc_cache_entry_write(&in, buf);
    vc_cache_entry_t e;
    CHECK(vc_cache_entry_parse(buf, n, &e) == 0);
    CHECK(e.status == 200 && e.stored_ms == 1 && e.fresh_ms == 2 && e.stale_ms == 3 && e.error_ms == 4 && e.seq == 9);
    CHECK(e.body_len == 5 && !memcmp(e.body, "hello", 5));
    vc_cache_header_t h;
    size_t pos = 0;
    uint32_t i = 0;
    CHECK(vc_cache_entry_header(&e, &pos, &i, &h) && h.name_len == 12 && !memcmp(h.value, "text/plain", 10));
    CHECK(vc_cache_entry_header(&e, &pos, &i, &h) && h.value_len == 3);
    CHECK(!vc_cache_entry_header(&e, &pos, &i, &h));
    const char *t;
    size_t tl;
    pos = 0;
    i = 0;
    CHECK(vc_cache_entry_tag(&e, &pos, &i, &t, &tl) && tl == 6 && !memcmp(t, "post-1", 6));
    CHECK(vc_cache_entry_tag(&e, &pos, &i, &t, &tl) && tl == 4);
    /* Every cut, and a wrong magic, is refused. */
    for (size_t cut = 0; cut < n; cut++)
        CHECK(vc_cache_entry_parse(buf, cut, &e) == -1);
    buf[0] ^= 1;
    CHECK(vc_cache_entry_parse(buf, n, &e) == -1);
    free(buf);
}

static const char *vary(const char *const *pairs)
{
    static char out[CACHE_VARY_LIST_MAX];
    cache_hdr_t h[16];
    size_t n = 0;
    for (; pairs[2 * n]; n++)
        h[n] = (cache_hdr_t){pairs[2 * n], pairs[2 * n + 1], strlen(pairs[2 * n]), strlen(pairs[2 * n + 1])};
    return cache_policy_vary_names(h, n, out, sizeof(out)) == SIZE_MAX ? "refused" : out;
}

static void varies(void)
{
    CHECK_STR(vary(H("Content-Type", "text/html")), "");
    CHECK_STR(vary(H("Vary", "Accept-Encoding")), "");
    CHECK_STR(vary(H("Vary", "X-Lang, Cookie", "vary", "cookie,accept-encoding , Accept-Language")),
              "accept-language, cookie, x-lang");
    CHECK_STR(vary(H("Vary", "*")), "refused");
    CHECK_STR(vary(H("Vary", "a, *")), "refused");
    CHECK_STR(vary(H("Vary", "a,b,c,d,e,f,g,h")), "a, b, c, d, e, f, g, h");
    CHECK_STR(vary(H("Vary", "a,b,c,d,e,f,g,h,i")), "refused");
    char longname[100];
    memset(longname, 'x', 65);
    longname[65] = '\0';
    CHECK_STR(vary(H("Vary", longname)), "refused");
}

static int range(const char *v, uint64_t size, uint64_t *a, uint64_t *b)
{
    return cache_policy_range(v, strlen(v), size, a, b);
}

static void ranges(void)
{
    uint64_t a, b;
    CHECK(range("bytes=0-3", 10, &a, &b) == 1 && a == 0 && b == 3);
    CHECK(range("bytes=5-", 10, &a, &b) == 1 && a == 5 && b == 9);
    CHECK(range("bytes=-3", 10, &a, &b) == 1 && a == 7 && b == 9);
    CHECK(range("bytes=-30", 10, &a, &b) == 1 && a == 0 && b == 9);
    CHECK(range("Bytes=2-99", 10, &a, &b) == 1 && a == 2 && b == 9);
    CHECK(range("bytes=10-", 10, &a, &b) == -1);
    CHECK(range("bytes=-0", 10, &a, &b) == -1);
    CHECK(range("bytes=0-0", 0, &a, &b) == -1);
    /* The whole body: several ranges, bad syntax, other units. */
    CHECK(range("bytes=0-1,3-4", 10, &a, &b) == 0);
    CHECK(range("bytes=4-2", 10, &a, &b) == 0);
    CHECK(range("bytes=x-2", 10, &a, &b) == 0);
    CHECK(range("bytes=-", 10, &a, &b) == 0);
    CHECK(range("items=0-1", 10, &a, &b) == 0);
    CHECK(range("bytes=99999999999999999999-", 10, &a, &b) == 0);
}

int main(void)
{
    policy();
    field_lines();
    ages_and_dates();
    statuses();
    ranges();
    varies();
    keys();
    variant_keys();
    rules();
    entries();
    return vc_test_result("cache_policy");
}
