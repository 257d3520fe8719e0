"""The realtime example (examples/realtime) in Chromium, driven by
playwright-core: Laravel Echo on pusher-js subscribes to a public, a
private and a presence channel and receives what the HTTP API and PHP's
vc_publish() send; an EventSource on the Mercure hub receives a private
update only when the page holds a valid subscriber JWT (a cookie)."""
import json
import os
import shutil
import time

import pytest
import requests

from node_client import end_in_chromium, start_in_chromium
from pusher import trigger

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_DIR = os.path.join(REPO, "integration", "node")
CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.isdir(os.path.join(NODE_DIR, "node_modules", "playwright-core"))),
    reason="Chromium or playwright-core not installed (ops/install-deps.sh installs them)")


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    from conftest import Suite
    root = tmp_path_factory.mktemp("realtime")
    shutil.copytree(os.path.join(REPO, "examples", "realtime", "public"), root, dirs_exist_ok=True)
    os.makedirs(root / "vendor")
    for f in ("pusher-js/dist/web/pusher.min.js", "laravel-echo/dist/echo.iife.js"):
        shutil.copy(os.path.join(NODE_DIR, "node_modules", f), root / "vendor")
    os.chmod(root, 0o755)
    s = Suite(root=str(root)).start()
    yield s
    s.stop()
    s.cleanup()


class Page:
    def __init__(self, s, query):
        self.proc, self.home = start_in_chromium("browser.mjs", s.url("/index.html?" + query), "4")
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise AssertionError("the page did not subscribe: " + self.close()[-3000:])

    def got(self):
        self.proc.stdin.write("dump\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def wait_for(self, pred, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = self.got()
            if pred(got):
                return got
            time.sleep(0.1)
        raise AssertionError(f"not received in {timeout} s: {self.got()}")

    def close(self):
        return end_in_chromium(self.proc, self.home)


def test_echo_in_chromium_gets_public_private_and_presence_events(example):
    alice = Page(example, "user=alice")
    bob = None
    try:
        alice.wait_for(lambda g: {"here": ["alice"]} in g)
        trigger(example, "news", "headline", {"title": "from the API"})
        r = requests.get(example.url("/publish.php"),
                         params={"channel": "private-orders", "event": "shipped", "data": '{"order":7}'}, timeout=10)
        assert r.text.strip() == "true", r.text
        requests.get(example.url("/publish.php"), params={"channel": "presence-lobby", "event": "said",
                                                          "data": "hi"}, timeout=10)
        got = alice.wait_for(lambda g: len([e for e in g if "channel" in e]) >= 3)
        assert {"channel": "news", "data": {"title": "from the API"}} in got
        assert {"channel": "private-orders", "data": {"order": 7}} in got
        assert {"channel": "presence-lobby", "data": "hi"} in got
        bob = Page(example, "user=bob")
        assert {"joining": "bob"} in alice.wait_for(lambda g: {"joining": "bob"} in g)
        bob.close()
        bob = None
        alice.wait_for(lambda g: {"leaving": "bob"} in g)
    finally:
        if bob:
            bob.close()
        err = alice.close()
    assert "pageerror" not in err, err


def test_an_event_source_gets_a_private_update_only_with_a_valid_token(example):
    with_token = Page(example, "user=carol&private=1")
    without = Page(example, "user=dave")
    try:
        secret = requests.get(example.url("/publish.php"), params={
            "topic": "https://example.com/private/7", "data": "for carol", "private": "1"}, timeout=10).text.strip()
        public = requests.get(example.url("/publish.php"), params={
            "topic": "https://example.com/news", "data": "for all"}, timeout=10).text.strip()
        got = with_token.wait_for(lambda g: len([e for e in g if "mercure" in e]) >= 2)
        assert [e for e in got if "mercure" in e] == [{"mercure": "for carol", "id": secret},
                                                      {"mercure": "for all", "id": public}]
        # The public one came after the private one: had the private one
        # been sent, it would be here first.
        got = without.wait_for(lambda g: any("mercure" in e for e in g))
        assert [e for e in got if "mercure" in e] == [{"mercure": "for all", "id": public}]
    finally:
        with_token.close()
        without.close()
