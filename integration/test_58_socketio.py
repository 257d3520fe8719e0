"""Socket.IO in the front (docs/socketio.md), against socket.io 4.8 (npm,
started by the test) with the same settings, side by side: socket.io-client
4.8 joins namespaces over WebSocket on both and stays through several
pings; a namespace neither serves is refused with the same message; and at
the wire, the same requests get the same answers: the handshake's refusals
(status, type and body), the open packet, CONNECT and CONNECT_ERROR
packets, the server's pings and the close of a client that stops answering
them, and a close for each packet the reference does not take."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import FIXTURES, Suite
from sio_pair import NODE_DIR, NODE_ENV, PATH, pair_of
from mesh import wait_until as wait_for
from wsclient import OP_CLOSE, OP_TEXT, Conn, frame

SETTINGS = {"path": PATH, "namespaces": ["/", "/chat"], "pingInterval": 1000, "pingTimeout": 1000,
            "maxPayload": 100000}

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Short pings (1 s), so that tests see several."""
    yield from pair_of(tmp_path_factory.mktemp("sio"), SETTINGS)


@pytest.fixture(scope="module")
def crowd_pair(tmp_path_factory):
    """socket.io's default pings (25 s, 20 s): a thousand polling clients
    in one Node process answer no 1 s ping in time on a loaded machine.
    And a thousand polling clients from one address hold more connections
    than the front lets one address have (1,024)."""
    yield from pair_of(tmp_path_factory.mktemp("sio-crowd"), dict(SETTINGS, pingInterval=25000, pingTimeout=20000),
                       "front: { max_connections_per_address = 10000; };")


# socket.io-client's transports: WebSocket only, polling only, and its
# default (polling, then the upgrade to WebSocket).
TRANSPORTS = [["websocket"], ["polling"], ["polling", "websocket"]]


def client(port, namespaces, stay_ms, transports):
    r = subprocess.run([shutil.which("node"), os.path.join(NODE_DIR, "sio_client.mjs"),
                        json.dumps({"url": f"http://127.0.0.1:{port}", "path": PATH, "namespaces": namespaces,
                                    "stayMs": stay_ms, "transports": transports})],
                       cwd=NODE_DIR, capture_output=True, text=True, timeout=60, env=NODE_ENV)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


@pytest.mark.parametrize("transports", TRANSPORTS, ids="+".join)
def test_socketio_client_joins_namespaces_and_stays_through_pings_as_with_the_reference(pair, transports):
    ours, ref = pair
    # 3.5 s: three pings of 1 s answered (the client answers them itself).
    got = {name: client(port, ["/", "/chat", "/nope"], 3500, transports)
           for name, port in (("ours", ours.http), ("ref", ref))}
    for name, events in got.items():
        by = {(e["ev"], e["nsp"]): e for e in events}
        assert ("connect", "/") in by and ("connect", "/chat") in by, (name, events)
        assert len(by[("connect", "/")]["id"]) == 20 and by[("connect", "/")]["id"] != by[("connect", "/chat")]["id"]
        assert by[("connect_error", "/nope")]["message"] == "Invalid namespace", (name, events)
        assert by[("end", "/")]["connected"] and by[("end", "/chat")]["connected"], (name, events)
        assert ("disconnect", "/") not in by, (name, events)
        assert by[("end", "/")]["transport"] == transports[-1], (name, events)  # upgraded, if it may


def scenario(port, clients, steps, transports=("websocket",)):
    r = subprocess.run([shutil.which("node"), os.path.join(NODE_DIR, "sio_scenario.mjs"),
                        json.dumps({"url": f"http://127.0.0.1:{port}", "path": PATH, "clients": clients,
                                    "transports": list(transports),
                                    "opUrl": f"http://127.0.0.1:{port}/sio_op.php", "steps": steps})],
                       cwd=NODE_DIR, capture_output=True, text=True, timeout=120, env=NODE_ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    # Socket ids differ from run to run: each is written as its holder's name.
    names = {v: k for k, v in out["ids"].items()}
    return {k: [[names.get(x, x) if isinstance(x, str) else x for x in e] for e in v]
            for k, v in out["events"].items()}


ARGS = ["é ✓ \u2028", None, 1.5, -7, 2**40, [1, [2, {}]], {"a": {"b": True}, "": ""}, "/slash"]
ROOM_STEPS = [
    {"op": "join", "to": "$A", "rooms": ["r1"]},
    {"op": "join", "to": "$B", "rooms": ["r1", "r2"]},
    {"op": "emit", "event": "to r1", "args": ARGS, "to": "r1"},
    {"op": "emit", "event": "to r1 and r2, once each", "to": ["r1", "r2"]},
    {"op": "emit", "event": "r1 but not r2", "to": "r1", "except": "r2"},
    {"op": "emit", "event": "all but C", "except": "$C"},
    {"op": "emit", "event": "chat", "nsp": "/chat", "args": [1]},
    {"op": "leave", "to": "$B", "rooms": ["r1"]},
    {"op": "emit", "event": "r1 after B left", "to": "r1"},
    {"op": "join", "to": "r2", "rooms": ["r3"]},
    {"op": "emit", "event": "r3", "to": "r3"},
    {"op": "emit", "event": "to C's id", "to": "$C"},
    {"op": "emit", "event": "nobody", "to": "empty-room"},
    {"op": "disconnect", "to": "$B"},
    {"op": "emit", "event": "after B went"},
    {"op": "disconnect", "to": "$D", "nsp": "/chat", "close": True},
    {"op": "emit", "event": "chat after D went", "nsp": "/chat"},
]


@pytest.mark.parametrize("transports", TRANSPORTS, ids="+".join)
def test_rooms_emits_joins_leaves_and_disconnects_from_php_reach_the_sockets_the_reference_reaches(pair, transports):
    """vc_socketio_*() from a PHP request, and socket.io's server API on
    the reference, for the same steps: each socket gets the same events,
    with the same arguments, in the same order, and the same disconnects."""
    ours, ref = pair
    clients = {"A": ["/", "/chat"], "B": ["/"], "C": ["/"], "D": ["/chat"]}
    mine, theirs = (scenario(ours.http, clients, ROOM_STEPS, transports),
                    scenario(ref, clients, ROOM_STEPS, transports))
    assert mine == theirs, (mine, theirs)
    # What the steps say, so that both being wrong alike does not pass.
    got = {k: [e[0] for e in v if e[0] != "mark"] for k, v in mine.items()}
    assert got["A /"] == ["to r1", "to r1 and r2, once each", "r1 but not r2", "all but C", "r1 after B left",
                          "after B went"], got
    assert got["B /"] == ["to r1", "to r1 and r2, once each", "all but C", "r3", "(disconnect)"], got
    assert got["C /"] == ["to C's id", "after B went"], got
    assert got["D /chat"] == ["chat", "(disconnect)"] and got["A /chat"] == ["chat", "chat after D went"], got
    assert [e for e in mine["A /"] if e[0] != "mark"][0] == ["to r1"] + ARGS and mine["B /"][-1] == ["(disconnect)", "io server disconnect"]


def site_conf(d, name, extra):
    (d / name).mkdir()
    for f in ("sio_op.php", "sio_bad_args.php"):
        shutil.copy(os.path.join(FIXTURES, "docroot", f), d / name)
    return 'site: { %s root = "%s"; socketio: { path = "%s"; namespaces = ["/", "/chat"]; }; };\n' % (
        extra, d / name, PATH)


def op(port, host, body):
    r = subprocess.run(["curl", "-sS", "-H", f"Host: {host}", "--data-binary", json.dumps(body),
                        f"http://127.0.0.1:{port}/sio_op.php"], capture_output=True, text=True, timeout=20)
    return r.stdout.strip()


def test_another_sites_php_reaches_none_of_this_sites_sockets_and_bad_arguments_are_refused(tmp_path):
    """Each site's PHP reaches its own sockets only: the front names the
    site a worker's operation is for (a pool cannot say another), so site
    b's emit to every socket of "/" and its disconnect of a's socket by id
    reach nothing of a. A namespace the site does not serve is dropped and
    logged; arguments vc_socketio_*() cannot take are a ValueError."""
    etc = tmp_path / "etc"
    (etc / "sites-enabled").mkdir(parents=True)
    (etc / "vc.conf").write_text("\n")
    (etc / "sites-enabled" / "a.conf").write_text(site_conf(tmp_path, "a", 'default = true; hosts = ["a.test"];'))
    (etc / "sites-enabled" / "b.conf").write_text(site_conf(tmp_path, "b", 'hosts = ["b.test"];'))
    s = Suite(root="", conf=str(etc)).start()
    try:
        c = Conn("127.0.0.1", s.http, PATH + "?EIO=4&transport=websocket", headers={"Host": "a.test"})
        assert c.status == 101, c.head
        assert text(c).startswith("0{")
        c.send(frame(OP_TEXT, "40"))
        sid = json.loads(text(c)[2:])["sid"]
        assert op(s.http, "b.test", {"op": "emit", "event": "from b"}) == "ok"
        assert op(s.http, "b.test", {"op": "emit", "event": "from b to a's id", "to": sid}) == "ok"
        assert op(s.http, "b.test", {"op": "disconnect", "to": sid, "close": True}) == "ok"
        assert op(s.http, "a.test", {"op": "emit", "event": "nope", "nsp": "/nope"}) == "ok"
        assert op(s.http, "a.test", {"op": "emit", "event": "from a", "to": sid}) == "ok"
        # In the bus's order: had any of b's reached a, it came first.
        got = text(c)
        while got == "2":  # a ping
            c.send(frame(OP_TEXT, "3"))
            got = text(c)
        assert got == '42["from a"]', got
        c.close()
        assert wait_for(lambda: 'for namespace "/nope" dropped: the site serves no such namespace' in s.logs())
        r = subprocess.run(["curl", "-sS", "-H", "Host: a.test", f"http://127.0.0.1:{s.http}/sio_bad_args.php"],
                           capture_output=True, text=True, timeout=20)
        lines = r.stdout.splitlines()
        assert len(lines) == 17, r.stdout
        # No rooms to join is nothing to do, as socket.io's socketsJoin([]).
        assert lines.pop(13) == "returned true", r.stdout
        assert all(line.startswith("ValueError: ") for line in lines), r.stdout
        assert 'vc_socketio_emit(): Argument #1 ($event) must be 1 to 200 bytes' in lines[0], lines
        assert lines[1] == 'ValueError: vc_socketio_emit(): Argument #1 ($event) "disconnect" is a reserved event name'
        assert "Argument #2 ($args) must be a list" in lines[2]
        assert all("Argument #3 ($to) must name rooms" in x for x in lines[3:7]), lines
        assert "Argument #3 ($to) must name at most 100 rooms" in lines[7]
        assert "Argument #4 ($except) must name rooms" in lines[8]
        assert all("Argument #5 ($namespace) must be a namespace" in x for x in lines[9:11]), lines
        assert "Argument #2 ($args) could not be encoded as JSON" in lines[11]
        assert "Argument #2 ($args) must be at most 1 MiB as JSON" in lines[12]
        assert "vc_socketio_join(): Argument #2 ($rooms) must name rooms" in lines[13]
        assert "vc_socketio_leave(): Argument #3 ($namespace) must be a namespace" in lines[14]
        assert "vc_socketio_disconnect(): Argument #1 ($to) must name rooms" in lines[15]
    finally:
        s.stop()
        s.cleanup()


def raw(port, query, method="GET", upgrade=True):
    """(status, content type, body) of one request, as a client sends it."""
    if upgrade:
        c = Conn("127.0.0.1", port, PATH + query)
        try:
            head = c.head.lower()
            ctype = next((line.split(":", 1)[1].strip() for line in head.split("\r\n")
                          if line.startswith("content-type:")), "")
            body = c.buf
            if c.status != 101:
                c.sock.settimeout(2)
                try:
                    while True:
                        more = c.sock.recv(65536)
                        if not more:
                            break
                        body += more
                except OSError:
                    pass
            return c.status, ctype.split(";")[0], body.decode(errors="replace")
        finally:
            c.close()
    r = subprocess.run(["curl", "-s", "-X", method, "-o", "-", "-w", "\n%{http_code} %{content_type}",
                        f"http://127.0.0.1:{port}{PATH}{query}"], capture_output=True, text=True, timeout=20)
    body, _, tail = r.stdout.rpartition("\n")
    code, _, ctype = tail.partition(" ")
    return int(code), ctype.split(";")[0], body


CASES = [
    ("?EIO=4&transport=polling", "GET", False),
    ("?EIO=4", "GET", False),
    ("?EIO=4&transport=carrier-pigeon", "GET", False),
    ("?EIO=4&transport=websocket", "GET", False),
    ("?EIO=4&transport=websocket", "POST", False),
    ("?EIO=4&transport=polling&sid=AAAAAAAAAAAAAAAAAAAA", "GET", False),
    ("?EIO=3&transport=websocket", "GET", True),
    ("?transport=websocket", "GET", True),
    ("?EIO=4&transport=polling", "GET", True),
    ("?EIO=4&transport=websocket&sid=AAAAAAAAAAAAAAAAAAAA", "GET", True),
]


# Where the front answers otherwise, and why. engine.io 6.6 checks the
# protocol's version only once the WebSocket library has accepted the
# upgrade: the reference answers 101, then writes its "HTTP/1.1 400"
# refusal onto the upgraded socket, which a client reads as a broken
# frame. The front refuses before the upgrade, with the same status and
# message; either way the client gets no connection.
LATE_REFUSAL = {"?EIO=3&transport=websocket", "?transport=websocket"}
# And a WebSocket handshake that names polling: the reference upgrades it
# (101), then closes it at once (polling takes no upgrade); the front
# refuses it before, 400 "Bad request".
UPGRADE_TO_POLLING = ("?EIO=4&transport=polling", "GET", True)


# Handshakes both take: polling's (an Upgrade header on it changes nothing).
OPENED = {"?EIO=4&transport=polling"}


@pytest.mark.parametrize("query,method,upgrade", CASES)
def test_a_handshake_is_answered_as_the_reference_answers_it(pair, query, method, upgrade):
    ours, ref = pair
    mine, theirs = raw(ours.http, query, method, upgrade), raw(ref, query, method, upgrade)
    if (query, method, upgrade) == UPGRADE_TO_POLLING:
        assert mine == (400, "text/html", "Bad request") and theirs[0] == 101, (mine, theirs)
        return
    if query in OPENED:  # the open packet, the session's id aside
        def opened(r):
            body = r[2][r[2].index("0{"):r[2].index("}") + 1]
            return r[0], r[1], re.sub(r'"sid":"[A-Za-z0-9_-]{20}"', '"sid":"S"', body)
        assert opened(mine) == opened(theirs), (mine, theirs)
        assert opened(mine)[2].startswith('0{"sid":"S","upgrades":["websocket"]'), mine
        return
    assert mine[0] in (400, 403), mine
    if query in LATE_REFUSAL:
        assert mine == (400, "text/html", "Unsupported protocol version"), mine
        assert theirs[0] == 101, theirs
        return
    assert mine == theirs, (mine, theirs)


def opened(port):
    c = Conn("127.0.0.1", port, PATH + "?EIO=4&transport=websocket")
    assert c.status == 101, c.head
    fin, op, payload = c.recv_frame()
    assert op == OP_TEXT and payload[:1] == b"0", payload
    return c, json.loads(payload[1:])


def text(c):
    """The next text message, as text (the server's pings included)."""
    while True:
        fin, op, payload = c.recv_frame()
        if op == OP_TEXT:
            return payload.decode()
        assert op != OP_CLOSE, payload


def test_the_open_packet_and_namespace_packets_match_the_references(pair):
    ours, ref = pair
    seen = {}
    for name, port in (("ours", ours.http), ("ref", ref)):
        c, info = opened(port)
        try:
            out = {"open": {k: v for k, v in info.items() if k != "sid"}, "sid": len(info["sid"])}
            c.send(frame(OP_TEXT, "40"))
            out["connect"] = text(c)
            c.send(frame(OP_TEXT, "40/chat,{\"token\":\"x\"}"))
            out["chat"] = text(c)
            c.send(frame(OP_TEXT, "40/nope,"))
            out["nope"] = text(c)
            # An event with no handler: nothing comes back, not even its ack.
            c.send(frame(OP_TEXT, "42[\"hello\",1]"))
            c.send(frame(OP_TEXT, "421[\"hello\"]"))
            # The server's ping, answered; the connection stays.
            out["ping"] = text(c)
            c.send(frame(OP_TEXT, "3"))
            out["ping again"] = text(c)
            c.send(frame(OP_TEXT, "41/chat,"))
            seen[name] = out
        finally:
            c.close()
    for k in ("connect", "chat"):
        for name in seen:
            prefix = "40{\"sid\":\"" if k == "connect" else "40/chat,{\"sid\":\""
            assert seen[name][k].startswith(prefix) and len(seen[name][k]) == len(prefix) + 22, seen[name][k]
            seen[name][k] = "id"
    assert seen["ours"] == seen["ref"], seen
    assert seen["ours"]["open"] == {"upgrades": [], "pingInterval": 1000, "pingTimeout": 1000, "maxPayload": 100000}
    assert seen["ours"]["nope"] == "44/nope,{\"message\":\"Invalid namespace\"}"


BREAKERS = [
    "4x",                 # no Socket.IO packet
    "7",                  # no Engine.IO packet
    "42/chat,[\"a\"]",    # an event on a namespace not joined
    "40",                 # a CONNECT to a namespace already joined
    "44{}",               # a CONNECT_ERROR from a client
    "42[\"disconnect\"]",  # a name the protocol keeps
]


@pytest.mark.parametrize("packet", BREAKERS)
def test_a_packet_the_reference_closes_for_closes_the_connection(pair, packet):
    ours, ref = pair
    for port in (ours.http, ref):
        c, info = opened(port)
        try:
            c.send(frame(OP_TEXT, "40"))
            assert text(c).startswith("40{")
            c.send(frame(OP_TEXT, packet))
            c.sock.settimeout(3)
            closed = False
            try:
                while True:
                    fin, op, payload = c.recv_frame()
                    if op == OP_CLOSE:
                        closed = True
                        break
                    assert payload == b"2", payload  # only a ping may come first
            except (EOFError, ConnectionResetError):
                closed = True
            assert closed, (port, packet)
        finally:
            c.close()


def test_a_client_that_stops_answering_pings_is_closed(pair):
    ours, ref = pair
    took = {}
    for name, port in (("ours", ours.http), ("ref", ref)):
        c, info = opened(port)
        try:
            c.send(frame(OP_TEXT, "40"))
            assert text(c).startswith("40{")
            t0 = time.monotonic()
            assert text(c) == "2"  # pinged after pingInterval; never answered
            c.sock.settimeout(10)
            try:
                while True:
                    fin, op, payload = c.recv_frame()
                    if op == OP_CLOSE:
                        break
            except (EOFError, ConnectionResetError):
                pass
            took[name] = time.monotonic() - t0
        finally:
            c.close()
    # pingInterval then pingTimeout (1 s each; ours ticks each second).
    assert 1.5 <= took["ref"] <= 3.5 and 1.5 <= took["ours"] <= 4.0, took


def test_a_page_of_another_site_may_not_connect(pair):
    """As for the Pusher protocol: a browser's page elsewhere must not use
    a visitor's cookies here (cross-site WebSocket hijacking)."""
    ours, _ = pair
    c = Conn("127.0.0.1", ours.http, PATH + "?EIO=4&transport=websocket", headers={"Origin": "https://evil.example"})
    try:
        assert c.status == 400, c.head
        body = c.buf
        while b"Forbidden" not in body:
            more = c.sock.recv(4096)
            if not more:
                break
            body += more
        assert body == b"Forbidden", body
    finally:
        c.close()
    c = Conn("127.0.0.1", ours.http, PATH + "?EIO=4&transport=websocket",
             headers={"Origin": f"http://127.0.0.1:{ours.http}"})
    try:
        assert c.status == 101, c.head
    finally:
        c.close()


@pytest.mark.parametrize("body,why", [
    ('socketio: { path = "socket.io"; };', r'socketio.path: "socket.io" is not a path'),
    ('socketio: { path = "/socket.io/"; namespaces = ["chat"]; };', r'socketio.namespaces: "chat" is not a namespace'),
    ('socketio: { path = "/socket.io/"; namespaces = ["/a,b"]; };', r'"/a,b" is not a namespace'),
    ('socketio: { path = "/socket.io/"; ping_interval = "10ms"; };', r"socketio.ping_interval"),
    ('socketio: { path = "/socket.io/"; max_payload = 10; };', r"socketio.max_payload"),
    ('socketio: { path = "/socket.io/"; handler = "../x.php"; };', r'socketio.handler: "\.\./x\.php" is not'),
    ('socketio: { path = "/socket.io/"; handler = "/x.txt"; };', r'socketio.handler: "/x\.txt" is not'),
    ('socketio: { handler = "x.php"; };', r'socketio.handler: "x\.php" is not'),
])
def test_bad_socketio_settings_are_refused_with_their_file_and_line(make_suite, tmp_path, body, why):
    import re
    from conftest import configtest_site
    r = configtest_site(make_suite, tmp_path, f'default = true; root = "{tmp_path}"; {body}')
    assert r.returncode != 0 and re.search(why, r.stderr), r.stderr
    assert "x.conf:2" in r.stderr, r.stderr


def http(port, method, query, body=None, timeout=10):
    """(status, content type, body) of one plain HTTP request."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, PATH + query, body=body)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type") or "", r.read().decode()
    finally:
        conn.close()


def polling_wire(port):
    """What one polling session sees, step by step, ids written as "ID"."""
    import threading
    ids = lambda r: (r[0], r[1], re.sub(r'"sid":"[A-Za-z0-9_-]{20}"', '"sid":"ID"', r[2]))  # noqa: E731
    seen = {}
    opened = http(port, "GET", "?EIO=4&transport=polling")
    sid = json.loads(opened[2][1:])["sid"]
    q = f"?EIO=4&transport=polling&sid={sid}"
    seen["open"] = ids(opened)
    seen["post two connects"] = http(port, "POST", q, "40\x1e40/chat,{\"token\":1}")
    seen["get both answers"] = ids(http(port, "GET", q))
    seen["post an event"] = http(port, "POST", q, "42[\"x\",1]")
    seen["put"] = http(port, "PUT", q)
    # Two GETs at once, with nothing to send: whichever comes first is
    # held, the other overlaps it.
    got = []
    threads = [threading.Thread(target=lambda: got.append(http(port, "GET", q))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    seen["two gets at once"] = sorted(got)
    seen["after"] = http(port, "GET", q)
    # A body over maxPayload.
    sid = json.loads(http(port, "GET", "?EIO=4&transport=polling")[2][1:])["sid"]
    q = f"?EIO=4&transport=polling&sid={sid}"
    seen["post too large"] = http(port, "POST", q, "4" + "x" * SETTINGS["maxPayload"])
    seen["after too large"] = http(port, "GET", q)
    return seen


def test_polling_bodies_and_statuses_are_the_references(pair):
    """Engine.IO's long-polling at the wire, on both: the open packet, a
    POST of two packets joined by the record separator ("ok"), a GET that
    takes both answers at once, another method (500), a second GET while
    one is held (400, and the session ends: the held one gets the close
    packet), a body over maxPayload (413, the session ends)."""
    ours, ref = pair
    mine, theirs = polling_wire(ours.http), polling_wire(ref)
    assert mine == theirs, (mine, theirs)
    assert mine["get both answers"][2] == '40{"sid":"ID"}\x1e40/chat,{"sid":"ID"}', mine
    assert mine["two gets at once"] == [(200, "text/plain; charset=UTF-8", "1"), (400, "", "")], mine
    assert mine["post too large"][0] == 413, mine


def test_vc_rooms_lists_socketio_namespaces_and_rooms(pair):
    """`vc rooms` shows each namespace's sockets and each room's (names of
    any text, escaped in --json), summed over the front processes; a
    socket's own room is not listed."""
    ours, _ = pair
    conns = []
    try:
        for nsp in ("/", "/", "/chat"):
            c, _info = opened(ours.http)
            c.send(frame(OP_TEXT, "40" if nsp == "/" else f"40{nsp},"))
            conns.append((c, json.loads(text(c).split(",", 1)[-1] if nsp != "/" else text(c)[2:])["sid"]))
        room = 'quote " and \\ ✓'
        r = subprocess.run(["curl", "-sS", "--data-binary", json.dumps({"op": "join", "to": conns[0][1], "rooms": [room]}),
                            f"http://127.0.0.1:{ours.http}/sio_op.php"], capture_output=True, text=True, timeout=20)
        assert r.stdout.strip() == "ok", r.stdout

        def rows():
            out = ours.vc("rooms", "--json", check=True).stdout
            return sorted((r["namespace"], r["room"], r["sockets"]) for r in map(json.loads, out.splitlines())
                          if r.get("socketio") and r["site"] == "app")
        assert wait_for(lambda: rows() == [("/", "", 2), ("/", room, 1), ("/chat", "", 1)]), rows()
        plain = ours.vc("rooms", check=True).stdout
        assert "SOCKET.IO SITE" in plain and "~sio:" not in plain, plain
    finally:
        for c, _ in conns:
            c.close()


@pytest.mark.parametrize("transports", [["websocket"], ["polling", "websocket"]], ids="+".join)
def test_a_thousand_clients_each_get_an_emit_once_as_with_the_reference(crowd_pair, transports):
    """1,000 socket.io-client sockets, each on its own connection: two emits
    from PHP (the reference: its server API) reach every one once, in
    order, on both."""
    ours, ref = crowd_pair
    for port in (ours.http, ref):
        r = subprocess.run([shutil.which("node"), os.path.join(NODE_DIR, "sio_many.mjs"),
                            json.dumps({"url": f"http://127.0.0.1:{port}", "path": PATH, "n": 1000,
                                        "transports": transports, "opUrl": f"http://127.0.0.1:{port}/sio_op.php"})],
                           cwd=NODE_DIR, capture_output=True, text=True, timeout=180, env=NODE_ENV)
        assert r.returncode == 0, r.stderr[-2000:]
        out = json.loads(r.stdout)
        assert out["connected"] == 1000 and out["exact"] == 1000, (port == ref, out)


@pytest.fixture(scope="module")
def recovery_pair(tmp_path_factory):
    """Connection state recovery on, for 2 minutes (socket.io's default)."""
    yield from pair_of(tmp_path_factory.mktemp("sio-rec"), dict(SETTINGS, recovery=120000))


@pytest.mark.parametrize("transports", TRANSPORTS, ids="+".join)
def test_a_client_cut_off_comes_back_with_its_id_rooms_and_what_it_missed_as_with_the_reference(recovery_pair,
                                                                                               transports):
    ours, ref = recovery_pair
    got = {}
    for name, port in (("ours", ours.http), ("ref", ref)):
        r = subprocess.run([shutil.which("node"), os.path.join(NODE_DIR, "sio_recover.mjs"),
                            json.dumps({"url": f"http://127.0.0.1:{port}", "path": PATH, "transports": transports,
                                        "opUrl": f"http://127.0.0.1:{port}/sio_op.php"})],
                           cwd=NODE_DIR, capture_output=True, text=True, timeout=60, env=NODE_ENV)
        assert r.returncode == 0, (name, r.stdout + r.stderr)
        got[name] = json.loads(r.stdout)
    assert got["ours"] == got["ref"], got
    assert got["ours"]["recovered"] is True and got["ours"]["sameId"] is True, got
    assert got["ours"]["seen"] == [["before", "x"], ["while away", 1], ["to everyone", 2], ["after", 4]], got
