"""vc-panel's operations pages through its API, against the real daemons
(docs/panel.md): a pool's reload and one worker recycled, realtime apps
(the secret on demand, rotated with a confirmation) with rooms and their
members, logs and events followed over SSE with filters, releases rolled
back through vc-fed, and certificates from a real ACME CA (Pebble)
through vc-acme. Each change is audited. The pages themselves are
test_50_panel_browser.py's."""
import json
import os
import time
from urllib.parse import quote

import pytest
import requests

from acme_ca import Pebble
from conftest import FIXTURES, curl
from mesh import wait_until
from panel import admin, panel_suite, viewer
from pusher import Client as PusherClient
from pusher import api as pusher_api
from pusher import app_of
from pusher import sign as pusher_sign

DOCROOT = os.path.join(FIXTURES, "docroot")
WARM_URLS = 12


def audited(s, action, target=None, timeout=10.0):
    """The panel.audit events of that action (and target), once one came."""
    return s.events_of("panel.audit", lambda es: any(
        e["fields"]["action"] == action and (target is None or e["fields"]["target"] == target) for e in es),
        timeout=timeout)


def workers(c, pool="default"):
    p = next(p for p in c.get("/api/pools").json()["pools"] if p["pool"] == pool)
    return [w for w in p["workers_list"] if w.get("state") != "retired"]


class Follow:
    """A GET /api/follow stream: its data lines, decoded, as they come."""

    def __init__(self, c, **query):
        self.r = c.http.get(c.url("/api/follow"), params=query, stream=True, timeout=10, verify=False)
        self.status = self.r.status_code
        self.lines = self.r.iter_lines(decode_unicode=True) if self.status == 200 else None

    def until(self, pred, timeout=10.0):
        """The data seen until one satisfies pred; fails at the timeout."""
        seen, deadline = [], time.monotonic() + timeout
        for line in self.lines:
            if line.startswith("data: "):
                seen.append(json.loads(line[6:]))
                if pred(seen[-1]):
                    return seen
            assert time.monotonic() < deadline, seen
        raise AssertionError(f"the stream ended: {seen}")

    def close(self):
        self.r.close()


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    d = tmp_path_factory.mktemp("ops")
    os.chmod(d, 0o755)
    err = d / "error.log"
    err.write_text("an old line\n")
    os.chmod(err, 0o644)
    rt = ('site: { hosts = ["rt.test"]; root = "%s";\n'
          '  realtime_apps = ["4242 rtkey oldsecret0123456789"]; socketio: { path = "/socket.io/"; };\n'
          '  realtime_webhooks = ["http://127.0.0.1:9/hook member_added"]; };\n' % d)
    main = 'site: { hosts = ["main.test"]; default = true; root = "%s"; };\n' % DOCROOT
    # A sitemap of cacheable pages of the main site, served by a site of its own.
    www = d / "www"
    www.mkdir()
    urls = "".join("<url><loc>http://main.test/cached.php?id=warm%d&amp;h[]=%s</loc></url>" % (
        i, quote("Cache-Control: public, max-age=60")) for i in range(WARM_URLS))
    (www / "sitemap.xml").write_text('<?xml version="1.0"?><urlset '
                                     'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s</urlset>' % urls)
    os.chmod(www, 0o755)
    warm = 'site: { hosts = ["warm.test"]; root = "%s"; };\n' % www
    # A site with a background process and a schedule entry (the pool's page shows them).
    bg = ('site: { hosts = ["bg.test"]; root = "%s"; background: { nap: { command = "sleep 300"; }; };\n'
          '  schedule = [ "0 3 * * * true" ]; };\n' % www)
    s = panel_suite(root="", panel='error_log = "%s"; slow_after = 100; lockout_after = 100;' % err,
                    sites={"main": main, "rt": rt, "warm": warm, "bg": bg},
                    conf_extra="php: { workers = 3; };").start()
    s.err = err
    s.c = admin(s)
    yield s
    s.stop()
    s.cleanup()


def test_one_worker_recycled_and_the_pool_reloaded_from_the_panel(ops):
    c = ops.c
    before = [int(w["pid"]) for w in workers(c)]
    assert len(before) == 3
    victim = before[1]
    r = c.post("/api/pools/recycle", {"pool": "default", "pid": victim})
    assert r.status_code == 200, r.text
    # It goes, a fresh one comes, the others stay.
    after = wait_until(lambda: (lambda p: p if victim not in p and len(p) == 3 else None)(
        [int(w["pid"]) for w in workers(c)]))
    assert after and set(before) - {victim} <= set(after), (before, after)
    assert ops.events_of("php.worker.recycled", lambda es: any(e["fields"].get("pid") == str(victim) for e in es))
    assert audited(ops, "pool.recycle", f"default worker {victim}")
    # One that is not a worker, or not a number: refused with why.
    r = c.post("/api/pools/recycle", {"pool": "default", "pid": victim})
    assert r.status_code == 409 and "no worker" in r.json()["error"]
    assert c.post("/api/pools/recycle", {"pool": "default", "pid": "1; reboot"}).status_code == 400
    assert c.post("/api/pools/recycle", {"pool": "../x", "pid": 5}).status_code == 400
    # A reload: a new generation, every worker replaced, none failed.
    r = c.post("/api/pools/reload", {"pool": "default"})
    assert r.status_code == 200, r.text
    assert wait_until(lambda: not set(after) & {int(w["pid"]) for w in workers(c)})
    assert curl(ops.url("/hello.php"))[0] == 200
    assert audited(ops, "pool.reload", "default")


def background(c):
    p = next(p for p in c.get("/api/pools").json()["pools"] if p["pool"] == "default")
    return {(e["site"], e["name"]): e for e in p["background_list"]}


def test_a_sites_background_process_stopped_and_started_from_the_pool_page(ops):
    c = ops.c
    entries = wait_until(lambda: (lambda b: b if b.get(("bg", "nap"), {}).get("state") in ("starting", "running")
                                  else None)(background(c)))
    assert entries and entries[("bg", "schedule:1")]["line"] == "0 3 * * * true", entries
    first = int(entries[("bg", "nap")]["pid"])
    r = c.post("/api/pools/background", {"site": "bg", "name": "nap", "action": "stop"})
    assert r.status_code == 200, r.text
    assert wait_until(lambda: background(c)[("bg", "nap")]["state"] == "held"), background(c)
    assert audited(ops, "background.stop", "bg/nap")
    r = c.post("/api/pools/background", {"site": "bg", "name": "nap", "action": "start"})
    assert r.status_code == 200, r.text
    assert wait_until(lambda: int(background(c)[("bg", "nap")]["pid"]) not in (0, first)), background(c)
    # Only an entry of that site, only these actions, only an admin.
    for body in ({"site": "main", "name": "nap", "action": "stop"}, {"site": "bg", "name": "../nap", "action": "stop"},
                 {"site": "bg", "name": "schedule:2", "action": "stop"}, {"site": "bg", "name": "nap", "action": "kill"},
                 {"site": "../bg", "name": "nap", "action": "stop"}):
        assert c.post("/api/pools/background", body).status_code == 400, body
    v = viewer(ops, c, "bgviewer")
    assert ("bg", "nap") in background(v)
    assert v.post("/api/pools/background", {"site": "bg", "name": "nap", "action": "stop"}).status_code == 403
    assert background(c)[("bg", "nap")]["state"] in ("starting", "running")


def rt_api(s, app):
    """A signed Pusher API call (GET channels) to site rt's app."""
    app_id, key, secret = app
    path = f"/apps/{app_id}/channels"
    p = {"auth_key": key, "auth_timestamp": str(int(time.time())), "auth_version": "1.0"}
    p["auth_signature"] = pusher_sign(secret, "GET", path, p)
    return requests.get(s.url(path), params=p, headers={"Host": "rt.test"}, timeout=10)


def test_realtime_apps_show_the_secret_on_demand_and_rotate_it_with_a_confirmation(ops):
    c = ops.c
    got = c.get("/api/realtime").json()
    apps = {(a["site"], a["id"]): a for a in got["apps"]}
    default_id, default_key, default_secret = app_of(ops)
    assert apps[("main", default_id)]["key"] == default_key
    assert apps[("main", default_id)]["kept"] == "made at first start"
    assert apps[("rt", "4242")]["kept"] == "site file"
    assert "secret" not in json.dumps(got["apps"])  # not in the list
    assert {"site": "rt", "webhook": "http://127.0.0.1:9/hook member_added"} in got["webhooks"]
    # Socket.IO's namespaces, with their sockets, summed over the fronts.
    from wsclient import OP_TEXT, Conn, frame
    sio = Conn("127.0.0.1", ops.http, "/socket.io/?EIO=4&transport=websocket", headers={"Host": "rt.test"})
    try:
        assert sio.status == 101, sio.head
        sio.recv_frame()
        sio.send(frame(OP_TEXT, "40"))
        assert sio.recv_frame()[2].startswith(b"40{")
        assert wait_until(lambda: {"site": "rt", "namespace": "/", "room": "", "sockets": 1}
                          in c.get("/api/realtime").json()["socketio"]), c.get("/api/realtime").json()
    finally:
        sio.close()
    # On demand, audited.
    r = c.post("/api/realtime/secret", c.step_up({"site": "rt", "id": "4242"}))
    assert r.json()["secret"] == "oldsecret0123456789"
    assert audited(ops, "realtime.secret.show", "rt 4242")
    # A rotation needs the id typed again.
    assert c.post("/api/realtime/rotate", {"site": "rt", "id": "4242"}).status_code == 400
    assert c.post("/api/realtime/rotate", {"site": "rt", "id": "4242", "confirm": "4243"}).status_code == 400
    assert rt_api(ops, ("4242", "rtkey", "oldsecret0123456789")).status_code == 200
    r = c.post("/api/realtime/rotate", {"site": "rt", "id": "4242", "confirm": "4242"})
    assert r.status_code == 200, r.text
    fresh = wait_until(lambda: (lambda s: s if s != "oldsecret0123456789" else None)(
        c.post("/api/realtime/secret", c.step_up({"site": "rt", "id": "4242"})).json().get("secret")))
    assert fresh and len(fresh) == 64
    text = open(os.path.join(ops.conf, "sites-enabled", "rt.conf")).read()
    assert fresh in text and "oldsecret" not in text
    # The front signs with the new one only.
    assert rt_api(ops, ("4242", "rtkey", fresh)).status_code == 200
    assert rt_api(ops, ("4242", "rtkey", "oldsecret0123456789")).status_code == 401
    assert audited(ops, "realtime.rotate", "rt 4242")
    # The default site's own app, kept in the data directory, rotates too.
    r = c.post("/api/realtime/rotate", {"site": "main", "id": default_id, "confirm": default_id})
    assert r.status_code == 200, r.text
    new_id, new_key, new_secret = app_of(ops)
    assert (new_id, new_key) == (default_id, default_key) and new_secret != default_secret
    assert wait_until(lambda: pusher_api(ops, "GET", "channels").status_code == 200)
    assert pusher_api(ops, "GET", "channels", app=(default_id, default_key, default_secret)).status_code == 401
    # A viewer sees apps, never a secret.
    v = viewer(ops, c, "watcher")
    assert v.get("/api/realtime").status_code == 200
    assert v.post("/api/realtime/secret", {"site": "rt", "id": "4242"}).status_code == 403
    assert v.post("/api/realtime/rotate", {"site": "rt", "id": "4242", "confirm": "4242"}).status_code == 403


def test_rooms_and_a_presence_rooms_members(ops):
    c = ops.c
    a, b = PusherClient(ops), PusherClient(ops)
    try:
        assert a.subscribe("presence-lobby", user="<b>ann</b>")["event"] == "pusher_internal:subscription_succeeded"
        assert b.subscribe("presence-lobby", user="bob")["event"] == "pusher_internal:subscription_succeeded"
        assert b.subscribe("news")["event"] == "pusher_internal:subscription_succeeded"
        app_id = app_of(ops)[0]
        rooms = {r["room"]: r for r in c.get("/api/realtime").json()["rooms"]}
        assert rooms[f"{app_id}:presence-lobby"]["subscribers"] == 2
        assert rooms[f"{app_id}:presence-lobby"]["members"] == 2
        assert rooms[f"{app_id}:news"]["subscribers"] == 1
        got = c.get("/api/realtime/members", params={"room": f"{app_id}:presence-lobby"}).json()
        members = {m["user_id"]: m for m in got["members"]}
        assert set(members) == {"<b>ann</b>", "bob"}
        assert json.loads(members["bob"]["info"]) == {"name": "user bob"}
        assert c.get("/api/realtime/members").status_code == 400
    finally:
        a.close()
        b.close()


def test_a_warm_up_from_a_sitemap_and_its_progress(ops):
    c = ops.c
    assert c.post("/api/cache/warm", {"sitemap": "file:///etc/passwd"}).status_code == 400
    assert c.post("/api/cache/warm", {"sitemap": "http://warm.test/x y"}).status_code == 400
    r = c.post("/api/cache/warm", {"sitemap": "http://warm.test/sitemap.xml"})
    assert r.status_code == 200, r.text
    run = r.json()["id"]
    got = wait_until(lambda: (lambda w: w if not w["running"] else None)(c.get("/api/cache/warm").json()), 30)
    assert got and got["id"] == run, got
    p = got["progress"]
    assert (p["result"], p["total"], p["done"], p["stored"], p["errors"]) == ("ok", str(WARM_URLS), str(WARM_URLS),
                                                                               str(WARM_URLS), "0"), p
    # The pages are in the cache now; the end is an event (progress is live only).
    _, head, _ = curl(ops.url("/cached.php?id=warm3&h[]=" + quote("Cache-Control: public, max-age=60")),
                      "-H", "Host: main.test")
    assert "Velocity; hit" in head, head
    assert ops.events_of("cache.warm.done", lambda es: any(e["fields"]["id"] == run for e in es))
    assert audited(ops, "cache.warm", "http://warm.test/sitemap.xml")
    # A sitemap that is not there: said, not hidden.
    r = c.post("/api/cache/warm", {"sitemap": "http://warm.test/missing.xml"})
    assert r.status_code == 200
    got = wait_until(lambda: (lambda w: w if not w["running"] else None)(c.get("/api/cache/warm").json()), 30)
    assert "not a 200" in got["progress"]["result"], got


def test_the_access_log_followed_with_a_filter(ops):
    f = Follow(ops.c, what="access", q="follow-me")
    try:
        assert f.status == 200
        curl(ops.url("/hello.php?not-this-one"))
        curl(ops.url("/hello.php?follow-me=1"))
        seen = f.until(lambda line: "follow-me" in line)
        # The filter held back the other request.
        assert not any("not-this-one" in line for line in seen)
    finally:
        f.close()


def test_the_error_log_followed_from_its_last_lines_and_across_a_rotation(ops):
    f = Follow(ops.c, what="error")
    try:
        f.until(lambda line: line == "an old line")
        with open(ops.err, "a") as log:
            log.write('a new line with <script>alert(1)</script> and a quote "\n')
        f.until(lambda line: line.startswith("a new line with <script>"))
        # Rotated: renamed away, a new file in its place.
        os.rename(ops.err, str(ops.err) + ".1")
        ops.err.write_text("the first line of the new file\n")
        f.until(lambda line: line == "the first line of the new file")
    finally:
        f.close()
    # A symlink in its place is not followed; a file that is not there is
    # said to be so.
    os.symlink("/etc/passwd", str(ops.err) + ".link")
    os.replace(str(ops.err) + ".link", ops.err)
    r = ops.c.get("/api/follow", params={"what": "error"})
    assert r.status_code == 404 and "cannot be read" in r.json()["error"]
    assert ops.c.get("/api/follow", params={"what": "secrets"}).status_code == 400


def test_events_followed_with_a_topic_prefix(ops):
    f = Follow(ops.c, what="events", topic="panel.")
    try:
        ops.c.post("/api/pools/scale", {"pool": "default", "workers": 3})
        seen = f.until(lambda e: e["topic"] == "panel.audit" and e["fields"]["action"] == "pool.scale")
        assert all(e["topic"].startswith("panel.") for e in seen)
    finally:
        f.close()


def test_every_new_name_parameter_refuses_a_path(ops):
    c = ops.c
    for path, body in [("/api/pools/reload", {"pool": "../../etc"}),
                       ("/api/pools/recycle", {"pool": "a/b", "pid": 5}),
                       ("/api/realtime/secret", c.step_up({"site": "../rt", "id": "4242"})),
                       ("/api/realtime/secret", c.step_up({"site": "rt", "id": "../4242"})),
                       ("/api/realtime/rotate", {"site": "..", "id": "4242", "confirm": "4242"}),
                       ("/api/certs/renew", {"site": "../a", "mode": "force"}),
                       ("/api/certs/revoke", {"site": "a/../b"}),
                       ("/api/cluster/rollback", {"site": "../deploy"}),
                       ("/api/cluster/rollback", {"site": "deploy", "release": ".hidden"})]:
        r = c.post(path, body)
        assert r.status_code == 400, (path, body, r.status_code, r.text)


def test_releases_rolled_back_from_the_panel(tmp_path):
    os.chmod(tmp_path, 0o755)
    srv, app = tmp_path / "srv", tmp_path / "app"
    (app / "public").mkdir(parents=True)
    site = ('site: { hosts = ["deploy.test"]; default = true; root = "%s/current/public"; deploy_to = "%s";\n'
            '  deploy_hooks: { build = ["echo \x27<b>built</b> by the hook\x27"]; }; };\n' % (srv, srv))
    s = panel_suite(root="", sites={"deploy": site}, env={"VC_KEYS": str(tmp_path / "keys")},
                    conf_extra='deploy: { allowed_bases = ["%s"]; };' % tmp_path).start()
    try:
        r = s.vc("key", "new", "alice", check=True)
        s.vc("trust", "add", "alice", r.stdout.strip(), check=True)
        ids = []
        for v in ("one", "two"):
            (app / "public" / "index.php").write_text("<?php echo '%s';\n" % v)
            s.vc("deploy", "deploy", str(app), check=True)
            ids.append(curl(s.url("/"))[2].decode())
        assert ids == ["one", "two"]
        c = admin(s)
        assert c.get("/api/cluster/nodes").json()["running"] is False  # no cluster here
        got = c.get("/api/cluster/releases").json()
        assert got["running"] is True
        (deploy,) = got["sites"]
        rel = deploy["releases"]
        assert deploy["site"] == "deploy" and len(rel) == 2 and rel[1]["state"] == "current"
        assert c.post("/api/cluster/rollback", {"site": "deploy", "release": "../x"}).status_code == 400
        r = c.post("/api/cluster/rollback", {"site": "deploy"})
        assert r.status_code == 200, r.text
        assert curl(s.url("/"))[2] == b"one"
        got = c.get("/api/cluster/releases").json()["sites"][0]["releases"]
        assert got[0]["state"] == "current" and got[1]["bad"] == "yes"
        assert audited(s, "deploy.rollback", "deploy")
        # Each release's log: what its hooks printed, for a viewer too;
        # only a site's name and a release's id are taken.
        v = viewer(s, c, "logviewer")
        r = v.get(f"/api/cluster/releases/log?site=deploy&release={got[1]['id']}")
        assert r.status_code == 200 and "<b>built</b> by the hook" in r.json()["log"], r.text
        assert v.get("/api/cluster/releases/log?site=deploy&release=../x").status_code == 400
        assert v.get("/api/cluster/releases/log?site=../deploy&release=" + got[1]["id"]).status_code == 400
        assert v.get("/api/cluster/releases/log?site=deploy&release=20990101-000000.000-aaaaaa").status_code == 404
    finally:
        s.stop()
        s.cleanup()


def test_certificates_listed_renewed_and_revoked_through_vc_acme(tmp_path):
    www = tmp_path / "www"
    www.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(www, 0o755)
    s = panel_suite(root="")
    ca = Pebble(tmp_path / "ca", s.http, s.https, nosleep=True).start()
    try:
        # The CA answers on the suite's own ports: known once the suite is made.
        with open(os.path.join(s.conf, "vc.conf"), "a") as f:
            f.write('acme: { directory = "%s"; ca_bundle = "%s"; email = "ops@example.test"; };\n' % (
                ca.directory, ca.tls_cert))
        with open(os.path.join(s.conf, "sites-enabled", "a.conf"), "w") as f:
            f.write('site: { hosts = ["a.test"]; root = "%s"; tls = "acme"; default = true; };\n' % www)
        s.start()
        c = admin(s)
        listed = wait_until(lambda: [x for x in c.get("/api/certs").json()["certs"] if int(x["not_after"]) > 0], 60)
        assert listed and listed[0]["site"] == "a" and listed[0]["last_error"] == ""
        first = listed[0]["renew_at"]
        # issue: only for a site without one; force: now.
        r = c.post("/api/certs/renew", {"site": "a", "mode": "issue"})
        assert r.status_code == 409 and "has a certificate" in r.json()["error"]
        assert c.post("/api/certs/renew", {"site": "a", "mode": "now; rm"}).status_code == 400
        assert c.post("/api/certs/renew", {"site": "a", "mode": "force"}).status_code == 200
        assert wait_until(lambda: c.get("/api/certs").json()["certs"][0]["renew_at"] != first, 60)
        assert audited(s, "cert.renew", "a force")
        r = c.post("/api/certs/revoke", {"site": "a", "reason": 7})
        assert r.status_code == 409 and "reason" in r.json()["error"]
        assert c.post("/api/certs/revoke", {"site": "a", "reason": 4}).status_code == 200
        assert audited(s, "cert.revoke", "a")
    finally:
        s.stop(check=False)
        s.cleanup()
        ca.stop()
