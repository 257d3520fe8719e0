/*
 * TLS for the front: one SSL_CTX per certificate, chosen by SNI, and a
 * self-signed certificate made at first start so HTTPS works with no
 * configuration.
 */
#ifndef VC_FRONT_TLS_H
#define VC_FRONT_TLS_H

#include <openssl/ssl.h>
#include <stdio.h>

#include "vc_config.h"

typedef struct tls tls_t;

/* Builds the contexts for every site (sites without a certificate share the
 * generated one under DATA/tls). NULL with a log line on failure. */
tls_t *tls_new(const vc_config_t *cfg);
void tls_destroy(tls_t **t);
/* The context listeners accept with (SNI switches from it). Borrowed. */
SSL_CTX *tls_default_ctx(tls_t *t);

/* Re-reads the shared ticket keys if the supervisor rotated them (a stat
 * a second); rotate: rotates them first when due (a front run alone). */
void tls_tickets_refresh(tls_t *t, int rotate);

/* The node's store, where vc-acme publishes TLS-ALPN-01 answers: a
 * handshake for a host that offers ALPN "acme-tls/1" gets the challenge
 * certificate published for it (RFC 8737). And the bus, where on-demand
 * TLS tells vc-acme of a host it wants (tls_on_demand.h). */
struct vc_store;
struct vc_bus;
void tls_attach(tls_t *t, struct vc_store *store, struct vc_bus *bus);

/* Serves a certificate vc-acme installed or renewed for a site with
 * tls = "acme" (a stat a second of each): its hosts' new handshakes get
 * it, connections keep what they began with. */
void tls_acme_refresh(tls_t *t);

/* vc_acme_certificate_days_left for each ACME site with a certificate in
 * service (Prometheus text). */
void tls_metrics(const tls_t *t, FILE *out);

#endif
