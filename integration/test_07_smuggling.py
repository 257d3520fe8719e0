"""HTTP/1.1 request smuggling shapes: each must be refused with 400 and the
connection closed, or (where RFC 9112 allows one reading) answered once with
nothing smuggled behind it. A second request hidden in the body must never
be answered. The framings RFC 9112 calls unrecoverable are sent to nginx
too (the reference), which refuses each."""
import json
import os
import re
import socket
import tempfile
import time

import pytest
import requests

from conftest import FIXTURES
from reference import Reference

SMUGGLED = b"GET /hello.php?smuggled=1 HTTP/1.1\r\nHost: x\r\n\r\n"

SHAPES = {
    "two-content-length": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 50\r\n\r\nabcd",
    "cl-comma-list": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nContent-Length: 4, 50\r\n\r\nabcd",
    "cl-and-te": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"0\r\n\r\n" + SMUGGLED,
    "te-and-cl": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 100\r\n\r\n"
                 b"0\r\n\r\n" + SMUGGLED,
    "te-xchunked": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
    "te-chunked-space": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
    "te-double": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n"
                 b"0\r\n\r\n" + SMUGGLED,
    "te-gzip-chunked": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
    "obs-fold-header": b"GET /hello.php HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n",
    "obs-fold-te": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
    "bare-lf-header": b"GET /hello.php HTTP/1.1\nHost: x\nX-A: 1\n\n",
    "bare-cr-header": b"GET /hello.php HTTP/1.1\r\nHost: x\rX-A: 1\r\n\r\n",
    "chunk-size-negative": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
    "chunk-size-overflow": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                           b"ffffffffffffffffff1\r\nhello\r\n0\r\n\r\n",
    "chunk-size-garbage": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "chunk-missing-crlf": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
    "cl-negative": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    "cl-plus": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nContent-Length: +4\r\n\r\nabcd",
    "cl-hex": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nContent-Length: 0x4\r\n\r\nabcd",
    "space-before-colon": b"GET /hello.php HTTP/1.1\r\nHost: x\r\nContent-Length : 4\r\n\r\nabcd",
    "nul-in-header": b"GET /hello.php HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
    "two-hosts": b"GET /hello.php HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "http09-line": b"GET /hello.php\r\n\r\n",
    "bad-version": b"GET /hello.php HTTP/1.2.3\r\nHost: x\r\n\r\n",
    "te-http10": b"POST /hello.php HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
    "te-gzip": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
    "two-cl-same": b"POST /hello.php HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd",
    "no-host-http11": b"GET /hello.php HTTP/1.1\r\n\r\n",
    "no-host-absolute": b"GET http://x/hello.php HTTP/1.1\r\n\r\n",
    "host-with-slash": b"GET /hello.php HTTP/1.1\r\nHost: a/b\r\n\r\n",
}

# What RFC 9112 says a server must reject (or, for Transfer-Encoding, may
# only read in a way the sender may not mean): 400 and the connection
# closed, whatever follows on it. nginx 1.22 refuses each too (400, or 501
# for a coding it does not know).
MUST_REJECT = {
    "two-content-length", "cl-comma-list", "cl-and-te", "te-and-cl", "te-xchunked", "te-chunked-space",
    "te-double", "te-gzip-chunked", "obs-fold-header", "obs-fold-te", "bare-cr-header", "cl-negative", "cl-plus",
    "cl-hex", "space-before-colon", "nul-in-header", "two-hosts", "bad-version", "te-http10", "te-gzip",
    "two-cl-same", "no-host-http11", "no-host-absolute", "host-with-slash",
}


def exchange(port, raw, wait=1.5):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw)
        s.settimeout(wait)
        data, closed = b"", False
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            data += chunk
    return data, closed


@pytest.fixture(scope="module")
def nginx():
    ref = Reference(1, "classic", tempfile.mkdtemp(prefix="vc-smuggle-"), os.path.join(FIXTURES, "docroot"))
    yield ref
    ref.stop()


NEXT = b"GET /hello.php HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize("shape", sorted(MUST_REJECT))
def test_unrecoverable_framing_is_400_and_closed(suite, nginx, shape):
    # A valid request after it on the same connection: never answered.
    data, closed = exchange(suite.http, SHAPES[shape] + NEXT)
    assert data.startswith(b"HTTP/1.1 400 ") and data.count(b"HTTP/1.1 ") == 1, (shape, data[:300])
    assert closed, (shape, "400 but the connection stays open")
    ref, _ = exchange(nginx.http, SHAPES[shape] + NEXT)
    assert ref[9:10] in (b"4", b"5"), ("nginx serves it", shape, ref[:200])
    ok, _ = exchange(suite.http, b"GET /hello.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200"), ok[:100]


@pytest.mark.parametrize("shape", sorted(set(SHAPES) - MUST_REJECT))
def test_smuggling_shape(suite, shape):
    data, closed = exchange(suite.http, SHAPES[shape])
    answers = data.count(b"HTTP/1.1 ")
    # Never a second answer: nothing hidden in a body is ever run.
    assert b"smuggled" not in data and answers <= 1, (shape, data[:400])
    if answers == 0:
        assert closed, (shape, "no answer and the connection stays open")
        return
    status = int(data.split(b" ", 2)[1])
    if status == 400:
        assert closed, (shape, "400 but the connection stays open")
    else:
        # One unambiguous reading was answered; the connection must not
        # carry on with bytes of uncertain meaning.
        assert status < 500, (shape, data[:300])
    # The server is fine afterwards.
    ok, _ = exchange(suite.http, b"GET /hello.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200"), ok[:100]


def test_refusals_are_counted(suite):
    exchange(suite.http, SHAPES["two-hosts"])
    text = requests.get(f"http://127.0.0.1:{suite.admin}/metrics").text
    assert int(re.search(r'vc_front_framing_refused_total\{front="vc-front"\} (\d+)', text).group(1)) >= 1


def body_of(data):
    """The body of one whole answer, chunked or not."""
    head, body = data.split(b"\r\n\r\n", 1)
    if b"transfer-encoding: chunked" not in head.lower():
        return body
    out = b""
    while True:
        size, body = body.split(b"\r\n", 1)
        n = int(size, 16)
        if n == 0:
            return out
        out, body = out + body[:n], body[n + 2:]


@pytest.mark.parametrize("target, query", [("http://localhost/server.php?a=1", {"a": "1"}),
                                           ("HTTPS://localhost/server.php", []),
                                           ("http://localhost:8080/server.php/x?b=2", {"b": "2"})])
def test_absolute_form_is_served_with_its_authority(suite, nginx, target, query):
    """RFC 9112, 3.2.2: a server must accept the absolute form, and must
    ignore Host for its authority. nginx serves it too, and picks the
    site by the authority, but passes the Host header on as HTTP_HOST:
    we pass the authority, so the script builds its URLs from the name
    the site was chosen by."""
    raw = f"GET {target} HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n".encode()
    data, _ = exchange(suite.http, raw)
    assert data.startswith(b"HTTP/1.1 200"), data[:300]
    got = json.loads(body_of(data))
    authority = target.split("://", 1)[1].split("/", 1)[0]
    assert got["server"]["HTTP_HOST"] == authority
    assert got["server"]["SCRIPT_NAME"] == "/server.php"
    assert got["get"] == query
    ref, _ = exchange(nginx.http, raw)
    assert ref.startswith(b"HTTP/1.1 200"), ref[:300]
    assert json.loads(body_of(ref))["get"] == query


def test_absolute_form_without_a_path_is_the_root(suite):
    data, _ = exchange(suite.http, b"GET http://x?a=1 HTTP/1.1\r\nHost: y\r\nConnection: close\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200"), data[:300]
