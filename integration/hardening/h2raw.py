"""Raw HTTP/2 frames for attacks python3-h2 will not build by itself."""
import socket
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def settings(**kv):
    ids = {"header_table_size": 1, "enable_push": 2, "max_concurrent_streams": 3, "initial_window_size": 4,
           "max_frame_size": 5, "max_header_list_size": 6}
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", ids[k], v) for k, v in kv.items()))


def hpack_literal(name, value, index=True):
    """A literal header with a new name; indexed (added to the dynamic
    table) or not."""
    def s(b):
        assert len(b) < 127
        return bytes([len(b)]) + b
    def big(b):
        n = len(b)
        out = bytearray([0x7f])
        n -= 127
        while n >= 128:
            out.append((n & 0x7f) | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out) + b
    v = value if len(value) < 127 else None
    head = bytes([0x40 if index else 0x00]) + s(name)
    return head + (s(value) if v is not None else big(value))


def request_block(path=b"/hello.php"):
    # :method GET (2), :scheme http (6), :path literal, :authority literal
    return bytes([0x82, 0x86]) + bytes([0x04]) + bytes([len(path)]) + path + bytes([0x01, 0x01]) + b"x"


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(PREFACE + settings())
    return s


def drain(s, timeout=0.2):
    """Reads what is there; returns (bytes read, closed)."""
    s.settimeout(timeout)
    got = 0
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return got, True
            got += len(b)
    except socket.timeout:
        return got, False
    except (ConnectionResetError, BrokenPipeError):
        return got, True


def discard_available(s):
    """Reads and drops whatever the server has sent so far, without
    waiting (an attacker that never looks at the answers)."""
    s.setblocking(False)
    try:
        while s.recv(65536):
            pass
    except (BlockingIOError, ConnectionResetError):
        pass
    s.setblocking(True)
