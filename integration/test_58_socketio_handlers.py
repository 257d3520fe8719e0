"""Socket.IO's handlers in PHP (docs/socketio.md), against socket.io 4.8's
middleware and listeners doing the same (integration/node/sio_reference.mjs
with handlers), with socket.io-client 4.8 on both: one conversation
(integration/node/sio_chat.mjs) is compared event for event. And what only
the suite has: the handler is a request of the site made as the handshake
was, which no client can make itself."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import Suite
from mesh import wait_until as wait_for
from sio_pair import NODE_DIR, NODE_ENV, PATH, pair_of

SETTINGS = {"path": PATH, "namespaces": ["/"], "pingInterval": 25000, "pingTimeout": 20000, "maxPayload": 1000000,
            "handlers": True}

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(the suite, the reference's port)."""
    yield from pair_of(tmp_path_factory.mktemp("sioh"), SETTINGS)


def chat(port, transports):
    r = subprocess.run([shutil.which("node"), os.path.join(NODE_DIR, "sio_chat.mjs"),
                        json.dumps({"url": f"http://127.0.0.1:{port}", "path": PATH, "transports": transports})],
                       cwd=NODE_DIR, capture_output=True, text=True, timeout=120, env=NODE_ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("transports", [["websocket"], ["polling"], ["polling", "websocket"]], ids="+".join)
def test_a_conversation_through_php_handlers_is_what_socketio_handlers_make_of_it(pair, transports):
    ours, ref = pair
    mine, theirs = chat(ours.http, transports), chat(ref, transports)
    assert mine == theirs, (mine, theirs)
    # What the script says, so that both being wrong alike does not pass.
    assert mine["c"] == [["(connect_error)", "not authorized", {"token": "wrong"}]], mine["c"]
    assert mine["a"][0] == ["welcome", "hello", "ann", "room-of-a", "127.0.0.1"], mine["a"]
    acks = [x[1] for x in mine["a"] if x[0] == "(ack)"]
    assert acks == [["ok", 2], [1, {"a": [2, None]}, "x"], [42], [], ["after fail"]], acks
    assert not any(x[0] == "(ack of fail)" for x in mine["a"]), mine["a"]
    assert [x[1] for x in mine["a"] if x[0] == "said"] == list(range(20)), mine["a"]
    assert [x for x in mine["b"] if x[0] == "said"][0] == ["said", "hi", 2], mine["b"]
    assert not any(x[0] == "said" and x[1] == "hi" for x in mine["a"]), mine["a"]  # not to its sender
    assert [x for x in mine["a"] if x[0] == "left"] == [["left", "client namespace disconnect"],
                                                        ["left", "transport close"]], mine["a"]


def sio_open(port, host=None, auth=""):
    """A raw Engine.IO connection that sends CONNECT to "/": (conn, answer)."""
    from wsclient import OP_TEXT, Conn, frame
    # A handler's first answer may take seconds under the sanitizers.
    c = Conn("127.0.0.1", port, PATH + "?EIO=4&transport=websocket", headers={"Host": host} if host else None,
             timeout=20)
    assert c.status == 101, c.head
    fin, op, payload = c.recv_frame()
    assert payload.startswith(b"0{"), payload
    c.send(frame(OP_TEXT, "40" + auth))
    fin, op, payload = c.recv_frame()
    return c, payload.decode()


def test_no_client_reaches_the_handler_and_a_handler_that_fails_refuses_the_connect(pair, tmp_path):
    """The handler's script answers only the front's own calls: a client's
    POST to it, with a made-up event and a VC_SOCKETIO header, or by a
    path that routes to it, is a 404 that never reaches PHP. A connect
    whose handler fails (a 500, or no such script) is refused with
    "Handler failed", and logged with the status."""
    ours, _ = pair
    url = f"http://127.0.0.1:{ours.http}"
    for path in ("/sio_handler.php", "/sio_handler.php/more", "/./sio_handler.php"):
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--path-as-is",
                            "-H", "VC-SOCKETIO: event", "-H", "Content-Type: application/json",
                            "--data", '{"type":"event","socket":"x","namespace":"/","event":"say","args":["forged"]}',
                            url + path], capture_output=True, text=True, timeout=20)
        assert r.stdout == "404", (path, r.stdout, r.stderr)
    assert "forged" not in ours.logs()
    # The handler itself still runs for the front: a connect is let in.
    c, answer = sio_open(ours.http, auth='{"token":"secret"}')
    c.close()
    assert answer.startswith('40{"sid":"'), answer
    # A site whose handler fails.
    etc = tmp_path / "etc"
    (etc / "sites-enabled").mkdir(parents=True)
    (etc / "vc.conf").write_text("\n")
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "broken.php").write_text("<?php http_response_code(500);\n")
    for name, handler in (("a", "broken.php"), ("b", "missing.php")):
        (etc / "sites-enabled" / f"{name}.conf").write_text(
            'site: { hosts = ["%s.test"]; %s root = "%s"; socketio: { path = "%s"; handler = "%s"; }; };\n' % (
                name, "default = true;" if name == "a" else "", tmp_path / "www", PATH, handler))
    s = Suite(root="", conf=str(etc)).start()
    try:
        for host, status in (("a.test", 500), ("b.test", 404)):
            c, answer = sio_open(s.http, host)
            c.close()
            assert answer == '44{"message":"Handler failed"}', (host, answer)
            assert wait_for(lambda: f"handler answered {status} to a connect: refused" in s.logs()), s.logs()
    finally:
        s.stop()
        s.cleanup()
