/* vc_httpdate: RFC 9110 5.6.7's examples in its three forms, what is not
 * a date, and printing that parses back. */
#include "vc_httpdate.h"
#include "vc_test.h"

static int64_t parse(const char *s)
{
    return vc_httpdate_parse(s, strlen(s));
}

int main(void)
{
    const int64_t t = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
    CHECK(parse("Sun, 06 Nov 1994 08:49:37 GMT") == t);
    CHECK(parse("Sunday, 06-Nov-94 08:49:37 GMT") == t);
    CHECK(parse("Sun Nov  6 08:49:37 1994") == t);
    CHECK(parse("Sun Nov 16 08:49:37 1994") == t + 10 * 86400);
    CHECK(parse("sun, 06 nov 1994 08:49:37 gmt") == t); /* letter case aside */
    CHECK(parse("Thu, 01 Jan 1970 00:00:00 GMT") == 0);
    CHECK(parse("Tue, 29 Feb 2000 12:00:00 GMT") == 951825600);
    CHECK(parse("Fri, 31 Dec 9999 23:59:59 GMT") == 253402300799LL);
    CHECK(parse("Wed, 01 Jan 2025 00:00:60 GMT") == 1735689660); /* a leap second */
    /* ...but never past the last second a date can name (fuzz_httpdate). */
    CHECK(parse("Fri, 31 Dec 9999 23:59:60 GMT") == 253402300799LL);
    /* Not dates: RFC 9111 5.3 takes them as "already expired". */
    const char *bad[] = {
        "Sun,  06 Nov 1994 08:49:37 GMT", /* two spaces */
        "Sun, 6 Nov 1994 08:49:37 GMT",   /* one-digit day */
        "Sun, 06 Nov 1994 8:49:37 GMT",   /* one-digit hour */
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37",
        "Sun, 06 Nov 1994 08:49:37 GMT ",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 30 Feb 1994 08:49:37 GMT",
        "Sun, 29 Feb 1900 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994",
        "0",
        "-1",
        "",
        "Thu, 01 Jan 1970 00:00:00 GMT, Thu, 01 Jan 1970 00:00:00 GMT",
        "Wed, 31 Dec 1969 23:59:59 GMT",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        int64_t r = parse(bad[i]);
        if (r != -1)
            fprintf(stderr, "took \"%s\" as %lld\n", bad[i], (long long)r);
        CHECK(r == -1);
    }
    char out[VC_HTTPDATE_LEN + 1];
    CHECK(vc_httpdate_format(t, out) == VC_HTTPDATE_LEN);
    CHECK_STR(out, "Sun, 06 Nov 1994 08:49:37 GMT");
    for (int64_t x = 0; x < 253402300799LL; x = x * 3 + 86399)
        CHECK(vc_httpdate_format(x, out) == VC_HTTPDATE_LEN && parse(out) == x);
    CHECK(vc_httpdate_format(-1, out) == 0);
    return vc_test_result("vc_httpdate");
}
