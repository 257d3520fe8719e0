/* libFuzzer: HTTP dates (libcommon/vc_httpdate.c). Whatever the input, a
 * date it parses to prints as an IMF-fixdate that parses back to the same
 * second; and its first 8 bytes, taken as a time, print and parse back. */
#include "vc_httpdate.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char out[VC_HTTPDATE_LEN + 1];
    int64_t t = vc_httpdate_parse((const char *)data, size);
    if (t >= 0) {
        /* A leap second (":60") prints as the next second, which parses
         * to the same time. */
        if (vc_httpdate_format(t, out) != VC_HTTPDATE_LEN || vc_httpdate_parse(out, VC_HTTPDATE_LEN) != t)
            abort();
    } else if (t != -1) {
        abort();
    }
    if (size >= 8) {
        int64_t x;
        memcpy(&x, data, 8);
        x = (int64_t)((uint64_t)x % 253402300800ULL);
        if (vc_httpdate_format(x, out) != VC_HTTPDATE_LEN || vc_httpdate_parse(out, strlen(out)) != x)
            abort();
    }
    return 0;
}
