/* WebSocket framing and UTF-8 (libcommon/vc_ws.c), without
 * sockets; integration/test_20_websocket.py runs the same rules on the
 * wire. */
#include "vc_test.h"
#include "vc_ws.h"

typedef struct got {
    int opcode[16];
    size_t len[16];
    uint16_t code[16];
    int n;
} got_t;

static int on_message(void *arg, const vc_ws_message_t *m)
{
    got_t *g = arg;
    if (g->n < 16) {
        g->opcode[g->n] = m->opcode;
        g->len[g->n] = m->len;
        g->code[g->n] = m->code;
        g->n++;
    }
    return 0;
}

/* A masked client frame (mask 0: its bytes are the payload). */
static size_t client_frame(uint8_t *out, int b0, const char *payload, size_t n)
{
    size_t h = vc_ws_frame_header(out, 0, n);
    out[0] = (uint8_t)b0;
    out[1] |= 0x80;
    memset(out + h, 0, 4);
    memcpy(out + h + 4, payload, n);
    return h + 4 + n;
}

static void utf8(void)
{
    CHECK(vc_ws_utf8_feed(0, (const uint8_t *)"hello", 5) == 0);
    CHECK(vc_ws_utf8_feed(0, (const uint8_t *)"\xce\xba\xe2\x82\xac\xf0\x9d\x84\x9e", 9) == 0);
    CHECK(vc_ws_utf8_feed(0, (const uint8_t *)"\xc0\xaf", 2) == VC_WS_UTF8_BAD);
    CHECK(vc_ws_utf8_feed(0, (const uint8_t *)"\xed\xa0\x80", 3) == VC_WS_UTF8_BAD);
    CHECK(vc_ws_utf8_feed(0, (const uint8_t *)"\xf4\x90\x80\x80", 4) == VC_WS_UTF8_BAD);
    CHECK(vc_ws_utf8_feed(0, (const uint8_t *)"\xff", 1) == VC_WS_UTF8_BAD);
    /* Split anywhere: the state carries the rest. */
    uint32_t s = vc_ws_utf8_feed(0, (const uint8_t *)"\xf0\x9d", 2);
    CHECK(s != 0 && s != VC_WS_UTF8_BAD);
    CHECK(vc_ws_utf8_feed(s, (const uint8_t *)"\x84\x9e", 2) == 0);
}

static void frames(void)
{
    vc_ws_limits_t lim = {.max_frame = 100, .max_message = 150};
    uint8_t buf[512];
    vc_ws_error_t err;
    got_t g = {0};
    vc_ws_reader_t r = {0};
    /* Two fragments and a ping between them, then half a frame. */
    size_t n = client_frame(buf, 0x01, "ab", 2);
    n += client_frame(buf + n, 0x89, "p", 1);
    n += client_frame(buf + n, 0x80, "cd", 2);
    size_t whole = n;
    n += client_frame(buf + n, 0x81, "ef", 2) - 3;
    CHECK(vc_ws_read(&r, buf, n, &lim, on_message, &g, &err) == (ssize_t)whole);
    CHECK(g.n == 2 && g.opcode[0] == VC_WS_OP_PING && g.opcode[1] == VC_WS_OP_TEXT && g.len[1] == 4);
    vc_ws_reader_free(&r);
    /* Over the frame limit: refused from the header. */
    memset(&r, 0, sizeof(r));
    buf[0] = 0x81;
    buf[1] = 0x80 | 126;
    buf[2] = 0;
    buf[3] = 200;
    CHECK(vc_ws_read(&r, buf, 4, &lim, on_message, &g, &err) == -1 && err.code == VC_WS_CLOSE_TOO_BIG);
    /* Over the message limit across fragments. */
    char big[100];
    memset(big, 'x', sizeof(big));
    n = client_frame(buf, 0x01, big, 100);
    n += client_frame(buf + n, 0x80, big, 60);
    CHECK(vc_ws_read(&r, buf, n, &lim, on_message, &g, &err) == -1 && err.code == VC_WS_CLOSE_TOO_BIG);
    vc_ws_reader_free(&r);
    /* Close codes. */
    g.n = 0;
    n = client_frame(buf, 0x88, "\x03\xe8ok", 4);
    CHECK(vc_ws_read(&r, buf, n, &lim, on_message, &g, &err) == (ssize_t)n && g.code[0] == 1000 && g.len[0] == 2);
    n = client_frame(buf, 0x88, "\x03\xed", 2); /* 1005 may not be sent */
    CHECK(vc_ws_read(&r, buf, n, &lim, on_message, &g, &err) == -1 && err.code == VC_WS_CLOSE_PROTOCOL);
    n = client_frame(buf, 0x88, "", 0);
    g.n = 0;
    CHECK(vc_ws_read(&r, buf, n, &lim, on_message, &g, &err) == (ssize_t)n && g.code[0] == VC_WS_CLOSE_NO_STATUS);
    /* Unmasked, reserved bits, a reserved opcode. */
    uint8_t raw[] = {0x81, 0x00};
    CHECK(vc_ws_read(&r, raw, 2, &lim, on_message, &g, &err) == -1 && err.code == VC_WS_CLOSE_PROTOCOL);
    n = client_frame(buf, 0xC1, "x", 1);
    CHECK(vc_ws_read(&r, buf, n, &lim, on_message, &g, &err) == -1 && err.code == VC_WS_CLOSE_PROTOCOL);
    n = client_frame(buf, 0x83, "x", 1);
    CHECK(vc_ws_read(&r, buf, n, &lim, on_message, &g, &err) == -1 && err.code == VC_WS_CLOSE_PROTOCOL);
    vc_ws_reader_free(&r);
}

static void handshake(void)
{
    /* RFC 6455 1.3's example. */
    char out[29];
    vc_ws_accept_key(out, "dGhlIHNhbXBsZSBub25jZQ==", 24);
    CHECK_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    uint8_t h[VC_WS_HEADER_MAX];
    CHECK(vc_ws_frame_header(h, VC_WS_OP_TEXT, 125) == 2 && h[1] == 125);
    CHECK(vc_ws_frame_header(h, VC_WS_OP_TEXT, 126) == 4 && h[1] == 126);
    CHECK(vc_ws_frame_header(h, VC_WS_OP_TEXT, 65536) == 10 && h[1] == 127);
    uint8_t p[125];
    char reason[200];
    memset(reason, 'r', sizeof(reason) - 1);
    reason[sizeof(reason) - 1] = '\0';
    CHECK(vc_ws_close_payload(p, 1001, reason) == 125);
}

int main(void)
{
    utf8();
    frames();
    handshake();
    return vc_test_result("ws_proto");
}
