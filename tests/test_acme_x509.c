/* What vc-acme makes of certificates (daemons/vc-acme/acme_x509.c): the
 * ARI identifier (RFC 9773 4.1) of a certificate built with the RFC's own
 * example, keyIdentifier 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:
 * DE:01:C8:D4 and serial 0x87654321 (DER 00 87 65 43 21). */
#include "acme_x509.h"
#include "jws.h"
#include "vc_test.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>

/* A self-signed certificate with that serial and, if aki, that
 * Authority Key Identifier, as PEM (malloc'd). */
static char *example_cert(long serial, int aki)
{
    static const unsigned char keyid[] = {0x69, 0x88, 0x5B, 0x6B, 0x87, 0x46, 0x40, 0x41, 0xE1, 0xB3,
                                          0x7B, 0x84, 0x7B, 0xA0, 0xAE, 0x2C, 0xDE, 0x01, 0xC8, 0xD4};
    EVP_PKEY *key = jws_key_new(0);
    X509 *x = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    if (aki) {
        AUTHORITY_KEYID *a = AUTHORITY_KEYID_new();
        a->keyid = ASN1_OCTET_STRING_new();
        ASN1_OCTET_STRING_set(a->keyid, keyid, sizeof(keyid));
        X509_add1_ext_i2d(x, NID_authority_key_identifier, a, 0, X509V3_ADD_DEFAULT);
        AUTHORITY_KEYID_free(a);
    }
    X509_sign(x, key, EVP_sha256());
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    char *pem = jws_bio_string(b);
    BIO_free(b);
    X509_free(x);
    EVP_PKEY_free(key);
    return pem;
}

int main(void)
{
    char *pem = example_cert(0x87654321L, 1);
    char *id = acme_cert_id(pem);
    CHECK_STR(id, "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE");
    free(id);
    free(pem);
    /* A serial whose top bit is clear has no leading zero. */
    pem = example_cert(0x12345L, 1);
    id = acme_cert_id(pem);
    CHECK_STR(id, "aYhba4dGQEHhs3uEe6CuLN4ByNQ.ASNF");
    free(id);
    free(pem);
    /* No AKI: no identifier. */
    pem = example_cert(0x12345L, 0);
    CHECK(acme_cert_id(pem) == NULL);
    free(pem);
    CHECK(acme_cert_id("not a certificate") == NULL);
    return vc_test_result("acme_x509");
}
