/*
 * Address ranges: "10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1", as
 * a configuration names trusted proxies (front.trusted_proxies). An IPv4
 * range also matches the same address mapped into IPv6 ("::ffff:10.1.2.3"),
 * as a dual-stack socket reports it.
 */
#ifndef VC_CIDR_H
#define VC_CIDR_H

#include <stdint.h>
#include <sys/socket.h>

typedef struct vc_cidr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    int bits;
} vc_cidr_t;

/* 0, or -1 if text is not an address with an optional /BITS. */
int vc_cidr_parse(const char *text, vc_cidr_t *out);
/* 1 if sa (AF_INET or AF_INET6) is within c. */
int vc_cidr_match(const vc_cidr_t *c, const struct sockaddr *sa);

#endif
