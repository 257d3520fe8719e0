/* What vc-acme reads from a CA (daemons/vc-acme/acme_parse.c): RFC 3339
 * times and renewal windows (RFC 9773 4.2), Retry-After (RFC 9110
 * 10.2.3) and response headers. */
#include "acme_parse.h"
#include "vc_test.h"

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
    return vc_test_result("acme_parse");
}
