/* libFuzzer: what Mercure clients send the front: a JWT (jwt.h), a topic
 * selector against a topic (mercure_match.h), a form or query (rt_form.h).
 * The first byte picks which. A token that verifies must carry the HMAC
 * of its first two parts under the key; a parsed form holds no NUL. */
#include "../daemons/vc-front/realtime/jwt.h"
#include "../daemons/vc-front/realtime/mercure_match.h"
#include "../daemons/vc-front/realtime/rt_form.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 3) {
    case 0: {
        const char *why;
        json_t *c = jwt_hs256_verify(s, n, "key", 3, 1000, &why);
        if (c) {
            const char *dot2 = memrchr(s, '.', n);
            unsigned char want[32], got[64];
            unsigned wl = 0;
            HMAC(EVP_sha256(), "key", 3, (const unsigned char *)s, (size_t)(dot2 - s), want, &wl);
            if (jwt_b64url_decode(dot2 + 1, (size_t)(s + n - dot2 - 1), got) != 32 || memcmp(got, want, 32) != 0)
                abort();
            json_decref(c);
        }
        break;
    }
    case 1: {
        char *buf = malloc(n + 1);
        memcpy(buf, s, n);
        buf[n] = '\0';
        size_t sl = strlen(buf);
        const char *topic = sl < n ? buf + sl + 1 : "";
        if (sl <= 256 && strlen(topic) <= 2048)
            (void)mercure_match(buf, topic);
        free(buf);
        break;
    }
    default: {
        rt_form_t f;
        if (rt_form_parse(&f, s, n, 64) == 0) {
            for (size_t i = 0; i < f.n; i++)
                if (strlen(f.p[i].name) > n || strlen(f.p[i].value) > n)
                    abort();
            rt_form_free(&f);
        }
    }
    }
    return 0;
}
