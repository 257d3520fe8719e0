/* vc-front's address bans, driven with a fake clock. */
#include "../daemons/vc-front/core/bans.h"
#include "vc_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static struct sockaddr *v4(struct sockaddr_in *a, const char *ip)
{
    memset(a, 0, sizeof(*a));
    a->sin_family = AF_INET;
    inet_pton(AF_INET, ip, &a->sin_addr);
    return (struct sockaddr *)a;
}

int main(void)
{
    bans_t *b = bans_new();
    struct sockaddr_in a, o;
    struct sockaddr_in6 m;

    /* BAN_CUTS cuts inside the window ban; fewer do not. */
    CHECK(bans_note_cut(b, v4(&a, "10.0.0.1"), 1000, 60000) == 0);
    CHECK(!bans_is_banned(b, v4(&a, "10.0.0.1"), 1001));
    CHECK(bans_note_cut(b, v4(&a, "10.0.0.1"), 2000, 60000) == 60000);
    CHECK(bans_is_banned(b, v4(&a, "10.0.0.1"), 2001));
    CHECK(!bans_is_banned(b, v4(&o, "10.0.0.2"), 2001));
    CHECK(bans_active(b, 2001) == 1);
    /* The same address as IPv4-mapped IPv6 is the same client. */
    memset(&m, 0, sizeof(m));
    m.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::ffff:10.0.0.1", &m.sin6_addr);
    CHECK(bans_is_banned(b, (struct sockaddr *)&m, 2001));
    /* It ends, and the next ban is twice as long. */
    CHECK(!bans_is_banned(b, v4(&a, "10.0.0.1"), 62000));
    CHECK(bans_note_cut(b, v4(&a, "10.0.0.1"), 63000, 60000) == 0);
    CHECK(bans_note_cut(b, v4(&a, "10.0.0.1"), 64000, 60000) == 120000);
    /* Cuts further apart than the window never ban. */
    CHECK(bans_note_cut(b, v4(&o, "10.0.0.2"), 100000, 60000) == 0);
    CHECK(bans_note_cut(b, v4(&o, "10.0.0.2"), 100000 + BAN_WINDOW_MS + 1, 60000) == 0);
    /* ban_time 0: off. */
    CHECK(bans_note_cut(b, v4(&o, "10.0.0.3"), 1, 0) == 0 && bans_note_cut(b, v4(&o, "10.0.0.3"), 2, 0) == 0);
    /* A flood of addresses evicts old entries and stays bounded. */
    char ip[32];
    for (int i = 0; i < 100000; i++) {
        snprintf(ip, sizeof(ip), "10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        bans_note_cut(b, v4(&o, ip), 200000 + (uint64_t)i, 60000);
        bans_note_cut(b, v4(&o, ip), 200000 + (uint64_t)i, 60000);
    }
    CHECK(bans_active(b, 300000) <= 4096);
    bans_free(b);
    return vc_test_result("bans");
}
