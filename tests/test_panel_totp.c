/* vc-panel's one-time codes against RFC 6238's own test vectors (SHA-1,
 * its appendix B, the last 6 of the 8 digits), its replay and drift
 * rules, and its recovery codes. */
#include "../daemons/vc-panel/totp.h"
#include "vc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The RFC's key, "12345678901234567890", in base32. */
#define RFC_KEY "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

int main(void)
{
    static const struct {
        unsigned long long t;
        int code;
    } vectors[] = {{59, 287082},       {1111111109, 81804},  {1111111111, 50471},
                   {1234567890, 5924}, {2000000000, 279037}, {20000000000ULL, 353130}};
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
        CHECK(totp_code(RFC_KEY, vectors[i].t / TOTP_STEP_S) == vectors[i].code);
    CHECK(totp_code("not base32!", 1) == -1);
    CHECK(totp_code("", 1) == -1);
    /* A code of this step, or one either side, once and in order. */
    char code[8];
    uint64_t now = 1234567890, step = now / TOTP_STEP_S;
    snprintf(code, sizeof(code), "%06d", totp_code(RFC_KEY, step));
    CHECK(totp_check(RFC_KEY, code, now, 0) == step);
    CHECK(totp_check(RFC_KEY, code, now, step) == 0); /* used */
    CHECK(totp_check(RFC_KEY, code, now + TOTP_STEP_S, 0) == step);
    CHECK(totp_check(RFC_KEY, code, now + 2 * TOTP_STEP_S, 0) == 0); /* too old */
    snprintf(code, sizeof(code), "%06d", totp_code(RFC_KEY, step + 1));
    CHECK(totp_check(RFC_KEY, code, now, step) == step + 1); /* a clock a step ahead */
    CHECK(totp_check(RFC_KEY, "12345", now, 0) == 0);
    CHECK(totp_check(RFC_KEY, "12a456", now, 0) == 0);
    CHECK(totp_check(RFC_KEY, "1234567", now, 0) == 0);
    /* Secrets are 32 base32 characters, each new. */
    char a[TOTP_SECRET_B32], b[TOTP_SECRET_B32];
    totp_new_secret(a);
    totp_new_secret(b);
    CHECK(strlen(a) == 32 && strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") == 32 && strcmp(a, b) != 0);
    CHECK(totp_code(a, 1) >= 0);
    /* Recovery codes: "xxxxx-xxxxx"; the hash ignores case and dashes. */
    char r[RECOVERY_LEN], h1[65], h2[65], h3[65];
    totp_recovery_code(r);
    CHECK(strlen(r) == 11 && r[5] == '-');
    totp_recovery_hash(r, h1);
    char upper[RECOVERY_LEN], nodash[RECOVERY_LEN];
    for (int i = 0; i < RECOVERY_LEN; i++)
        upper[i] = (char)(r[i] >= 'a' && r[i] <= 'z' ? r[i] - 32 : r[i]);
    snprintf(nodash, sizeof(nodash), "%.5s%s", r, r + 6);
    totp_recovery_hash(upper, h2);
    totp_recovery_hash(nodash, h3);
    CHECK(strcmp(h1, h2) == 0 && strcmp(h1, h3) == 0 && strlen(h1) == 64);
    char *uri = totp_uri("admin", RFC_KEY);
    CHECK_STR(uri,
              "otpauth://totp/Velocity:admin?secret=" RFC_KEY "&issuer=Velocity&algorithm=SHA1&digits=6&period=30");
    free(uri);
    return vc_test_result("panel_totp");
}
