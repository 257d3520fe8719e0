/* qr.h: QR codes as SVG. */
#include "qr.h"
#include "vc_util.h"

#include <qrencode.h>
#include <stdio.h>
#include <stdlib.h>

#define QUIET 4 /* modules of white around the code, as the standard asks */

char *qr_svg(const char *text)
{
    QRcode *q = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
    if (q == NULL)
        return NULL;
    int w = q->width, size = w + 2 * QUIET;
    /* One "h1v1h-1z" square per dark module: at most 24 bytes each. */
    size_t cap = (size_t)w * (size_t)w * 24 + 512, len = 0;
    char *out = vc_malloc(cap);
    len += (size_t)snprintf(out + len, cap - len,
                            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
                            "shape-rendering=\"crispEdges\" role=\"img\" aria-label=\"QR code\">"
                            "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/><path fill=\"#000\" d=\"",
                            size, size, size, size);
    for (int y = 0; y < w; y++)
        for (int x = 0; x < w; x++)
            if (q->data[y * w + x] & 1)
                len += (size_t)snprintf(out + len, cap - len, "M%d %dh1v1h-1z", x + QUIET, y + QUIET);
    snprintf(out + len, cap - len, "\"/></svg>");
    QRcode_free(q);
    return out;
}
