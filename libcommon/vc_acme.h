/*
 * What vc-acme and the fronts share: where a site's certificate lives.
 * vc-acme writes DATA/tls/acme/SITE.key (0600) and then SITE.crt (the
 * chain); a front serves them once both are there and agree, and picks up
 * a renewed pair within a second, with no restart.
 *
 * On-demand TLS (site acme_on_demand, the default site only): a front
 * that gets a handshake for a host no site names publishes
 * the event TLS_ON_DEMAND_WANTED (vc_events.h); vc-acme asks the
 * operator's acme.on_demand_ask URL, keeps its rate limit and orders; the
 * pair is the site "on-demand/HOST"'s, DATA/tls/acme/on-demand/HOST.*.
 */
#ifndef VC_ACME_H
#define VC_ACME_H

#include <stddef.h>

#define VC_ACME_ON_DEMAND_PREFIX "on-demand/"

/* DATA/tls/acme/SITE.EXT ("crt" or "key"), malloc'd. */
char *vc_acme_cert_path(const char *data_dir, const char *site, const char *ext);

/* 1 if host (a client's SNI, up to len bytes) is a name a CA could issue
 * for: two labels or more, each 1-63 letters, digits and hyphens, not
 * starting or ending with a hyphen, 253 bytes at most, the last label not
 * all digits (not an IPv4 address). Lowercased into out (at least 254
 * bytes). 0 otherwise: it is neither asked about nor ordered. */
int vc_acme_on_demand_host(const char *host, size_t len, char *out, size_t outlen);

#endif
