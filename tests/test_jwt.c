/* HS256 JWTs (daemons/vc-front/realtime/jwt.c) against RFC 7515's example A.1,
 * and Mercure's topic selectors (mercure_match.c). */
#include "realtime/jwt.h"
#include "realtime/mercure_match.h"
#include "vc_test.h"

static void rfc7515(void)
{
    const char *k = "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow";
    unsigned char key[80];
    long kl = jwt_b64url_decode(k, strlen(k), key);
    CHECK(kl == 64);
    const char *tok = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
                      ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
                      ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const char *why;
    json_t *c = jwt_hs256_verify(tok, strlen(tok), (const char *)key, (size_t)kl, 1300819379, &why);
    CHECK(c != NULL && strcmp(json_string_value(json_object_get(c, "iss")), "joe") == 0);
    json_decref(c);
    /* Expired a second later. */
    CHECK(jwt_hs256_verify(tok, strlen(tok), (const char *)key, (size_t)kl, 1300819380, &why) == NULL);
    /* Another key, or one byte of the signature changed. */
    CHECK(jwt_hs256_verify(tok, strlen(tok), "other", 5, 1300819379, &why) == NULL);
    char *bad = strdup(tok);
    bad[strlen(bad) - 2] = bad[strlen(bad) - 2] == 'A' ? 'B' : 'A';
    CHECK(jwt_hs256_verify(bad, strlen(bad), (const char *)key, (size_t)kl, 1300819379, &why) == NULL);
    free(bad);
    /* alg "none", whatever follows. */
    const char *none = "eyJhbGciOiJub25lIn0.eyJpc3MiOiJqb2UifQ.";
    CHECK(jwt_hs256_verify(none, strlen(none), "", 0, 0, &why) == NULL && strstr(why, "HS256"));
    CHECK(jwt_hs256_verify("a.b", 3, "k", 1, 0, &why) == NULL);
    CHECK(jwt_hs256_verify("a.b.c.d", 7, "k", 1, 0, &why) == NULL);
}

static void selectors(void)
{
    CHECK(mercure_match("*", "anything"));
    CHECK(mercure_match("https://a/books/1", "https://a/books/1"));
    CHECK(!mercure_match("https://a/books/1", "https://a/books/10"));
    CHECK(mercure_match("https://a/books/{id}", "https://a/books/10"));
    CHECK(!mercure_match("https://a/books/{id}", "https://a/books/10/reviews"));
    CHECK(!mercure_match("https://a/books/{id}", "https://a/books/"));
    CHECK(mercure_match("https://a/{+rest}", "https://a/books/10/reviews"));
    CHECK(mercure_match("https://a/{x}/{y}", "https://a/b/c"));
    CHECK(!mercure_match("https://a/{x", "https://a/b"));
    CHECK(!mercure_match("{a}{b}{c}{d}{e}", "abcde")); /* over MERCURE_MAX_VARS */
}

int main(void)
{
    rfc7515();
    selectors();
    return vc_test_result("jwt");
}
