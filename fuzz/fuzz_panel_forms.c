/* libFuzzer: what the panel reads from a client before anything else
 * sees it (daemons/vc-panel/forms.c), and the second factor a sign-in
 * gives (totp.c). The input is tried as a Cookie header, a query string,
 * a JSON body, X-Forwarded-For and a code; what each accepts must be
 * what it promises. */
#include "../daemons/vc-panel/forms.h"
#include "../daemons/vc-panel/totp.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

static void check_name(const char *s)
{
    if (s && form_name_ok(s) && (strchr(s, '/') || strstr(s, "..") || s[0] == '.' || s[0] == '-'))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    char out[128];
    /* Every cookie of the name, as http.c walks them. */
    for (size_t pos = 0, n = 0; pos < size && n < 64; n++) {
        int len = form_cookie(in, size, "__Host-vc_panel", &pos, out, sizeof(out));
        if (len >= 0 && ((size_t)len != strlen(out) || strpbrk(out, " ;,\"\\") != NULL))
            abort();
    }
    int len = form_query(in, size, "user", out, sizeof(out));
    if (len >= 0) {
        if ((size_t)len != strlen(out))
            abort();
        for (int i = 0; i < len; i++)
            if ((unsigned char)out[i] < 0x20)
                abort();
        check_name(out);
    }
    char why[256];
    json_t *j = form_json(in, size, why, sizeof(why));
    if (j) {
        if (!json_is_object(j))
            abort();
        const char *s = form_str(j, "user", 63);
        if (s && strlen(s) > 63)
            abort();
        check_name(s);
        json_decref(j);
    }
    if (form_forwarded_for(in, size, out, sizeof(out)) > 0) {
        unsigned char addr[16];
        if (inet_pton(AF_INET, out, addr) != 1 && inet_pton(AF_INET6, out, addr) != 1)
            abort();
    }
    char code[17];
    size_t n = size < 16 ? size : 16;
    memcpy(code, in, n);
    code[n] = '\0';
    uint64_t step = totp_check("JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", code, 1700000000, 0);
    if (step && (strlen(code) != 6 || totp_code("JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", step) != atoi(code)))
        abort();
    char hash[65];
    totp_recovery_hash(code, hash);
    return 0;
}
