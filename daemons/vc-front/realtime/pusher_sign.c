#include "pusher_sign.h"
#include "rt_form.h"
#include "vc_util.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Query parameters an API call may carry: Pusher's libraries send these
 * and, for GET calls, info and filter_by_prefix. */
#define MAX_PARAMS 16
#define MAX_QUERY 4096

static void hex(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

void pusher_hmac_hex(const char *secret, const void *msg, size_t len, char out[65])
{
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, len, md, &mdlen);
    hex(md, mdlen, out);
}

static int same(const char *a, const char *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}

int pusher_channel_auth_ok(const vc_rt_app_t *app, const char *socket_id, const char *channel, const char *channel_data,
                           const char *auth)
{
    size_t kl = strlen(app->key);
    if (auth == NULL || strncmp(auth, app->key, kl) != 0 || auth[kl] != ':' || strlen(auth + kl + 1) != 64)
        return 0;
    char *msg = channel_data ? vc_asprintf("%s:%s:%s", socket_id, channel, channel_data)
                             : vc_asprintf("%s:%s", socket_id, channel);
    char want[65];
    pusher_hmac_hex(app->secret, msg, strlen(msg), want);
    free(msg);
    return same(want, auth + kl + 1, 64);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const rt_pair_t *)a)->name, ((const rt_pair_t *)b)->name);
}

pusher_sign_result_t pusher_api_verify(const vc_rt_app_t *app, const char *method, const char *path, size_t path_len,
                                       const char *query, size_t query_len, const void *body, size_t body_len,
                                       int64_t now_s, char signature[65], int64_t *timestamp)
{
    rt_form_t form;
    pusher_sign_result_t rc = PUSHER_SIGN_MALFORMED;
    if (query_len > MAX_QUERY || rt_form_parse(&form, query, query_len, MAX_PARAMS) < 0)
        return rc;
    rt_pair_t *p = form.p;
    size_t n = form.n;
    for (size_t i = 0; i < n; i++)
        for (char *c = p[i].name; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c + 32); /* names are signed in lower case */
    if (n > 1)                        /* an empty query has no array, and qsort may not be given NULL */
        qsort(p, n, sizeof(*p), by_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(p[i - 1].name, p[i].name) == 0)
            goto out; /* which would count? neither */
    const char *key = rt_form_get(&form, "auth_key"), *ts = rt_form_get(&form, "auth_timestamp"),
               *sig = rt_form_get(&form, "auth_signature"), *md5 = rt_form_get(&form, "body_md5");
    if (key == NULL || ts == NULL || sig == NULL || strlen(sig) != 64)
        goto out;
    if (strcmp(key, app->key) != 0) {
        rc = PUSHER_SIGN_UNKNOWN_KEY;
        goto out;
    }
    char *tend;
    long long t = strtoll(ts, &tend, 10);
    if (*tend || tend == ts)
        goto out;
    if (t < now_s - PUSHER_API_WINDOW_S || t > now_s + PUSHER_API_WINDOW_S) {
        rc = PUSHER_SIGN_STALE;
        goto out;
    }
    if (body_len > 0 || md5) {
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        char want[33];
        EVP_Digest(body, body_len, md, &mdlen, EVP_md5(), NULL);
        hex(md, mdlen, want);
        if (md5 == NULL || strlen(md5) != 32 || !same(want, md5, 32)) {
            rc = PUSHER_SIGN_BODY_MISMATCH;
            goto out;
        }
    }
    /* "METHOD\nPATH\nk=v&k=v", the parameters sorted, without the
     * signature, values as decoded (Pusher's libraries sign them so). */
    size_t cap = strlen(method) + path_len + 16, used = 0;
    for (size_t i = 0; i < n; i++)
        cap += strlen(p[i].name) + strlen(p[i].value) + 2;
    char *msg = vc_malloc(cap);
    used = (size_t)snprintf(msg, cap, "%s\n%.*s\n", method, (int)path_len, path);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(p[i].name, "auth_signature") == 0)
            continue;
        used += (size_t)snprintf(msg + used, cap - used, "%s%s=%s", used > 0 && msg[used - 1] != '\n' ? "&" : "",
                                 p[i].name, p[i].value);
    }
    char want[65];
    pusher_hmac_hex(app->secret, msg, used, want);
    free(msg);
    rc = same(want, sig, 64) ? PUSHER_SIGN_OK : PUSHER_SIGN_BAD_SIGNATURE;
    if (rc == PUSHER_SIGN_OK) {
        memcpy(signature, want, 65);
        *timestamp = t;
    }
out:
    rt_form_free(&form);
    return rc;
}

const char *pusher_sign_why(pusher_sign_result_t r)
{
    switch (r) {
    case PUSHER_SIGN_OK: return "ok";
    case PUSHER_SIGN_MALFORMED: return "the query's auth parameters are missing, doubled or malformed";
    case PUSHER_SIGN_UNKNOWN_KEY: return "auth_key is not this app's key";
    case PUSHER_SIGN_STALE: return "auth_timestamp is more than 600 s from the server's clock";
    case PUSHER_SIGN_BODY_MISMATCH: return "body_md5 is not the MD5 of the body";
    case PUSHER_SIGN_BAD_SIGNATURE: return "auth_signature is not the HMAC-SHA256 of the call with the app's secret";
    }
    return "?";
}
