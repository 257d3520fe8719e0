/*
 * vc_selfsigned: the suite's own certificate for localhost, made once in
 * DATA/tls and served by the front (until a site has its own) and by the
 * panel (unless panel.tls_cert names one).
 */
#ifndef VC_SELFSIGNED_H
#define VC_SELFSIGNED_H

/* Makes DIR/selfsigned.{crt,key} if missing (key mode 0600) and sets
 * *cert and *key to their paths (the caller frees both, even on failure).
 * Returns 0, or -1 with a log line. */
int vc_selfsigned_ensure(const char *dir, char **cert, char **key);

#endif
