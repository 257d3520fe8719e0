#include "certs.h"
#include "acme_x509.h"
#include "vc_acme.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct io {
    const char *site;
    cert_state_t *s;
    const cert_state_t *cs;
} io_t;

static void copy(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

static int read_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    io_t *io = arg;
    MDB_val k = {strlen(io->site), (void *)io->site}, v;
    if (mdb_get(txn, dbi, &k, &v) != 0)
        return -1;
    json_t *j = json_loadb(v.mv_data, v.mv_size, 0, NULL);
    if (j == NULL)
        return -1;
    cert_state_t *s = io->s;
    copy(s->hosts, sizeof(s->hosts), json_string_value(json_object_get(j, "hosts")));
    s->not_before = json_integer_value(json_object_get(j, "not_before"));
    s->not_after = json_integer_value(json_object_get(j, "not_after"));
    s->renew_at = json_integer_value(json_object_get(j, "renew_at"));
    s->next_try = json_integer_value(json_object_get(j, "next_try"));
    s->failures = (unsigned)json_integer_value(json_object_get(j, "failures"));
    copy(s->issuer, sizeof(s->issuer), json_string_value(json_object_get(j, "issuer")));
    copy(s->last_error, sizeof(s->last_error), json_string_value(json_object_get(j, "last_error")));
    copy(s->cert_id, sizeof(s->cert_id), json_string_value(json_object_get(j, "cert_id")));
    copy(s->directory, sizeof(s->directory), json_string_value(json_object_get(j, "directory")));
    s->ari_next = json_integer_value(json_object_get(j, "ari_next"));
    s->window_start = json_integer_value(json_object_get(j, "window_start"));
    s->window_end = json_integer_value(json_object_get(j, "window_end"));
    json_decref(j);
    return 0;
}

int certs_state_read(vc_store_t *st, const char *site, cert_state_t *s)
{
    memset(s, 0, sizeof(*s));
    io_t io = {site, s, NULL};
    if (vc_store_read(st, VC_DB_ACME_CERTS, read_fn, &io) != 0) {
        memset(s, 0, sizeof(*s));
        return -1;
    }
    return 0;
}

static int write_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    const io_t *io = arg;
    const cert_state_t *s = io->cs;
    json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:i, s:s, s:s}", "hosts", s->hosts, "not_before",
                          (json_int_t)s->not_before, "not_after", (json_int_t)s->not_after, "renew_at",
                          (json_int_t)s->renew_at, "next_try", (json_int_t)s->next_try, "failures", (int)s->failures,
                          "issuer", s->issuer, "last_error", s->last_error);
    if (j)
        json_object_update_new(j, json_pack("{s:s, s:s, s:I, s:I, s:I}", "cert_id", s->cert_id, "directory",
                                            s->directory, "ari_next", (json_int_t)s->ari_next, "window_start",
                                            (json_int_t)s->window_start, "window_end", (json_int_t)s->window_end));
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL)
        return -EINVAL;
    MDB_val k = {strlen(io->site), (void *)io->site}, v = {strlen(text), text};
    int rc = mdb_put(txn, dbi, &k, &v, 0);
    free(text);
    return rc ? vc_store_err(rc) : 0;
}

int certs_state_write(vc_store_t *st, const char *site, const cert_state_t *s)
{
    io_t io = {site, NULL, s};
    return vc_store_write(st, VC_DB_ACME_CERTS, write_fn, &io);
}

typedef struct names {
    const char *prefix;
    char **v;
    size_t n;
} names_t;

static int names_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    names_t *nm = arg;
    size_t plen = strlen(nm->prefix);
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, dbi, &cur) != 0)
        return -1;
    MDB_val k = {plen, (void *)nm->prefix}, v;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, nm->prefix, plen) != 0)
            break;
        nm->v = vc_realloc(nm->v, (nm->n + 1) * sizeof(*nm->v));
        nm->v[nm->n++] = vc_strndup(k.mv_data, k.mv_size);
    }
    mdb_cursor_close(cur);
    return 0;
}

size_t certs_names(vc_store_t *st, const char *prefix, char ***names)
{
    names_t nm = {prefix, NULL, 0};
    vc_store_read(st, VC_DB_ACME_CERTS, names_fn, &nm);
    *names = nm.v;
    return nm.n;
}

void certs_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* path.tmp, whole and synced (a partial write, ENOSPC among them, is
 * removed). 0, or -1 with err. */
static int write_tmp(const char *path, const char *text, int mode, char *err, size_t errlen)
{
    char *tmp = vc_asprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    size_t n = strlen(text);
    int ok = fd >= 0 && write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        snprintf(err, errlen, "\"%s\" could not be written: %s", path, strerror(e));
    }
    free(tmp);
    return ok ? 0 : -1;
}

static void drop_tmp(const char *path)
{
    char *tmp = vc_asprintf("%s.tmp", path);
    unlink(tmp);
    free(tmp);
}

static int rename_tmp(const char *path, char *err, size_t errlen)
{
    char *tmp = vc_asprintf("%s.tmp", path);
    int rc = rename(tmp, path);
    if (rc != 0) {
        snprintf(err, errlen, "\"%s\" could not be renamed: %s", tmp, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

static int64_t asn1_unix(const ASN1_TIME *t)
{
    struct tm tm;
    if (ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return (int64_t)timegm(&tm);
}

int certs_install(const char *data_dir, const char *site, const char *cert_pem, const char *key_pem, cert_state_t *s,
                  char *err, size_t errlen)
{
    BIO *b = BIO_new_mem_buf(cert_pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    if (x == NULL) {
        snprintf(err, errlen, "the CA's chain holds no certificate");
        return -1;
    }
    /* The schedule changes only once the pair is in place. */
    cert_state_t n = *s;
    n.not_before = asn1_unix(X509_get0_notBefore(x));
    n.not_after = asn1_unix(X509_get0_notAfter(x));
    n.issuer[0] = '\0';
    X509_NAME_get_text_by_NID(X509_get_issuer_name(x), NID_commonName, n.issuer, sizeof(n.issuer));
    X509_free(x);
    char *id = acme_cert_id(cert_pem);
    copy(n.cert_id, sizeof(n.cert_id), id);
    free(id);
    n.ari_next = 0;
    n.window_start = n.window_end = 0;
    if (n.not_after <= n.not_before) {
        snprintf(err, errlen, "the CA's certificate has no lifetime");
        return -1;
    }
    n.renew_at = n.not_before + (n.not_after - n.not_before) * 2 / 3;
    char *kp = vc_acme_cert_path(data_dir, site, "key"), *cp = vc_acme_cert_path(data_dir, site, "crt");
    /* DATA/tls/acme, or DATA/tls/acme/on-demand for an on-demand host's. */
    char *dir = vc_strdup(kp);
    *strrchr(dir, '/') = '\0';
    int rc = vc_mkdirs(dir, 0700);
    if (rc < 0)
        snprintf(err, errlen, "%s could not be made: %s", dir, vc_strerror(rc));
    free(dir);
    /* Both written before either is renamed: a full disk leaves the pair
     * in service as it was. Only a kill between the renames parts them
     * (the start's pair check orders again then). */
    if (rc == 0)
        rc = write_tmp(kp, key_pem, 0600, err, errlen);
    if (rc == 0 && (rc = write_tmp(cp, cert_pem, 0644, err, errlen)) != 0)
        drop_tmp(kp);
    if (rc == 0 && (rc = rename_tmp(kp, err, errlen)) != 0)
        drop_tmp(cp);
    if (rc == 0)
        rc = rename_tmp(cp, err, errlen);
    if (rc == 0)
        *s = n;
    free(kp);
    free(cp);
    return rc;
}

int certs_pair_agrees(const char *data_dir, const char *site)
{
    char *cp = vc_acme_cert_path(data_dir, site, "crt"), *kp = vc_acme_cert_path(data_dir, site, "key");
    FILE *cf = fopen(cp, "r"), *kf = fopen(kp, "r");
    X509 *x = cf ? PEM_read_X509(cf, NULL, NULL, NULL) : NULL;
    EVP_PKEY *k = kf ? PEM_read_PrivateKey(kf, NULL, NULL, NULL) : NULL;
    int agrees = x && k && X509_check_private_key(x, k) == 1;
    X509_free(x);
    EVP_PKEY_free(k);
    if (cf)
        fclose(cf);
    if (kf)
        fclose(kf);
    free(cp);
    free(kp);
    return agrees;
}
