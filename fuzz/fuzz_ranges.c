/* libFuzzer: Range header values (ranges.h). The first 8 bytes are the
 * file's size, the rest the header. A rewritten header must hold at most
 * RANGES_MAX ranges, each inside the file, in order and apart, and the
 * verdict must not depend on anything but the input. */
#include "../daemons/vc-front/static/ranges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t file = 0;
    memcpy(&file, data, 8);
    file %= (uint64_t)1 << 40;
    char out[RANGES_MAX * 48 + 8];
    ranges_verdict_t v = ranges_tame((const char *)data + 8, size - 8, file, out, sizeof(out));
    if (v != RANGES_REWRITE)
        return 0;
    if (strncmp(out, "bytes=", 6) != 0)
        abort();
    const char *p = out + 6;
    unsigned long long prev_last = 0;
    int n = 0;
    while (*p) {
        char *e;
        unsigned long long a = strtoull(p, &e, 10), b;
        if (*e != '-')
            abort();
        b = strtoull(e + 1, &e, 10);
        if (a > b || b >= file || (n > 0 && a <= prev_last + 1))
            abort();
        prev_last = b;
        n++;
        p = *e == ',' ? e + 1 : e;
        if (*e != ',' && *e != '\0')
            abort();
    }
    if (n < 1 || n > RANGES_MAX)
        abort();
    return 0;
}
