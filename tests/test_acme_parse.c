/* What vc-acme reads from a CA (daemons/vc-acme/acme_parse.c): RFC 3339
 * times and renewal windows (RFC 9773 4.2), Retry-After (RFC 9110
 * 10.2.3) and response headers; and the client's host names on-demand TLS
 * takes (libcommon/vc_acme.c). */
#include "acme_parse.h"
#include "vc_acme.h"
#include "vc_test.h"

#include <string.h>

static int od(const char *host, const char *want)
{
    char out[254];
    int ok = vc_acme_on_demand_host(host, strlen(host), out, sizeof(out));
    return want ? ok && strcmp(out, want) == 0 : !ok;
}

static void on_demand_hosts(void)
{
    CHECK(od("Shop.Example.COM", "shop.example.com"));
    CHECK(od("a-b.c-d.e9", "a-b.c-d.e9"));
    CHECK(od("xn--bcher-kva.example", "xn--bcher-kva.example"));
    CHECK(od("localhost", NULL));      /* one label */
    CHECK(od("127.0.0.1", NULL));      /* an address */
    CHECK(od("1.2.3.4x", "1.2.3.4x")); /* the last label is not all digits */
    CHECK(od("-a.example.com", NULL)); /* a hyphen at a label's start... */
    CHECK(od("a-.example.com", NULL)); /* ...or end */
    CHECK(od("a..example.com", NULL)); /* an empty label */
    CHECK(od(".example.com", NULL) && od("example.com.", NULL));
    CHECK(od("under_score.example", NULL)); /* a CA issues for no such name */
    CHECK(od("*.example.com", NULL) && od("a b.example", NULL) && od("a/b.example", NULL));
    char label64[80], long254[300];
    memset(label64, 'x', 64);
    strcpy(label64 + 64, ".example");
    CHECK(od(label64, NULL));
    label64[1] = '.'; /* "x." and a 62-byte label */
    CHECK(vc_acme_on_demand_host(label64, strlen(label64), long254, sizeof(long254)) == 1);
    for (int i = 0; i < 254; i++)
        long254[i] = i % 2 ? '.' : 'a';
    long254[253] = '\0';
    CHECK(od(long254, long254)); /* 253 bytes: the longest */
    long254[253] = 'a';
    long254[254] = '\0';
    CHECK(od(long254, NULL));
    char small[4];
    CHECK(vc_acme_on_demand_host("ab.cd", 5, small, sizeof(small)) == 0); /* no room: refused, not cut */
}

static void rfc3339(void)
{
    int64_t t = 0;
    CHECK(acme_rfc3339("2026-12-02T10:00:00Z", &t) == 0 && t == 1796205600);
    CHECK(acme_rfc3339("2026-12-02T10:00:00.123456Z", &t) == 0 && t == 1796205600);
    CHECK(acme_rfc3339("2026-12-02T12:30:00+02:30", &t) == 0 && t == 1796205600);
    CHECK(acme_rfc3339("2026-12-02T08:00:00-02:00", &t) == 0 && t == 1796205600);
    CHECK(acme_rfc3339("2026-12-02t10:00:00z", &t) == 0 && t == 1796205600); /* 5.6: "t" and "z" too */
    CHECK(acme_rfc3339("2026-13-02T10:00:00Z", &t) < 0);
    CHECK(acme_rfc3339("2026-12-02T10:00:00.Z", &t) < 0);
    CHECK(acme_rfc3339("2026-12-02T10:00:00+02", &t) < 0);
    CHECK(acme_rfc3339("2026-12-02 10:00:00Z", &t) < 0);
    CHECK(acme_rfc3339("2026-12-02T10:00:00", &t) < 0); /* no offset: not RFC 3339 */
    CHECK(acme_rfc3339("2026-12-02T10:00:00Zjunk", &t) < 0);
    CHECK(acme_rfc3339("2026-12-02T10:00:00+2:00", &t) < 0);
    CHECK(acme_rfc3339("", &t) < 0 && acme_rfc3339(NULL, &t) < 0);
}

static void window(void)
{
    int64_t s = 0, e = 0;
    json_t *j = json_loads("{\"suggestedWindow\":{\"start\":\"2026-12-02T10:00:00Z\","
                           "\"end\":\"2026-12-02T11:00:00Z\"},\"explanationURL\":\"https://ca/why\"}",
                           0, NULL);
    CHECK(acme_renewal_window(j, &s, &e) == 0 && s == 1796205600 && e == s + 3600);
    json_decref(j);
    j = json_loads("{\"suggestedWindow\":{\"start\":\"2026-12-02T11:00:00Z\",\"end\":\"2026-12-02T11:00:00Z\"}}", 0,
                   NULL);
    CHECK(acme_renewal_window(j, &s, &e) < 0); /* end must come after start */
    json_decref(j);
    j = json_loads("{\"suggestedWindow\":{\"start\":\"2026-12-02T10:00:00Z\"}}", 0, NULL);
    CHECK(acme_renewal_window(j, &s, &e) < 0);
    json_decref(j);
    CHECK(acme_renewal_window(NULL, &s, &e) < 0);
}

static void retry_after(void)
{
    CHECK(acme_retry_after_value("120", 7) == 120);
    CHECK(acme_retry_after_value("-5", 7) == 7);
    CHECK(acme_retry_after_value("12x", 7) == 7);
    CHECK(acme_retry_after_value(NULL, 7) == 7);
    CHECK(acme_retry_after_value("Wed, 21 Oct 2015 07:28:00 GMT", 7) == 0); /* a date past: at once */
}

static void headers(void)
{
    char *v = acme_header_value("Replay-Nonce: abc-DEF_1 \r\n", 26, "Replay-Nonce");
    CHECK_STR(v, "abc-DEF_1");
    free(v);
    v = acme_header_value("location:https://ca/o/1\r\n", 25, "Location");
    CHECK_STR(v, "https://ca/o/1");
    free(v);
    CHECK(acme_header_value("Replay-Nonces: x\r\n", 18, "Replay-Nonce") == NULL);
}

int main(void)
{
    rfc3339();
    window();
    retry_after();
    headers();
    on_demand_hosts();
    return vc_test_result("acme_parse");
}
