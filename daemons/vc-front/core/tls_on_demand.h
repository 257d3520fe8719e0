/*
 * On-demand TLS in the front (vc_acme.h): a handshake for a host no site
 * names, on a suite whose default site has acme_on_demand, gets the pair
 * vc-acme installed for that host if there is one; otherwise the default
 * certificate, and vc-acme is told the host is wanted. Whether it gets one
 * is vc-acme's to decide (the operator's ask URL and a rate limit).
 */
#ifndef VC_FRONT_TLS_ON_DEMAND_H
#define VC_FRONT_TLS_ON_DEMAND_H

#include <openssl/ssl.h>

#include "vc_bus.h"

typedef struct tls_on_demand tls_on_demand_t;

tls_on_demand_t *tls_on_demand_new(const char *data_dir);
void tls_on_demand_destroy(tls_on_demand_t **od);
/* Where "wanted" goes (the daemon's bus publisher, connected after the
 * contexts are made). */
void tls_on_demand_set_bus(tls_on_demand_t *od, vc_bus_t *bus);

/* The context for sni, a host no site names (borrowed: the table keeps a
 * reference), or NULL: not a name a CA issues for, or no pair yet. A
 * host's files are looked at once a second at most; vc-acme is told
 * once every 10 s a host, 20 hosts a second at most. */
SSL_CTX *tls_on_demand_ctx(tls_on_demand_t *od, const char *sni);

/* A pair from files, as the sites' (tls.c); NULL if it does not load. */
SSL_CTX *tls_ctx_from_files(const char *cert, const char *key, int quiet);

#endif
