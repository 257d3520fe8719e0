/*
 * What vc-acme and the fronts share: where a site's certificate lives.
 * vc-acme writes DATA/tls/acme/SITE.key (0600) and then SITE.crt (the
 * chain); a front serves them once both are there and agree, and picks up
 * a renewed pair within a second, with no restart.
 */
#ifndef VC_ACME_H
#define VC_ACME_H

/* DATA/tls/acme/SITE.EXT ("crt" or "key"), malloc'd. */
char *vc_acme_cert_path(const char *data_dir, const char *site, const char *ext);

#endif
