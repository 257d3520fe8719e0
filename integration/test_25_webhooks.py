"""The apps' webhooks (Pusher's): channel_occupied and channel_vacated over
the node's front processes, member_added and member_removed, client_event;
signed with the app's secret; retried in order when the app's server
fails; filtered by event; changed by a reload. The app's server is a real
HTTP server in the test, as a Laravel app's webhook route would be."""
import hashlib
import hmac
import json
import os
import signal
import time

import pytest

from conftest import FIXTURES, configtest_site
from hooks import Receiver
from pusher import Client, app_of, client_away_from, front_pid_of


def bus_status(s):
    return {d["daemon"]: d["status"] for d in s.status()["daemons"]}["vc-bus"]


def hooked_suite(make_suite, tmp_path, hooks, env=None):
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text("front: { realtime_client_events = 100; };\n")
    (conf / "sites-enabled" / "app.conf").write_text(
        'site: { hosts = ["localhost"]; default = true; root = "%s"; realtime_webhooks = [%s]; };\n'
        % (os.path.join(FIXTURES, "docroot"), ", ".join(f'"{h}"' for h in hooks)))
    return make_suite(root="", conf=str(conf), env=env).start()


@pytest.fixture
def rx():
    r = Receiver()
    yield r
    r.close()


def test_occupied_vacated_and_members_reach_the_app_signed(make_suite, tmp_path, rx):
    s = hooked_suite(make_suite, tmp_path, [rx.url()])
    app_id, key, secret = app_of(s)
    a, b = Client(s), Client(s)
    try:
        t0 = time.time()
        a.subscribe("news")
        assert rx.next_event() == {"name": "channel_occupied", "channel": "news"}
        path, headers, body = rx.posts[0]
        assert headers["Content-Type"] == "application/json"
        assert headers["X-Pusher-Key"] == key
        assert headers["X-Pusher-Signature"] == hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        assert abs(json.loads(body)["time_ms"] / 1000 - t0) < 5
        # A second subscriber, and the first gone: still occupied. The
        # presence channel's events come next, in the order they happened.
        b.subscribe("news")
        a.send("pusher:unsubscribe", {"channel": "news"})
        a.subscribe("presence-room", user="7")
        assert rx.next_event() == {"name": "channel_occupied", "channel": "presence-room"}
        assert rx.next_event() == {"name": "member_added", "channel": "presence-room", "user_id": "7"}
        b.close()
        assert rx.next_event() == {"name": "channel_vacated", "channel": "news"}
        a.close()
        got = [rx.next_event(), rx.next_event()]
        assert got == [{"name": "member_removed", "channel": "presence-room", "user_id": "7"},
                       {"name": "channel_vacated", "channel": "presence-room"}], got
    finally:
        a.close()
        b.close()


def test_client_events_reach_the_app_with_their_sender(make_suite, tmp_path, rx):
    s = hooked_suite(make_suite, tmp_path, [rx.url() + " client_event"])
    a, b = Client(s), Client(s)
    try:
        a.subscribe("presence-chat", user="1")
        b.subscribe("presence-chat", user="2")
        a.send("client-typing", {"who": "a"}, channel="presence-chat")
        assert json.loads(b.recv_event("client-typing")["data"]) == {"who": "a"}
        e = rx.next_event()
        assert e == {"name": "client_event", "channel": "presence-chat", "event": "client-typing",
                     "data": json.dumps({"who": "a"}, separators=(",", ":")), "socket_id": a.socket_id,
                     "user_id": "1"}, e
        # Only client events were asked for: no occupied, no member events.
        assert all(e["name"] == "client_event" for _, _, body in rx.posts for e in json.loads(body)["events"])
    finally:
        a.close()
        b.close()


def test_a_failing_app_gets_the_events_again_in_order(make_suite, tmp_path, rx):
    s = hooked_suite(make_suite, tmp_path, [rx.url()])
    rx.fail = 2
    a = Client(s)
    try:
        a.subscribe("one")
        a.subscribe("two")
        got = [rx.next_event(timeout=20)["channel"] for _ in range(2)]
        assert got == ["one", "two"]
        assert len(rx.posts) >= 3  # two refused, then taken
        st = bus_status(s)
        assert int(st["webhooks_failed"]) == 2 and int(st["webhooks_posted"]) >= 1, st
        assert "webhooks" in s.logs() and "answered 500" in s.logs()
    finally:
        a.close()


def test_each_webhook_gets_the_events_it_names(make_suite, tmp_path, rx):
    s = hooked_suite(make_suite, tmp_path, [rx.url("/all"), rx.url("/members") + " member_added,member_removed"])
    a = Client(s)
    try:
        a.subscribe("presence-x", user="5")
        a.close()
        seen = {"/all": [], "/members": []}
        while len(seen["/all"]) < 4 or len(seen["/members"]) < 2:
            path, e = rx.next()
            seen[path].append(e["name"])
        assert seen["/members"] == ["member_added", "member_removed"]
        assert sorted(seen["/all"]) == sorted(["channel_occupied", "member_added", "member_removed",
                                               "channel_vacated"])
    finally:
        a.close()


def test_occupancy_spans_front_processes_and_a_killed_one(make_suite, tmp_path, rx):
    s = hooked_suite(make_suite, tmp_path, [rx.url()], env={"VC_FRONT_PROCESSES": "2"})
    a = Client(s)
    b = None
    try:
        b = client_away_from(s, front_pid_of(a))
        a.subscribe("wide")
        assert rx.next_event() == {"name": "channel_occupied", "channel": "wide"}
        b.subscribe("wide")  # the other process: the node's room was occupied already
        # Each process tells the bus on its own socket, so only b's own next
        # change shows that the bus counted b in "wide" before a leaves.
        b.subscribe("first")
        assert rx.next_event() == {"name": "channel_occupied", "channel": "first"}
        a.close()
        # b's process still holds it; killed, its room is let go.
        b.subscribe("marker")
        assert rx.next_event() == {"name": "channel_occupied", "channel": "marker"}
        os.kill(front_pid_of(b), signal.SIGKILL)
        got = sorted([rx.next_event()["channel"] for _ in range(3)])
        assert got == ["first", "marker", "wide"]
    finally:
        a.close()
        if b:
            b.close()


def test_a_reload_changes_the_webhooks(make_suite, tmp_path, rx):
    s = hooked_suite(make_suite, tmp_path, [rx.url("/old")])
    a = Client(s)
    try:
        a.subscribe("before")
        assert rx.next() == ("/old", {"name": "channel_occupied", "channel": "before"})
        site = tmp_path / "etc" / "sites-enabled" / "app.conf"
        site.write_text(site.read_text().replace("/old", "/new"))
        r = s.vc("reload", timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        b = Client(s)
        b.subscribe("after")
        assert rx.next() == ("/new", {"name": "channel_occupied", "channel": "after"})
        b.close()
    finally:
        a.close()


@pytest.mark.parametrize("hook,why", [
    ("ftp://127.0.0.1/x", "is not \\\"http(s)://HOST/PATH [EVENT,...]\\\""),
    ("http://127.0.0.1/x channel_opened", "no event \\\"channel_opened\\\""),
    ("http://127.0.0.1/x member_added extra", "one list of events"),
])
def test_a_bad_webhook_is_refused_with_its_file_and_line(make_suite, tmp_path, hook, why):
    r = configtest_site(make_suite, tmp_path, 'hosts = ["a"]; root = "%s"; realtime_webhooks = ["%s"];' % (FIXTURES, hook))
    assert r.returncode != 0
    assert "sites-enabled/x.conf:2" in r.stderr and why.replace("\\", "") in r.stderr, r.stderr


def test_a_restarted_bus_does_not_announce_rooms_again(make_suite, tmp_path, rx):
    """A new bus starts with no occupancy; the fronts tell it what they
    hold, and that is no news for the app."""
    s = hooked_suite(make_suite, tmp_path, [rx.url()])
    a = Client(s)
    try:
        a.subscribe("kept")
        assert rx.next_event() == {"name": "channel_occupied", "channel": "kept"}
        r = s.vc("restart", "bus", timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        assert s.vc("status", "--wait", "20").returncode == 0
        # The front tells the new bus what it holds (polled: the bus's count).
        deadline = time.monotonic() + 10
        while bus_status(s).get("rooms_occupied") != "1":
            assert time.monotonic() < deadline, "the front did not tell the new bus its rooms"
            time.sleep(0.05)
        b = Client(s)
        b.subscribe("fresh")
        b.close()
        e = rx.next_event()
        assert e == {"name": "channel_occupied", "channel": "fresh"}, e
    finally:
        a.close()
