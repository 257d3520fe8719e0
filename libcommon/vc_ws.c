#include "vc_ws.h"
#include "vc_util.h"

#include <openssl/evp.h>
#include <string.h>

/* The state of vc_ws_utf8_feed: bytes still owed by the character begun, and
 * the range the next one must fall in (RFC 3629's table: it excludes
 * overlong forms, surrogates and code points past U+10FFFF). */
#define U8_STATE(owed, lo, hi) (((uint32_t)(owed) << 16) | ((uint32_t)(lo) << 8) | (uint32_t)(hi))

uint32_t vc_ws_utf8_feed(uint32_t state, const uint8_t *p, size_t n)
{
    if (state == VC_WS_UTF8_BAD)
        return state;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        uint32_t owed = state >> 16;
        if (owed) {
            if (c < ((state >> 8) & 0xff) || c > (state & 0xff))
                return VC_WS_UTF8_BAD;
            state = owed == 1 ? 0 : U8_STATE(owed - 1, 0x80, 0xbf);
            continue;
        }
        if (c < 0x80)
            continue;
        if (c >= 0xc2 && c <= 0xdf)
            state = U8_STATE(1, 0x80, 0xbf);
        else if (c == 0xe0)
            state = U8_STATE(2, 0xa0, 0xbf);
        else if (c == 0xed)
            state = U8_STATE(2, 0x80, 0x9f);
        else if (c >= 0xe1 && c <= 0xef)
            state = U8_STATE(2, 0x80, 0xbf);
        else if (c == 0xf0)
            state = U8_STATE(3, 0x90, 0xbf);
        else if (c >= 0xf1 && c <= 0xf3)
            state = U8_STATE(3, 0x80, 0xbf);
        else if (c == 0xf4)
            state = U8_STATE(3, 0x80, 0x8f);
        else
            return VC_WS_UTF8_BAD;
    }
    return state;
}

/* RFC 6455 7.4: what a peer may put in a close frame. 1004-1006 and 1015
 * are reserved, 1016-2999 are for future RFCs, 3000-4999 are for
 * libraries and applications (the Pusher protocol's 4000s among them). */
static int close_code_allowed(uint16_t code)
{
    if (code >= 3000 && code <= 4999)
        return 1;
    return code >= 1000 && code <= 1014 && code != 1004 && code != 1005 && code != 1006;
}

static ssize_t fail(vc_ws_error_t *err, uint16_t code, const char *why)
{
    err->code = code;
    err->why = why;
    return -1;
}

static int append(vc_ws_reader_t *r, const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0; /* an empty fragment: nothing, and maybe no buffer yet */
    if (r->msg_len + n > r->msg_cap) {
        size_t cap = r->msg_cap ? r->msg_cap : 256;
        while (cap < r->msg_len + n)
            cap *= 2;
        r->msg = vc_realloc(r->msg, cap);
        r->msg_cap = cap;
    }
    memcpy(r->msg + r->msg_len, p, n);
    r->msg_len += n;
    return 0;
}

/* A control frame: whole (FIN) and short, as 5.5 says. */
static int on_control(int opcode, uint8_t *p, size_t n, vc_ws_on_message_t on_message, void *arg, vc_ws_error_t *err)
{
    vc_ws_message_t m = {.opcode = opcode, .data = p, .len = n, .code = 0};
    if (opcode == VC_WS_OP_CLOSE) {
        if (n == 1)
            return (int)fail(err, VC_WS_CLOSE_PROTOCOL, "a close frame of one byte");
        m.code = VC_WS_CLOSE_NO_STATUS;
        if (n >= 2) {
            m.code = (uint16_t)(p[0] << 8 | p[1]);
            if (!close_code_allowed(m.code))
                return (int)fail(err, VC_WS_CLOSE_PROTOCOL, "a close code that may not be sent");
            if (vc_ws_utf8_feed(0, p + 2, n - 2) != 0)
                return (int)fail(err, VC_WS_CLOSE_INVALID_DATA, "a close reason that is not UTF-8");
            m.data = p + 2;
            m.len = n - 2;
        }
    }
    return on_message(arg, &m) ? 1 : 0;
}

ssize_t vc_ws_read(vc_ws_reader_t *r, uint8_t *buf, size_t len, const vc_ws_limits_t *lim,
                   vc_ws_on_message_t on_message, void *arg, vc_ws_error_t *err)
{
    size_t at = 0;
    while (len - at >= 2) {
        uint8_t *h = buf + at;
        int fin = h[0] & 0x80, opcode = h[0] & 0x0f, masked = h[1] & 0x80;
        if (h[0] & 0x70)
            return fail(err, VC_WS_CLOSE_PROTOCOL, "reserved bits set with no extension agreed");
        if (!masked)
            return fail(err, VC_WS_CLOSE_PROTOCOL, "an unmasked frame from the client");
        int control = opcode & 0x8;
        if (opcode != VC_WS_OP_CONTINUATION && opcode != VC_WS_OP_TEXT && opcode != VC_WS_OP_BINARY &&
            opcode != VC_WS_OP_CLOSE && opcode != VC_WS_OP_PING && opcode != VC_WS_OP_PONG)
            return fail(err, VC_WS_CLOSE_PROTOCOL, "a reserved opcode");
        uint64_t plen = h[1] & 0x7f;
        size_t hlen = 2;
        if (plen == 126) {
            if (len - at < 4)
                break;
            plen = (uint64_t)h[2] << 8 | h[3];
            hlen = 4;
            if (plen < 126)
                return fail(err, VC_WS_CLOSE_PROTOCOL, "a length not in its shortest form");
        } else if (plen == 127) {
            if (len - at < 10)
                break;
            plen = 0;
            for (int i = 0; i < 8; i++)
                plen = plen << 8 | h[2 + i];
            hlen = 10;
            if (plen >> 63)
                return fail(err, VC_WS_CLOSE_PROTOCOL, "a length with its top bit set");
            if (plen <= 0xffff)
                return fail(err, VC_WS_CLOSE_PROTOCOL, "a length not in its shortest form");
        }
        if (control && (!fin || plen > 125))
            return fail(err, VC_WS_CLOSE_PROTOCOL, "a control frame fragmented or over 125 bytes");
        if (!control) {
            if (opcode == VC_WS_OP_CONTINUATION && r->msg_opcode == 0)
                return fail(err, VC_WS_CLOSE_PROTOCOL, "a continuation with no message begun");
            if (opcode != VC_WS_OP_CONTINUATION && r->msg_opcode != 0)
                return fail(err, VC_WS_CLOSE_PROTOCOL, "a new message before the last one ended");
            if (plen > lim->max_frame)
                return fail(err, VC_WS_CLOSE_TOO_BIG, "a frame over the size limit");
            if (r->msg_len + plen > lim->max_message)
                return fail(err, VC_WS_CLOSE_TOO_BIG, "a message over the size limit");
        }
        if (len - at - hlen < 4 + plen)
            break; /* the rest of the frame is still to come */
        const uint8_t *mask = h + hlen;
        uint8_t *p = h + hlen + 4;
        for (uint64_t i = 0; i < plen; i++)
            p[i] ^= mask[i & 3];
        at += hlen + 4 + (size_t)plen;
        if (control) {
            int rc = on_control(opcode, p, (size_t)plen, on_message, arg, err);
            if (rc < 0)
                return -1;
            if (rc)
                return (ssize_t)at;
            continue;
        }
        int type = opcode == VC_WS_OP_CONTINUATION ? r->msg_opcode : opcode;
        if (type == VC_WS_OP_TEXT) {
            r->utf8_state = vc_ws_utf8_feed(r->utf8_state, p, (size_t)plen);
            if (r->utf8_state == VC_WS_UTF8_BAD || (fin && r->utf8_state != 0))
                return fail(err, VC_WS_CLOSE_INVALID_DATA, "text that is not UTF-8");
        }
        if (fin && r->msg_opcode == 0) {
            /* One frame, the common case: handed over where it lies. */
            vc_ws_message_t m = {.opcode = type, .data = p, .len = (size_t)plen};
            r->utf8_state = 0;
            if (on_message(arg, &m))
                return (ssize_t)at;
            continue;
        }
        r->msg_opcode = type;
        append(r, p, (size_t)plen);
        if (fin) {
            vc_ws_message_t m = {.opcode = type, .data = r->msg, .len = r->msg_len};
            r->msg_opcode = 0;
            r->utf8_state = 0;
            r->msg_len = 0;
            int stop = on_message(arg, &m);
            /* A long message's buffer goes; a short one's is kept. */
            if (r->msg_cap > 65536) {
                free(r->msg);
                r->msg = NULL;
                r->msg_cap = 0;
            }
            if (stop)
                return (ssize_t)at;
        }
    }
    return (ssize_t)at;
}

void vc_ws_reader_free(vc_ws_reader_t *r)
{
    free(r->msg);
    memset(r, 0, sizeof(*r));
}

size_t vc_ws_frame_header(uint8_t *out, int opcode, uint64_t len)
{
    out[0] = (uint8_t)(0x80 | opcode);
    if (len < 126) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len <= 0xffff) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        return 4;
    }
    out[1] = 127;
    for (int i = 0; i < 8; i++)
        out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    return 10;
}

size_t vc_ws_close_payload(uint8_t out[125], uint16_t code, const char *reason)
{
    out[0] = (uint8_t)(code >> 8);
    out[1] = (uint8_t)code;
    size_t n = reason ? strlen(reason) : 0;
    if (n > 123) {
        n = 123;
        while (n > 0 && ((uint8_t)reason[n] & 0xc0) == 0x80)
            n--; /* not inside a character */
    }
    if (n)
        memcpy(out + 2, reason, n);
    return 2 + n;
}

void vc_ws_accept_key(char out[29], const char *key, size_t key_len)
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    uint8_t in[256 + sizeof(guid)], md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (key_len > 256)
        key_len = 256; /* a real key is 24 bytes; the caller refuses others */
    memcpy(in, key, key_len);
    memcpy(in + key_len, guid, sizeof(guid) - 1);
    EVP_Digest(in, key_len + sizeof(guid) - 1, md, &mdlen, EVP_sha1(), NULL);
    EVP_EncodeBlock((unsigned char *)out, md, (int)mdlen); /* 20 bytes: 28 characters and a NUL */
}
