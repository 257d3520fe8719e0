/*
 * WebSocket (RFC 6455) as a server reads and writes it, with no socket:
 * client frames in, whole messages and control frames out, and the frames
 * we send. The front's realtime/ws_conn.c and the panel's terminal.c put
 * it on h2o's sockets; fuzz/fuzz_ws.c feeds it anything.
 *
 * What a client may send is checked as the RFC says a server must: frames
 * masked, reserved bits clear (we negotiate no extension), known opcodes,
 * control frames whole and at most 125 bytes, fragments in order, text
 * valid UTF-8 (checked as it arrives, so a bad byte fails at once and not
 * at the end of a long message), close codes that may be sent. A frame
 * or a message over its limit is refused with 1009 before its payload is
 * read.
 */
#ifndef VC_WS_H
#define VC_WS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
    VC_WS_OP_CONTINUATION = 0x0,
    VC_WS_OP_TEXT = 0x1,
    VC_WS_OP_BINARY = 0x2,
    VC_WS_OP_CLOSE = 0x8,
    VC_WS_OP_PING = 0x9,
    VC_WS_OP_PONG = 0xA,
};

/* Close codes we send (RFC 6455 7.4.1) and ones of the Pusher protocol. */
enum {
    VC_WS_CLOSE_NORMAL = 1000,
    VC_WS_CLOSE_GOING_AWAY = 1001,
    VC_WS_CLOSE_PROTOCOL = 1002,
    VC_WS_CLOSE_UNSUPPORTED = 1003,
    VC_WS_CLOSE_NO_STATUS = 1005, /* never on the wire: a close with no code */
    VC_WS_CLOSE_INVALID_DATA = 1007,
    VC_WS_CLOSE_POLICY = 1008,
    VC_WS_CLOSE_TOO_BIG = 1009,
    VC_WS_CLOSE_INTERNAL = 1011,
};

typedef struct vc_ws_limits {
    size_t max_frame;   /* payload of one frame */
    size_t max_message; /* a whole message, its fragments together */
} vc_ws_limits_t;

/* A whole text or binary message, or a control frame. Borrowed for the
 * call. For VC_WS_OP_CLOSE, code is the peer's (VC_WS_CLOSE_NO_STATUS if it gave
 * none) and data its reason. */
typedef struct vc_ws_message {
    int opcode;
    const uint8_t *data;
    size_t len;
    uint16_t code;
} vc_ws_message_t;

/* Returns 0 to go on reading, non-zero to stop (the connection is going). */
typedef int (*vc_ws_on_message_t)(void *arg, const vc_ws_message_t *m);

typedef struct vc_ws_reader {
    uint8_t *msg; /* a fragmented message being put together */
    size_t msg_len, msg_cap;
    int msg_opcode;      /* its first frame's, 0 when none is open */
    uint32_t utf8_state; /* of the text read so far (vc_ws_utf8_feed) */
} vc_ws_reader_t;

/* What a protocol error closes with. */
typedef struct vc_ws_error {
    uint16_t code;
    const char *why; /* for the log and the close frame's reason */
} vc_ws_error_t;

/* Reads every whole frame at the start of buf (unmasked in place), calling
 * on_message for each whole message and control frame. Returns the bytes
 * consumed (the rest is a frame not yet whole), or -1 with *err set: the
 * connection must be closed with err->code. Stops early, returning what it
 * consumed, if on_message returns non-zero. */
ssize_t vc_ws_read(vc_ws_reader_t *r, uint8_t *buf, size_t len, const vc_ws_limits_t *lim,
                   vc_ws_on_message_t on_message, void *arg, vc_ws_error_t *err);
void vc_ws_reader_free(vc_ws_reader_t *r);

/* A frame we send, unmasked: its header (at most VC_WS_HEADER_MAX bytes) for
 * a payload of len. Returns the header's length. */
#define VC_WS_HEADER_MAX 10
size_t vc_ws_frame_header(uint8_t *out, int opcode, uint64_t len);

/* A close frame's payload: code then reason (cut to fit 125 bytes at a
 * character boundary). Returns its length. */
size_t vc_ws_close_payload(uint8_t out[125], uint16_t code, const char *reason);

/* UTF-8 validation that can stop and go on mid-character: state 0 is
 * "between characters", VC_WS_UTF8_BAD means invalid. */
#define VC_WS_UTF8_BAD 1u
uint32_t vc_ws_utf8_feed(uint32_t state, const uint8_t *p, size_t n);

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64 of the SHA-1
 * of key and the RFC's GUID. out holds 29 bytes with the NUL. */
void vc_ws_accept_key(char out[29], const char *key, size_t key_len);

#endif
