#include "acme_x509.h"
#include "jws.h"
#include "vc_util.h"

#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* id-pe-acmeIdentifier */
#define ACME_IDENTIFIER_OID "1.3.6.1.5.5.7.1.31"

static int add_identifier(X509 *x, const char *key_auth)
{
    /* The extension's value is the DER of an OCTET STRING of 32 bytes. */
    unsigned char der[2 + crypto_hash_sha256_BYTES] = {0x04, crypto_hash_sha256_BYTES};
    crypto_hash_sha256(der + 2, (const unsigned char *)key_auth, strlen(key_auth));
    ASN1_OBJECT *obj = OBJ_txt2obj(ACME_IDENTIFIER_OID, 1);
    ASN1_OCTET_STRING *val = ASN1_OCTET_STRING_new();
    X509_EXTENSION *ext = NULL;
    int ok = obj && val && ASN1_OCTET_STRING_set(val, der, sizeof(der)) &&
             (ext = X509_EXTENSION_create_by_OBJ(NULL, obj, 1, val)) != NULL && X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    ASN1_OCTET_STRING_free(val);
    ASN1_OBJECT_free(obj);
    return ok ? 0 : -1;
}

char *acme_alpn_cert(const char *host, const char *key_auth)
{
    EVP_PKEY *key = jws_key_new(0);
    X509 *x = X509_new();
    char *out = NULL;
    if (key == NULL || x == NULL)
        goto done;
    unsigned char serial[16];
    RAND_bytes(serial, sizeof(serial));
    serial[0] &= 0x7f;
    BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
    BN_free(bn);
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -86400);
    X509_gmtime_adj(X509_getm_notAfter(x), 7 * 86400);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)host, -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509_set_pubkey(x, key);
    char *san = vc_asprintf("DNS:%s", host);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
    free(san);
    int ok = ext && X509_add_ext(x, ext, -1) && add_identifier(x, key_auth) == 0 && X509_sign(x, key, EVP_sha256()) > 0;
    X509_EXTENSION_free(ext);
    if (!ok)
        goto done;
    BIO *b = BIO_new(BIO_s_mem());
    if (PEM_write_bio_X509(b, x) == 1 && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) == 1)
        out = jws_bio_string(b);
    BIO_free(b);
done:
    X509_free(x);
    EVP_PKEY_free(key);
    return out;
}

char *acme_csr_b64(EVP_PKEY *key, const char *const *hosts, size_t nhosts)
{
    X509_REQ *req = X509_REQ_new();
    X509_NAME *name = X509_NAME_new();
    char *san = vc_strdup("");
    for (size_t i = 0; i < nhosts; i++) {
        char *next = vc_asprintf("%s%sDNS:%s", san, i ? "," : "", hosts[i]);
        free(san);
        san = next;
    }
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)hosts[0], -1, -1, 0);
    X509_REQ_set_subject_name(req, name);
    X509_REQ_set_pubkey(req, key);
    STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
    char *out = NULL;
    if (ext && sk_X509_EXTENSION_push(exts, ext) && X509_REQ_add_extensions(req, exts) &&
        X509_REQ_sign(req, key, EVP_sha256()) > 0) {
        unsigned char *der = NULL;
        int len = i2d_X509_REQ(req, &der);
        if (len > 0)
            out = jws_b64url(der, (size_t)len);
        OPENSSL_free(der);
    }
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    free(san);
    X509_NAME_free(name);
    X509_REQ_free(req);
    return out;
}

char *acme_cert_id(const char *cert_pem)
{
    BIO *b = BIO_new_mem_buf(cert_pem, -1);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    const ASN1_OCTET_STRING *aki = x ? X509_get0_authority_key_id(x) : NULL;
    unsigned char *der = NULL;
    int n = x ? i2d_ASN1_INTEGER(X509_get0_serialNumber(x), &der) : -1;
    char *out = NULL;
    /* DER of a serial (at most 20 bytes): a tag, a short length, the value. */
    if (aki && ASN1_STRING_length(aki) > 0 && n > 2 && n < 128 && der[1] == n - 2) {
        char *k = jws_b64url(ASN1_STRING_get0_data(aki), (size_t)ASN1_STRING_length(aki));
        char *v = jws_b64url(der + 2, (size_t)n - 2);
        out = vc_asprintf("%s.%s", k, v);
        free(k);
        free(v);
    }
    OPENSSL_free(der);
    X509_free(x);
    return out;
}
