"""The Mercure hub in the front (docs/REALTIME.md): SSE subscriptions by
topic selector (exact and URI templates), publishing with an HS256 JWT,
private updates only for authorised subscribers, Last-Event-ID replay from
the history vc-bus keeps (across a front restart), heartbeats, and what
bad tokens and forms get."""
import base64
import hashlib
import hmac
import http.client
import json
import time

import pytest

from pusher import app_of

HUB = "/.well-known/mercure"


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(key, claims, alg="HS256", sign_key=None):
    head = b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    sig = hmac.new((sign_key or key).encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}." + (b64(sig) if alg != "none" else "")


def publish(s, token, topics, data="", private=False, id_=None, type_=None):
    from urllib.parse import urlencode
    form = [("topic", t) for t in ([topics] if isinstance(topics, str) else topics)] + [("data", data)]
    if private:
        form.append(("private", "on"))
    if id_:
        form.append(("id", id_))
    if type_:
        form.append(("type", type_))
    c = http.client.HTTPConnection("127.0.0.1", s.http, timeout=10)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    c.request("POST", HUB, body=urlencode(form), headers=headers)
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    return r.status, body


class Subscriber:
    """An SSE client: reads events as they come, with a timeout."""

    def __init__(self, s, topics, token=None, last_id=None, query_last=None, port=None):
        from urllib.parse import urlencode
        q = [("topic", t) for t in topics] + ([("lastEventID", query_last)] if query_last else [])
        self.c = http.client.HTTPConnection("127.0.0.1", port or s.http, timeout=10)
        headers = {"Accept": "text/event-stream"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if last_id:
            headers["Last-Event-ID"] = last_id
        self.c.request("GET", HUB + "?" + urlencode(q), headers=headers)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.comments = 0

    def event(self, timeout=5.0):
        """The next event as a dict (id, event, data), or None once timeout
        seconds have passed without one (comments do not count). After
        None the stream is not read again."""
        end = time.monotonic() + timeout
        ev = {}
        try:
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.c.sock.settimeout(left)
                line = self.r.readline()
                if not line:
                    return None
                line = line.decode().rstrip("\n")
                if line == "":
                    if ev:
                        return ev
                    continue
                if line.startswith(":"):
                    self.comments += 1
                    continue
                k, _, v = line.partition(": ")
                ev[k] = ev[k] + "\n" + v if k == "data" and k in ev else v
        except (TimeoutError, OSError):
            return None

    def close(self):
        self.c.close()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    from conftest import Suite
    conf = tmp_path_factory.mktemp("etc")
    (conf / "vc.conf").write_text('front: { mercure_heartbeat = "1s"; };\n')
    s = Suite(conf=str(conf)).start()
    s.key = app_of(s)[2]  # the default hub's key: the default app's secret
    s.pub = jwt(s.key, {"mercure": {"publish": ["*"]}})
    yield s
    s.stop()
    s.cleanup()


def test_an_update_reaches_the_subscribers_whose_selectors_match(hub):
    exact = Subscriber(hub, ["https://shop.example/books/1"])
    templ = Subscriber(hub, ["https://shop.example/books/{id}"])
    other = Subscriber(hub, ["https://shop.example/authors/{id}"])
    try:
        assert exact.status == 200 and exact.r.getheader("Content-Type") == "text/event-stream"
        status, uid = publish(hub, hub.pub, "https://shop.example/books/1", '{"title":"C"}', type_="book")
        assert status == 200 and uid.startswith("urn:uuid:")
        for sub in (exact, templ):
            ev = sub.event()
            assert ev == {"id": uid, "event": "book", "data": '{"title":"C"}'}, ev
        assert other.event(timeout=1.5) is None
    finally:
        for sub in (exact, templ, other):
            sub.close()


def test_multi_line_data_is_split_into_data_lines(hub):
    sub = Subscriber(hub, ["lines"])
    try:
        publish(hub, hub.pub, "lines", "one\ntwo\r\nthree")
        assert sub.event()["data"] == "one\ntwo\nthree"
    finally:
        sub.close()


def test_a_private_update_goes_only_to_authorised_subscribers(hub):
    allowed = jwt(hub.key, {"mercure": {"subscribe": ["https://shop.example/users/{id}"]}})
    other = jwt(hub.key, {"mercure": {"subscribe": ["https://shop.example/orders/{id}"]}})
    forged = jwt(hub.key, {"mercure": {"subscribe": ["*"]}}, sign_key="not-the-key")
    a = Subscriber(hub, ["https://shop.example/users/7"], token=allowed)
    anon = Subscriber(hub, ["https://shop.example/users/7"])
    b = Subscriber(hub, ["https://shop.example/users/7"], token=other)
    f = Subscriber(hub, ["https://shop.example/users/7"], token=forged)
    try:
        assert f.status == 401
        status, uid = publish(hub, hub.pub, "https://shop.example/users/7", "secret", private=True)
        assert status == 200
        # Then a public one on the same topic: it reaches them all, and is
        # the first the others get.
        publish(hub, hub.pub, "https://shop.example/users/7", "public")
        assert [a.event()["data"], a.event()["data"]] == ["secret", "public"]
        assert anon.event()["data"] == "public"
        assert b.event()["data"] == "public"
    finally:
        for sub in (a, anon, b, f):
            sub.close()


@pytest.mark.parametrize("why,token,status", [
    ("no token", None, 401),
    ("another key", lambda k: jwt(k, {"mercure": {"publish": ["*"]}}, sign_key="other"), 401),
    ("alg none", lambda k: jwt(k, {"mercure": {"publish": ["*"]}}, alg="none"), 401),
    ("expired", lambda k: jwt(k, {"exp": int(time.time()) - 10, "mercure": {"publish": ["*"]}}), 401),
    ("not yet", lambda k: jwt(k, {"nbf": int(time.time()) + 3600, "mercure": {"publish": ["*"]}}), 401),
    ("not JSON", lambda k: "a.b.c", 401),
    ("no publish claim", lambda k: jwt(k, {"mercure": {"subscribe": ["*"]}}), 403),
    ("a claim for other topics", lambda k: jwt(k, {"mercure": {"publish": ["https://other/{x}"]}}), 403),
])
def test_a_bad_publisher_token_is_refused(hub, why, token, status):
    tok = token(hub.key) if callable(token) else token
    got, body = publish(hub, tok, "https://shop.example/books/1", "x")
    assert got == status, (why, got, body)


def test_a_bad_update_is_refused(hub):
    assert publish(hub, hub.pub, [], "no topic")[0] == 400
    assert publish(hub, hub.pub, "t", "x", id_="#bad")[0] == 400
    assert publish(hub, hub.pub, "t", "x" * (70 * 1024))[0] == 400
    c = http.client.HTTPConnection("127.0.0.1", hub.http, timeout=10)
    c.request("GET", HUB)
    assert c.getresponse().status == 400  # no topic
    c.close()


def test_last_event_id_replays_what_was_missed(hub):
    ids = [publish(hub, hub.pub, "replay", f"m{i}")[1] for i in range(3)]
    sub = Subscriber(hub, ["replay"], last_id=ids[0])
    try:
        got = [sub.event() for _ in range(2)]
        assert [g["data"] for g in got] == ["m1", "m2"]
        assert sub.r.getheader("Last-Event-ID") == ids[2]
    finally:
        sub.close()
    sub = Subscriber(hub, ["replay"], query_last="earliest")
    try:
        assert [sub.event()["data"] for _ in range(3)] == ["m0", "m1", "m2"]
    finally:
        sub.close()


def test_a_quiet_subscription_gets_heartbeats(hub):
    sub = Subscriber(hub, ["quiet"])
    try:
        assert sub.event(timeout=2.5) is None
        assert sub.comments >= 2  # the first comment, then at least one heartbeat
    finally:
        sub.close()


def test_a_front_restart_ends_streams_and_a_reconnect_misses_nothing(hub):
    sub = Subscriber(hub, ["restart"])
    first = publish(hub, hub.pub, "restart", "before")[1]
    assert sub.event()["data"] == "before"
    r = hub.vc("restart", "front", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sub.event(timeout=10) is None  # the stream ended
    sub.close()
    # Published while no one was subscribed: EventSource comes back with
    # the last id it saw, and gets it.
    publish(hub, hub.pub, "restart", "while away")
    again = Subscriber(hub, ["restart"], last_id=first)
    try:
        assert again.event()["data"] == "while away"
    finally:
        again.close()


def test_vc_mercure_publish_from_php(hub):
    import requests
    allowed = jwt(hub.key, {"mercure": {"subscribe": ["php-private"]}})
    sub = Subscriber(hub, ["php-topic", "php-private"], token=allowed)
    anon = Subscriber(hub, ["php-topic", "php-private"])
    try:
        r = requests.get(hub.url("/mercure.php"), params={"data": "hello", "type": "greeting"}, timeout=10)
        uid = r.text.strip()
        assert r.status_code == 200 and uid.startswith("urn:uuid:"), r.text
        assert sub.event() == {"id": uid, "event": "greeting", "data": "hello"}
        r = requests.get(hub.url("/mercure.php"), params={"topic": "php-private", "data": "p", "private": "1"},
                         timeout=10)
        requests.get(hub.url("/mercure.php"), params={"data": "after"}, timeout=10)
        assert [sub.event()["data"], sub.event()["data"]] == ["p", "after"]
        assert [anon.event()["data"], anon.event()["data"]] == ["hello", "after"]
        bad = requests.get(hub.url("/mercure.php"), params={"type": "two\nlines"}, timeout=10)
        assert bad.status_code == 400 and "must be" in bad.text
    finally:
        sub.close()
        anon.close()
