/*
 * The X.509 that vc-acme makes: the CSR of an order, and TLS-ALPN-01's
 * challenge certificate (RFC 8737 3): self-signed, for the one host name,
 * with the critical acmeIdentifier extension holding the SHA-256 of the
 * key authorisation. The front hands it to the CA's handshake for that
 * name that offers ALPN "acme-tls/1".
 */
#ifndef VC_ACME_X509_H
#define VC_ACME_X509_H

#include <openssl/evp.h>
#include <stddef.h>

/* The certificate and a new key, PEM, in one malloc'd string; NULL if it
 * cannot be made. */
char *acme_alpn_cert(const char *host, const char *key_auth);

/* The CSR for hosts (the first is also the subject's CN), signed with key,
 * as DER in base64url (malloc'd); NULL if it cannot be made. */
char *acme_csr_b64(EVP_PKEY *key, const char *const *hosts, size_t nhosts);

/* The ARI certificate identifier of a PEM chain's first certificate (RFC
 * 9773 4.1): base64url of its Authority Key Identifier's keyIdentifier, a
 * dot, base64url of its serial number's DER value bytes. malloc'd, or
 * NULL if it has no AKI key identifier. */
char *acme_cert_id(const char *cert_pem);

#endif
