/* libFuzzer: the Pusher protocol's signatures (pusher_sign.h) on what a
 * client controls: an API call's query and body (split at the first NUL),
 * and a channel authorisation. Nothing may pass that was not signed with
 * the app's secret: an input that verifies must carry the signature
 * computed here. */
#include "../daemons/vc-front/realtime/pusher_sign.h"

#include <stdlib.h>
#include <string.h>

static const vc_rt_app_t app = {.id = "1", .key = "key", .secret = "secret"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *nul = memchr(s, 0, size);
    size_t qlen = nul ? (size_t)(nul - s) : size;
    const char *body = nul ? nul + 1 : "";
    size_t blen = nul ? size - qlen - 1 : 0;
    char sig[65];
    int64_t ts;
    pusher_sign_result_t r = pusher_api_verify(&app, "POST", "/apps/1/events", 14, s, qlen, body, blen, 1000, sig, &ts);
    if (r == PUSHER_SIGN_OK && (ts < 400 || ts > 1600))
        abort();
    /* The same bytes as an authorisation string, NUL-terminated. */
    char *auth = malloc(qlen + 1);
    memcpy(auth, s, qlen);
    auth[qlen] = '\0';
    if (pusher_channel_auth_ok(&app, "1.1", "private-a", NULL, auth)) {
        char want[65];
        pusher_hmac_hex(app.secret, "1.1:private-a", 13, want);
        if (strncmp(auth, "key:", 4) != 0 || strcmp(auth + 4, want) != 0)
            abort();
    }
    free(auth);
    return 0;
}
