"""pusher-js and Laravel Echo (from npm, run by Node), unmodified, against
the front: they subscribe to a public, a private and a presence channel,
authorised by the PHP app's own endpoint, and receive what the HTTP API
and vc_publish() send."""
import json
import os
import queue
import shutil
import subprocess
import threading

import pytest
import requests

from pusher import app_of, trigger

NODE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")

pytestmark = pytest.mark.skipif(not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "pusher-js")),
                                reason="npm packages not installed (ops/install-deps.sh installs them)")


class NodeClient:
    def __init__(self, suite, channels, events, echo=False, user=None):
        auth = suite.url("/pusher_auth.php" + (f"?user={user}" if user else ""))
        opts = {"key": app_of(suite)[1], "host": "127.0.0.1", "port": suite.http, "authEndpoint": auth,
                "channels": channels, "events": events, "echo": echo}
        # Not the sanitizer's preload of an ASan run: it is for our daemons.
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
        self.proc = subprocess.Popen([shutil.which("node"), os.path.join(NODE_DIR, "realtime_client.mjs"),
                                      json.dumps(opts)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=NODE_DIR, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def next(self, timeout=10):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no line from the Node client: " + self.stop()[-2000:])

    def wait_for(self, pred, timeout=10):
        seen = []
        while True:
            m = self.next(timeout)
            if pred(m):
                return m
            seen.append(m)
            assert len(seen) < 50, seen

    def send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def stop(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read()


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
