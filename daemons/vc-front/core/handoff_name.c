/*
 * The name in an X-Accel-Redirect or X-Sendfile header (handoff_name.h).
 */
#include "handoff_name.h"

#include <string.h>

static int hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

ssize_t handoff_name(const char *v, size_t len, int accel, char *out, size_t cap)
{
    size_t n = 0;
    if (cap == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        char c = v[i];
        if (c == '?' && accel)
            break;
        if (accel && c == '%' && i + 2 < len && hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
            c = (char)(hex(v[i + 1]) << 4 | hex(v[i + 2]));
            i += 2;
        }
        if (c == '\0' || n + 1 >= cap)
            return -1;
        out[n++] = c;
    }
    out[n] = '\0';
    for (const char *p = out; (p = strstr(p, "..")) != NULL; p += 2)
        if ((p == out || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
            return -1;
    return (ssize_t)n;
}
