"""Speaks to one of the suite's ZeroMQ sockets as whoever runs it: the
trust tests (test_30_trust.py) run it as another local user (runuser),
as an attacker with an account on the machine or a site's PHP would.
Protobuf is written by hand (three message shapes, a few fields): the
suite's schemas are compiled for C only.

    trust_peer.py event ENDPOINT TOPIC SOURCE MARK
    trust_peer.py room ENDPOINT ROOM EVENT DATA
    trust_peer.py command ENDPOINT VERB [ARG...]   (prints the reply's text)
"""
import sys
import time

import zmq


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, value):
    """A length-delimited field (string, bytes, message) or a varint."""
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint(num << 3 | 2) + varint(len(value)) + value


def envelope(topic, source, mark):
    # Envelope: topic 1, source 2, pid 3, time_us 4, severity 5, fields 6 (Field: key 1, value 2).
    return (field(1, topic) + field(2, source) + field(3, 4242) + field(4, int(time.time() * 1e6)) +
            field(5, 1) + field(6, field(1, "mark") + field(2, mark)))


def room_message(room, event, data):
    # RoomMessage: room 1, event 2, data 3, time_ms 7.
    return field(1, room) + field(2, event) + field(3, data) + field(7, int(time.time() * 1000))


def command(endpoint, verb, args):
    """A control command (Command: verb 1, args 2); the Reply's message
    (field 2) on stdout, or "no answer"."""
    ctx = zmq.Context()
    s = ctx.socket(zmq.REQ)
    s.linger = 0
    s.connect(endpoint)
    s.send(field(1, verb) + b"".join(field(2, a) for a in args))
    if not s.poll(5000):
        print("no answer")
        return
    reply, at, message = s.recv(), 0, b""
    while at < len(reply):  # the fields of the Reply, read just enough
        key, at = reply[at], at + 1
        if key & 7 == 0:
            while reply[at] & 0x80:
                at += 1
            at += 1
        else:
            n, shift = 0, 0
            while True:
                b, at = reply[at], at + 1
                n |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            if key >> 3 == 2:
                message = reply[at:at + n]
            at += n
    print(message.decode())
    s.close()
    ctx.term()


def main():
    kind, endpoint = sys.argv[1], sys.argv[2]
    if kind == "command":
        command(endpoint, sys.argv[3], sys.argv[4:])
        return
    ctx = zmq.Context()
    s = ctx.socket(zmq.PUSH)
    s.linger = 2000
    s.connect(endpoint)
    if kind == "event":
        topic, source, mark = sys.argv[3:6]
        s.send_multipart([topic.encode(), envelope(topic, source, mark)])
    else:
        room, event, data = sys.argv[3:6]
        s.send_multipart([(room + "\n").encode(), room_message(room, event, data)])
    # A refused connection (no write permission on the socket) is not an
    # error for ZeroMQ: it retries. Close within the linger either way.
    s.close()
    ctx.term()


if __name__ == "__main__":
    main()
