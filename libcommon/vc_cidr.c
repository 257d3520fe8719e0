#include "vc_cidr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int vc_cidr_parse(const char *text, vc_cidr_t *out)
{
    char buf[64];
    size_t len = strlen(text);
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, text, len + 1);
    char *slash = strchr(buf, '/');
    if (slash)
        *slash = '\0';
    memset(out, 0, sizeof(*out));
    if (inet_pton(AF_INET, buf, out->addr) == 1) {
        out->family = AF_INET;
        out->bits = 32;
    } else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
        out->family = AF_INET6;
        out->bits = 128;
    } else {
        return -1;
    }
    if (slash) {
        char *end;
        long b = strtol(slash + 1, &end, 10);
        if (end == slash + 1 || *end || b < 0 || b > out->bits)
            return -1;
        out->bits = (int)b;
    }
    return 0;
}

static int prefix_equal(const uint8_t *a, const uint8_t *b, int bits)
{
    int whole = bits / 8, rest = bits % 8;
    if (memcmp(a, b, (size_t)whole) != 0)
        return 0;
    if (rest == 0)
        return 1;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

int vc_cidr_match(const vc_cidr_t *c, const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return c->family == AF_INET && prefix_equal((const uint8_t *)&in->sin_addr, c->addr, c->bits);
    }
    if (sa->sa_family != AF_INET6)
        return 0;
    const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    if (c->family == AF_INET6)
        return prefix_equal(a, c->addr, c->bits);
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(a, mapped, 12) == 0 && prefix_equal(a + 12, c->addr, c->bits);
}
