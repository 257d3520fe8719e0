"""pusher-js and Laravel Echo (from npm, run by Node), unmodified, against
the front: they subscribe to a public, a private and a presence channel,
authorised by the PHP app's own endpoint, and receive what the HTTP API
and vc_publish() send."""
import pytest
import requests

from node_client import NodeClient, have_pusher_js
from pusher import trigger

pytestmark = pytest.mark.skipif(not have_pusher_js(),
                                reason="npm packages not installed (ops/install-deps.sh installs them)")


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    from conftest import Suite
    s = Suite(args=["--workers", "2"]).start()
    yield s
    s.stop()
    s.cleanup()


@pytest.mark.parametrize("echo", [False, True], ids=["pusher-js", "laravel-echo"])
def test_public_private_and_presence_channels(rt, echo):
    chans = ["news", "private-orders", "presence-lobby"]
    c = NodeClient(rt, chans, ["headline", "order", "php-event"], echo=echo, user="42")
    try:
        c.wait_for(lambda m: m.get("ready"), timeout=15)
        trigger(rt, "news", "headline", {"title": "hi"})
        m = c.wait_for(lambda m: m.get("event") == "headline")
        assert m["channel"] == "news" and m["data"] == {"title": "hi"}
        trigger(rt, "private-orders", "order", {"id": 7})
        assert c.wait_for(lambda m: m.get("event") == "order")["data"] == {"id": 7}
        r = requests.get(rt.url("/publish.php"), params={"channel": "presence-lobby", "n": "1"}, timeout=10)
        assert r.text == "published\n"
        m = c.wait_for(lambda m: m.get("event") == "php-event")
        assert m["channel"] == "presence-lobby" and m["data"] == {"n": 1, "from": "php"}
    finally:
        err = c.stop()
    assert "Error" not in err, err


def test_presence_members_as_echo_sees_them(rt):
    a = NodeClient(rt, ["presence-team"], [], echo=True, user="1")
    b = None
    try:
        here = a.wait_for(lambda m: "here" in m, timeout=15)
        assert here["users"] == ["user 1"]
        b = NodeClient(rt, ["presence-team"], [], echo=True, user="2")
        assert sorted(b.wait_for(lambda m: "here" in m, timeout=15)["users"]) == ["user 1", "user 2"]
        assert a.wait_for(lambda m: "joining" in m)["user"] == "user 2"
        b.stop()
        b = None
        assert a.wait_for(lambda m: "leaving" in m)["user"] == "user 2"
    finally:
        a.stop()
        if b:
            b.stop()


def test_a_whisper_reaches_the_other_client(rt):
    a = NodeClient(rt, ["private-chat"], [])
    b = NodeClient(rt, ["private-chat"], [])
    try:
        a.wait_for(lambda m: m.get("ready"), timeout=15)
        b.wait_for(lambda m: m.get("ready"), timeout=15)
        a.send({"whisper": "private-chat", "event": "client-typing", "data": {"who": "a"}})
        m = b.wait_for(lambda m: m.get("event") == "client-typing")
        assert m["data"] == {"who": "a"}
    finally:
        a.stop()
        b.stop()


def test_a_forbidden_private_channel_is_an_error_for_the_client(rt):
    c = NodeClient(rt, ["private-forbidden-x"], [])
    try:
        m = c.wait_for(lambda m: "error" in m, timeout=15)
        assert m["error"] == "private-forbidden-x" and m["status"] == 403
    finally:
        c.stop()
