"""A WebSocket client that sends exactly the bytes a test asks for: frames
with any bits, lengths, masks and fragments, good or broken, so that the
front's RFC 6455 checks can be driven case by case (the python3-websockets
client refuses to send most of what these tests need)."""
import base64
import hashlib
import json
import os
import socket
import ssl
import struct

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0, 1, 2, 8, 9, 10


def frame(op, payload=b"", fin=True, rsv=0, mask=True, length_form=None, key=None):
    """One client frame. length_form forces the length's encoding: 7, 16 or
    64 bits (a non-minimal form is a protocol error to send)."""
    if isinstance(payload, str):
        payload = payload.encode()
    b0 = (0x80 if fin else 0) | (rsv << 4) | op
    n = len(payload)
    form = length_form or (7 if n < 126 else 16 if n < 65536 else 64)
    m = 0x80 if mask else 0
    if form == 7:
        head = struct.pack("!BB", b0, m | n)
    elif form == 16:
        head = struct.pack("!BBH", b0, m | 126, n)
    else:
        head = struct.pack("!BBQ", b0, m | 127, n)
    if not mask:
        return head + payload
    key = key or os.urandom(4)
    body = bytes(c ^ key[i % 4] for i, c in enumerate(payload))
    return head + key + body


def close_payload(code=None, reason=b""):
    if code is None:
        return b""
    return struct.pack("!H", code) + (reason.encode() if isinstance(reason, str) else reason)


class Conn:
    def __init__(self, host, port, path, headers=None, tls=False, timeout=5.0, handshake=True):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        if tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["http/1.1"])
            self.sock = ctx.wrap_socket(self.sock, server_hostname="localhost")
        self.buf = b""
        self.status = None
        self.head = ""
        if handshake:
            self.handshake(host, port, path, headers or {})

    def handshake(self, host, port, path, headers):
        key = base64.b64encode(os.urandom(16)).decode()
        h = {"Host": f"{host}:{port}", "Upgrade": "websocket", "Connection": "Upgrade",
             "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}
        h.update(headers)
        lines = [f"GET {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in h.items() if v is not None]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        while b"\r\n\r\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                break
            self.buf += data
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        self.head = head.decode("latin-1")
        self.status = int(self.head.split(" ", 2)[1]) if self.head else 0
        if self.status == 101:
            want = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
            assert f"sec-websocket-accept: {want}".lower() in self.head.lower(), self.head

    def send(self, data):
        self.sock.sendall(data)

    def _need(self, n):
        while len(self.buf) < n:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("the server closed the connection")
            self.buf += data

    def recv_frame(self):
        """(fin, opcode, payload) of the next server frame, which must be
        unmasked and without reserved bits."""
        self._need(2)
        b0, b1 = self.buf[0], self.buf[1]
        assert b1 & 0x80 == 0, "a server frame is never masked"
        assert b0 & 0x70 == 0, "no extension was agreed"
        n, at = b1 & 0x7F, 2
        if n == 126:
            self._need(4)
            n, at = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, at = struct.unpack("!Q", self.buf[2:10])[0], 10
        self._need(at + n)
        payload = self.buf[at:at + n]
        self.buf = self.buf[at + n:]
        return bool(b0 & 0x80), b0 & 0x0F, payload

    def recv_json(self):
        """The next text message (skipping pings), decoded."""
        while True:
            fin, op, payload = self.recv_frame()
            if op == OP_TEXT:
                return json.loads(payload)
            assert op in (OP_PING, OP_PONG), (op, payload)

    def recv_close(self):
        """Reads until the server's close frame: its code (None if it had
        none) and reason. Text before it is skipped."""
        while True:
            fin, op, payload = self.recv_frame()
            if op == OP_CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                return code, payload[2:].decode()

    def closed_after(self):
        """True once the server has closed the TCP connection too."""
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, ssl.SSLError):
            return True
        except socket.timeout:
            return False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def pusher_ping():
    return json.dumps({"event": "pusher:ping", "data": {}})
