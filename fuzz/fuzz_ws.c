/* libFuzzer: what a WebSocket client sends the front (libcommon/vc_ws.h): any
 * bytes, read in two writes split where the first byte says, with small
 * limits. A message handed over must be within the limits, a text one
 * valid UTF-8, and a refusal must carry a close code we may send. */
#include "vc_ws.h"

#include <stdlib.h>
#include <string.h>

static int on_message(void *arg, const vc_ws_message_t *m)
{
    const vc_ws_limits_t *lim = arg;
    if (m->opcode == VC_WS_OP_TEXT && vc_ws_utf8_feed(0, m->data, m->len) != 0)
        abort();
    if ((m->opcode == VC_WS_OP_TEXT || m->opcode == VC_WS_OP_BINARY) && m->len > lim->max_message)
        abort();
    if ((m->opcode & 8) && m->len > 125)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    vc_ws_limits_t lim = {.max_frame = 300, .max_message = 500};
    size_t split = data[0] % (size);
    uint8_t *buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    size_t have = split, at = 0;
    vc_ws_reader_t r = {0};
    vc_ws_error_t err;
    for (int round = 0; round < 2; round++) {
        ssize_t n = vc_ws_read(&r, buf + at, have - at, &lim, on_message, &lim, &err);
        if (n < 0) {
            if (err.code != VC_WS_CLOSE_PROTOCOL && err.code != VC_WS_CLOSE_INVALID_DATA &&
                err.code != VC_WS_CLOSE_TOO_BIG)
                abort();
            break;
        }
        at += (size_t)n;
        have = size - 1;
    }
    vc_ws_reader_free(&r);
    free(buf);
    return 0;
}
