"""RFC 6455 conformance of the front's WebSocket, case by case, in the
categories of the Autobahn testsuite: framing, pings and pongs, reserved
bits, opcodes, fragmentation, UTF-8, close handling, limits, and the
handshake. Each case sends exact bytes (wsclient.py) to the Pusher
endpoint and expects one outcome: a message answered (a pusher:ping gets a
pusher:pong), a pong echoing a ping, or a close frame with the code the
RFC asks for, then the TCP connection closed."""
import json
import struct

import pytest

from wsclient import (OP_BINARY, OP_CLOSE, OP_CONT, OP_PING, OP_PONG, OP_TEXT, Conn, close_payload, frame,
                      pusher_ping)

MAX = 4096  # front.realtime_max_message in this suite


@pytest.fixture(scope="module")
def ws_suite(tmp_path_factory):
    from conftest import Suite
    conf = tmp_path_factory.mktemp("etc")
    (conf / "vc.conf").write_text(f'front: {{ realtime_max_message = {MAX}; }};\n')
    s = Suite(conf=str(conf)).start()
    with open(s.data + "/state/realtime-app") as f:
        s.app_id, s.key, s.secret = f.read().split()
    yield s
    s.stop()
    s.cleanup()


def connect(s, path=None, headers=None, tls=False):
    port = s.https if tls else s.http
    c = Conn("127.0.0.1", port, path or f"/app/{s.key}?protocol=7&client=js&version=8.4.0", headers, tls=tls)
    if c.status == 101:
        assert c.recv_json()["event"] == "pusher:connection_established"
    return c


PING = pusher_ping().encode()


def text(payload=PING, **kw):
    return frame(OP_TEXT, payload, **kw)


def split(data, sizes):
    """data as a text message in fragments of the given sizes (the rest in
    the last)."""
    parts, at = [], 0
    for n in sizes:
        parts.append(data[at:at + n])
        at += n
    parts.append(data[at:])
    out = []
    for i, p in enumerate(parts):
        out.append(frame(OP_TEXT if i == 0 else OP_CONT, p, fin=i == len(parts) - 1))
    return out


def padded(n):
    """A pusher:ping of exactly n bytes of JSON."""
    base = '{"event":"pusher:ping","data":{},"pad":""}'
    return (base[:-2] + "x" * (n - len(base)) + '"}').encode()


def utf8_ping(raw):
    """A pusher:ping whose data holds raw bytes, valid UTF-8 or not."""
    return b'{"event":"pusher:ping","data":"' + raw + b'"}'


def A(times=1):
    """The message is answered: times pusher:pongs."""
    return ("answered", times)


def P(*payloads):
    """WebSocket pongs with these payloads, in order."""
    return ("pong", payloads)


def C(code):
    """A close frame with this code (None: with no code), then TCP closed."""
    return ("close", code)

CASES = [
    # 1. Framing
    ("framing: a text message in one frame", [text()], [A()]),
    ("framing: 125 bytes (7-bit length)", [text(padded(125))], [A()]),
    ("framing: 126 bytes (16-bit length)", [text(padded(126))], [A()]),
    ("framing: 4096 bytes, the limit", [text(padded(MAX))], [A()]),
    ("framing: a binary message is not the Pusher protocol", [frame(OP_BINARY, b"\x00\x01")], [C(1003)]),
    ("framing: an unmasked frame", [text(mask=False)], [C(1002)]),
    ("framing: a 16-bit length under 126", [text(PING, length_form=16)], [C(1002)]),
    ("framing: a 64-bit length under 65536", [text(PING, length_form=64)], [C(1002)]),
    ("framing: a 64-bit length with its top bit set", [b"\x81\xff" + struct.pack("!Q", 1 << 63) + b"\0\0\0\0"],
     [C(1002)]),
    ("framing: two messages in one write", [text() + text()], [A(2)]),
    ("framing: a message written a byte at a time", [bytes([b]) for b in text()], [A()]),
    ("framing: an all-zero mask", [text(key=b"\0\0\0\0")], [A()]),
    # 2. Pings and pongs
    ("pings: an empty ping", [frame(OP_PING)], [P(b"")]),
    ("pings: a ping of 125 bytes", [frame(OP_PING, b"\xfe" * 125)], [P(b"\xfe" * 125)]),
    ("pings: a ping of 126 bytes", [frame(OP_PING, b"x" * 126)], [C(1002)]),
    ("pings: a binary ping payload", [frame(OP_PING, bytes(range(32)))], [P(bytes(range(32)))]),
    ("pings: an unsolicited pong is ignored", [frame(OP_PONG, b"hi"), text()], [A()]),
    ("pings: a fragmented ping", [frame(OP_PING, b"ab", fin=False), frame(OP_CONT, b"cd")], [C(1002)]),
    ("pings: ten pings, ten pongs in order", [frame(OP_PING, str(i)) for i in range(10)],
     [P(*[str(i).encode() for i in range(10)])]),
    ("pings: a pong of 126 bytes", [frame(OP_PONG, b"x" * 126)], [C(1002)]),
    # 3. Reserved bits
    ("rsv: RSV1 on text", [text(rsv=4)], [C(1002)]),
    ("rsv: RSV2 on text", [text(rsv=2)], [C(1002)]),
    ("rsv: RSV3 on text", [text(rsv=1)], [C(1002)]),
    ("rsv: all three on text", [text(rsv=7)], [C(1002)]),
    ("rsv: RSV1 on binary", [frame(OP_BINARY, b"x", rsv=4)], [C(1002)]),
    ("rsv: RSV2 on a ping", [frame(OP_PING, b"x", rsv=2)], [C(1002)]),
    ("rsv: RSV3 on a close", [frame(OP_CLOSE, close_payload(1000), rsv=1)], [C(1002)]),
    ("rsv: after a good message", [text(), text(rsv=4)], [A(), C(1002)]),
] + [
    # 4. Opcodes
    (f"opcodes: reserved opcode {op}", [frame(op, b"")], [C(1002)]) for op in (3, 4, 5, 6, 7, 11, 12, 13, 14, 15)
] + [
    ("opcodes: reserved opcode after a good message", [text(), frame(5, b"")], [A(), C(1002)]),
    # 5. Fragmentation
    ("fragments: two", split(PING, [10]), [A()]),
    ("fragments: one byte each", split(PING, [1] * (len(PING) - 1)), [A()]),
    ("fragments: empty ones among them", split(PING, [0, 5, 0, 5, 0]), [A()]),
    ("fragments: an empty last one", split(PING, [len(PING)]), [A()]),
    ("fragments: a ping between them", [frame(OP_TEXT, PING[:5], fin=False), frame(OP_PING, b"mid"),
                                        frame(OP_CONT, PING[5:])], [P(b"mid"), A()]),
    ("fragments: a continuation with nothing begun", [frame(OP_CONT, PING)], [C(1002)]),
    ("fragments: a lone final continuation after a message", [text(), frame(OP_CONT, b"x")], [A(), C(1002)]),
    ("fragments: a new text inside a message", [frame(OP_TEXT, b"{", fin=False), text()], [C(1002)]),
    ("fragments: a new binary inside a message", [frame(OP_TEXT, b"{", fin=False), frame(OP_BINARY, b"x")],
     [C(1002)]),
    ("fragments: a fragmented close", [frame(OP_CLOSE, close_payload(1000), fin=False)], [C(1002)]),
    ("fragments: a fragmented binary message", [frame(OP_BINARY, b"a", fin=False), frame(OP_CONT, b"b")],
     [C(1003)]),
    # 6. UTF-8
    ("utf-8: Greek (2-byte)", [text(utf8_ping("κόσμε".encode()))], [A()]),
    ("utf-8: 3- and 4-byte characters", [text(utf8_ping("€𝄞".encode()))], [A()]),
    ("utf-8: the largest code point U+10FFFF", [text(utf8_ping(b"\xf4\x8f\xbf\xbf"))], [A()]),
    ("utf-8: a character split between fragments", split(utf8_ping("€".encode()), [32]), [A()]),
    ("utf-8: a character split byte by byte", split(utf8_ping("𝄞".encode()), [31, 1, 1, 1]), [A()]),
    ("utf-8: an overlong '/' (C0 AF)", [text(utf8_ping(b"\xc0\xaf"))], [C(1007)]),
    ("utf-8: an overlong 3-byte form (E0 80 AF)", [text(utf8_ping(b"\xe0\x80\xaf"))], [C(1007)]),
    ("utf-8: a surrogate (ED A0 80)", [text(utf8_ping(b"\xed\xa0\x80"))], [C(1007)]),
    ("utf-8: past U+10FFFF (F4 90 80 80)", [text(utf8_ping(b"\xf4\x90\x80\x80"))], [C(1007)]),
    ("utf-8: a lone continuation byte", [text(utf8_ping(b"\x80"))], [C(1007)]),
    ("utf-8: a truncated character at the end", [text(b'{"event":"pusher:ping"}\xe2\x82')], [C(1007)]),
    ("utf-8: bytes FE and FF", [text(utf8_ping(b"\xfe\xff"))], [C(1007)]),
    ("utf-8: bad in the first fragment, failing at once", [frame(OP_TEXT, b"\xc0\xaf", fin=False)], [C(1007)]),
    ("utf-8: truncated at the last fragment", split(b'{"event":"pusher:ping"}\xf0\x9d', [20]), [C(1007)]),
    ("utf-8: a binary message is not checked, but refused", [frame(OP_BINARY, b"\xff")], [C(1003)]),
    # 7. Close handling
    ("close: no payload, answered with none", [frame(OP_CLOSE)], [C(None)]),
    ("close: 1000, echoed", [frame(OP_CLOSE, close_payload(1000))], [C(1000)]),
    ("close: 1000 with a reason", [frame(OP_CLOSE, close_payload(1000, "bye"))], [C(1000)]),
    ("close: a reason of 123 bytes", [frame(OP_CLOSE, close_payload(1000, "r" * 123))], [C(1000)]),
    ("close: one byte of payload", [frame(OP_CLOSE, b"\x03")], [C(1002)]),
    ("close: a reason that is not UTF-8", [frame(OP_CLOSE, close_payload(1000, b"\xff\xfe"))], [C(1007)]),
    ("close: text after the close is not answered", [frame(OP_CLOSE, close_payload(1000)), text()], [C(1000)]),
    ("close: a ping after the close is not answered", [frame(OP_CLOSE, close_payload(1000)), frame(OP_PING)],
     [C(1000)]),
] + [
    (f"close: valid code {code}, echoed", [frame(OP_CLOSE, close_payload(code))], [C(code)])
    for code in (1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999)
] + [
    (f"close: code {code} may not be sent", [frame(OP_CLOSE, close_payload(code))], [C(1002)])
    for code in (0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535)
] + [
    # 8. Limits
    ("limits: a frame one byte over", [text(padded(MAX + 1))], [C(1009)]),
    ("limits: refused from the header, before the payload", [b"\x81\xff" + struct.pack("!Q", 1 << 40) + b"\0" * 4],
     [C(1009)]),
    ("limits: a message over it in fragments", [frame(OP_TEXT, b"x" * 3000, fin=False),
                                               frame(OP_CONT, b"x" * 3000)], [C(1009)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rfc6455(ws_suite, case):
    name, frames, expect = case
    c = connect(ws_suite)
    try:
        for f in frames:
            c.send(f)
        for kind, arg in expect:
            if kind == "answered":
                for _ in range(arg):
                    assert c.recv_json()["event"] == "pusher:pong", name
            elif kind == "pong":
                for want in arg:
                    fin, op, payload = c.recv_frame()
                    assert (op, payload) == (OP_PONG, want), name
            else:
                code, reason = c.recv_close()
                assert code == arg, (name, code, reason)
                assert c.closed_after(), "the TCP connection stays open after the close"
        if expect[-1][0] != "close":
            # Still open and answering after the case.
            c.send(text())
            assert c.recv_json()["event"] == "pusher:pong"
    finally:
        c.close()


def test_at_least_sixty_cases():
    assert len(CASES) >= 60, len(CASES)


HANDSHAKES = [
    ("version 8", {"Sec-WebSocket-Version": "8"}, 426),
    ("no version", {"Sec-WebSocket-Version": None}, 426),
    ("no key", {"Sec-WebSocket-Key": None}, 400),
    ("a key of 15 bytes", {"Sec-WebSocket-Key": "AAAAAAAAAAAAAAAAAAAA"}, 400),
    ("a key that is not base64", {"Sec-WebSocket-Key": "!!!!!!!!!!!!!!!!!!!!!!=="}, 400),
]


@pytest.mark.parametrize("name,headers,status", HANDSHAKES, ids=[h[0] for h in HANDSHAKES])
def test_a_bad_handshake_is_refused(ws_suite, name, headers, status):
    c = connect(ws_suite, headers=headers)
    try:
        assert c.status == status, c.head
        if status == 426:
            assert "sec-websocket-version: 13" in c.head.lower()
    finally:
        c.close()


def test_over_tls(ws_suite):
    c = connect(ws_suite, tls=True)
    try:
        c.send(text())
        assert c.recv_json()["event"] == "pusher:pong"
    finally:
        c.close()


def test_the_server_answers_a_close_it_did_not_start_and_closes_tcp(ws_suite):
    c = connect(ws_suite)
    try:
        c.send(frame(OP_CLOSE, close_payload(1000, "done")))
        code, _ = c.recv_close()
        assert code == 1000 and c.closed_after()
    finally:
        c.close()


def test_json_that_is_not_a_pusher_message_gets_an_error_not_a_close(ws_suite):
    c = connect(ws_suite)
    try:
        c.send(text(b"[1,2,3]"))
        err = c.recv_json()
        assert err["event"] == "pusher:error", err
        c.send(text())
        assert c.recv_json()["event"] == "pusher:pong"
    finally:
        c.close()


def test_frames_sent_with_the_handshake_are_read(ws_suite):
    """A client may pipeline its first frames behind the upgrade."""
    c = Conn("127.0.0.1", ws_suite.http, "/", handshake=False)
    import base64
    import os
    key = base64.b64encode(os.urandom(16)).decode()
    req = (f"GET /app/{ws_suite.key}?protocol=7 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
    c.send(req + text())
    try:
        while b"\r\n\r\n" not in c.buf:
            c.buf += c.sock.recv(65536)
        c.buf = c.buf.partition(b"\r\n\r\n")[2]
        assert c.recv_json()["event"] == "pusher:connection_established"
        assert c.recv_json()["event"] == "pusher:pong"
    finally:
        c.close()


def test_pusher_data_is_json_text(ws_suite):
    c = connect(ws_suite)
    try:
        c.send(text(json.dumps({"event": "pusher:ping", "data": {"k": "κ"}}, ensure_ascii=False).encode()))
        assert c.recv_json() == {"event": "pusher:pong", "data": {}}
    finally:
        c.close()
