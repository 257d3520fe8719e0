/* vc_cidr: trusted proxies' addresses and ranges, IPv4, IPv6 and IPv4
 * mapped into IPv6 as a dual-stack socket reports it. */
#include "vc_cidr.h"
#include "vc_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>

static int in(const char *range, const char *addr)
{
    vc_cidr_t c;
    if (vc_cidr_parse(range, &c) < 0)
        return -1;
    struct sockaddr_storage ss = {0};
    if (strchr(addr, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        inet_pton(AF_INET6, addr, &s6->sin6_addr);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        inet_pton(AF_INET, addr, &s4->sin_addr);
    }
    return vc_cidr_match(&c, (struct sockaddr *)&ss);
}

int main(void)
{
    CHECK(in("10.0.0.0/8", "10.200.3.4") == 1);
    CHECK(in("10.0.0.0/8", "11.0.0.1") == 0);
    CHECK(in("192.0.2.7", "192.0.2.7") == 1);
    CHECK(in("192.0.2.7", "192.0.2.8") == 0);
    CHECK(in("192.0.2.0/25", "192.0.2.127") == 1 && in("192.0.2.0/25", "192.0.2.128") == 0);
    CHECK(in("0.0.0.0/0", "203.0.113.9") == 1);
    CHECK(in("10.0.0.0/8", "::ffff:10.1.2.3") == 1); /* mapped */
    CHECK(in("10.0.0.0/8", "::ffff:11.1.2.3") == 0);
    CHECK(in("::1", "::1") == 1 && in("::1", "::2") == 0);
    CHECK(in("2001:db8::/32", "2001:db8:1::5") == 1 && in("2001:db8::/32", "2001:db9::5") == 0);
    CHECK(in("2001:db8::/32", "10.0.0.1") == 0);
    CHECK(in("::/0", "10.0.0.1") == 0); /* an IPv6 range is not an IPv4 one */
    vc_cidr_t c;
    const char *bad[] = {"",       "10.0.0.0/33",  "10.0.0.0/", "10.0.0.0/x", "::1/129", "example.com",
                         "10.0.0", "10.0.0.1/8/8", "*"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        CHECK(vc_cidr_parse(bad[i], &c) < 0);
    return vc_test_result("vc_cidr");
}
