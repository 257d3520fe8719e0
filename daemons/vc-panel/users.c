/* users.h: accounts, with Argon2id password hashes. */
#include "users.h"
#include "records.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

json_t *users_get(panel_t *p, const char *user)
{
    return records_get(p->store, PANEL_DB_USERS, user);
}

int users_put(panel_t *p, const char *user, const json_t *rec)
{
    return records_put(p->store, PANEL_DB_USERS, user, rec);
}

/* libsodium's interactive limits (2 passes over 64 MiB, about 0.14 s on
 * two cores, docs/panel.md): the cost a sign-in pays, and each guess with it. */
#define PW_OPS crypto_pwhash_OPSLIMIT_INTERACTIVE
#define PW_MEM crypto_pwhash_MEMLIMIT_INTERACTIVE

int users_set_password(panel_t *p, const char *user, const char *password, const char *role, int must_change, char *why,
                       size_t whylen)
{
    size_t n = strlen(password);
    if (n < PASSWORD_MIN || n > PASSWORD_MAX) {
        snprintf(why, whylen, "a password has %d to %d characters", PASSWORD_MIN, PASSWORD_MAX);
        return -1;
    }
    char hash[crypto_pwhash_STRBYTES];
    if (crypto_pwhash_str_alg(hash, password, n, PW_OPS, PW_MEM, crypto_pwhash_ALG_ARGON2ID13) != 0) {
        snprintf(why, whylen, "out of memory while hashing the password");
        return -1;
    }
    json_t *rec = users_get(p, user);
    if (rec == NULL)
        rec = json_pack("{s:s}", "role", role ? role : "viewer");
    else if (role)
        json_object_set_new(rec, "role", json_string(role));
    json_object_set_new(rec, "hash", json_string(hash));
    json_object_set_new(rec, "must_change", json_boolean(must_change));
    int rc = users_put(p, user, rec);
    json_decref(rec);
    if (rc < 0) {
        snprintf(why, whylen, "the users database refused the change: %s", vc_strerror(rc));
        return -1;
    }
    return 0;
}

int users_check_password(const json_t *rec, const char *password)
{
    /* A hash of a password nobody has: the same work for a user that is
     * not there. Made once. */
    static char decoy[crypto_pwhash_STRBYTES];
    if (decoy[0] == '\0') {
        char random[33];
        randombytes_buf(random, sizeof(random) - 1);
        random[32] = '\0';
        if (crypto_pwhash_str_alg(decoy, random, 32, PW_OPS, PW_MEM, crypto_pwhash_ALG_ARGON2ID13) != 0)
            decoy[0] = '\0';
    }
    const char *hash = rec ? json_string_value(json_object_get(rec, "hash")) : NULL;
    size_t n = strlen(password);
    if (n > PASSWORD_MAX)
        return 0;
    int ok = crypto_pwhash_str_verify(hash ? hash : decoy, password, n) == 0;
    return ok && hash != NULL;
}

static int count_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    MDB_stat st;
    if (mdb_stat(txn, dbi, &st) == 0)
        *(size_t *)arg = st.ms_entries;
    return 0;
}

size_t users_count(panel_t *p)
{
    size_t n = 0;
    vc_store_read(p->store, PANEL_DB_USERS, count_fn, &n);
    return n;
}

char *users_random_password(void)
{
    /* 18 random bytes, base64url: 24 characters, 144 bits. */
    unsigned char r[18];
    randombytes_buf(r, sizeof(r));
    char out[sodium_base64_ENCODED_LEN(18, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
    sodium_bin2base64(out, sizeof(out), r, sizeof(r), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return vc_strdup(out);
}

char *users_first_password_file(const panel_t *p)
{
    return vc_asprintf("%s/panel/first-password", p->d.data_dir);
}

void users_first_password_spent(panel_t *p, const char *user)
{
    char *file = users_first_password_file(p);
    size_t len = 0;
    char *text = vc_read_file(file, &len);
    size_t n = strlen(user);
    if (text && len > n && strncmp(text, user, n) == 0 && text[n] == ' ')
        unlink(file);
    if (text)
        sodium_memzero(text, len);
    free(text);
    free(file);
}
