/* vc_selfsigned.h: the suite's self-signed certificate for localhost. */
#include "vc_selfsigned.h"
#include "vc_log.h"
#include "vc_util.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int vc_selfsigned_ensure(const char *dir, char **cert_out, char **key_out)
{
    char *cert = vc_asprintf("%s/selfsigned.crt", dir), *key = vc_asprintf("%s/selfsigned.key", dir);
    *cert_out = cert;
    *key_out = key;
    struct stat st;
    if (stat(cert, &st) == 0 && stat(key, &st) == 0)
        return 0;
    vc_mkdirs(dir, 0700);
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    int ok = pkey && x;
    if (ok) {
        ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(vc_now_us() & 0x7fffffff));
        X509_gmtime_adj(X509_getm_notBefore(x), -3600);
        X509_gmtime_adj(X509_getm_notAfter(x), 3650L * 24 * 3600);
        X509_set_version(x, 2);
        X509_set_pubkey(x, pkey);
        X509_NAME *name = X509_get_subject_name(x);
        X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"Velocity", -1, -1, 0);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1, 0);
        X509_set_issuer_name(x, name);
        X509V3_CTX v3;
        X509V3_set_ctx_nodb(&v3);
        X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
        X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1");
        if (ext) {
            X509_add_ext(x, ext, -1);
            X509_EXTENSION_free(ext);
        }
        ok = X509_sign(x, pkey, EVP_sha256()) > 0;
    }
    /* Written aside and renamed, key first: the front and the panel may
     * both make it at their first start, and a reader that sees the
     * certificate sees its key. */
    char *tkey = vc_asprintf("%s.%d", key, (int)getpid()), *tcert = vc_asprintf("%s.%d", cert, (int)getpid());
    if (ok) {
        /* The key is written 0600 from the first byte. */
        mode_t old = umask(077);
        FILE *kf = fopen(tkey, "w");
        umask(old);
        FILE *cf = fopen(tcert, "w");
        ok = kf && cf && PEM_write_PrivateKey(kf, pkey, NULL, NULL, 0, NULL, NULL) && PEM_write_X509(cf, x);
        if (kf)
            ok = fclose(kf) == 0 && ok;
        if (cf)
            ok = fclose(cf) == 0 && ok;
        ok = ok && rename(tkey, key) == 0 && rename(tcert, cert) == 0;
    }
    unlink(tkey);
    unlink(tcert);
    free(tkey);
    free(tcert);
    X509_free(x);
    EVP_PKEY_free(pkey);
    if (!ok) {
        vc_log(VC_LOG_ERR, "tls", "cannot make a self-signed certificate in \"%s\"", dir);
        return -1;
    }
    vc_log(VC_LOG_NOTICE, "tls", "made a self-signed certificate for localhost: %s", cert);
    return 0;
}
