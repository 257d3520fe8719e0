"""vc-panel's API against the real suite (docs/panel.md): the first
admin, passwords, TOTP and recovery codes, sessions (cookie flags,
rotation, no fixation), CSRF and Origin, roles, lockout with and without
a trusted proxy, path traversal, plain HTTP, and changes made through the
daemons' control verbs with their audit events. The browser's view is
test_50_panel_browser.py."""
import os
import re
import signal
import socket
import ssl
import subprocess
import time

import pytest
import requests

from conftest import REPO, VC, curl
from panel import PASSWORD, Client, admin, panel_suite, set_password, tagged_page, totp


@pytest.fixture(scope="module")
def ps():
    # No slow-down in this module: its tests fail sign-ins on purpose
    # (wrong codes, replays) from one address; lockout has its own suite.
    s = panel_suite(panel="slow_after = 100; lockout_after = 100;").start()
    yield s
    s.stop()
    s.cleanup()


@pytest.fixture(scope="module")
def adm(ps):
    return admin(ps)


def test_the_first_admin_has_a_password_on_file_and_must_change_it(ps):
    path = os.path.join(ps.data, "panel", "first-password")
    assert os.stat(path).st_mode & 0o777 == 0o600
    user, password = open(path).read().split()
    assert user == "admin" and len(password) >= 20
    assert password not in ps.logs()  # the log says where it is, not what
    c = Client(ps)
    r = c.login("admin", password)
    assert r.json()["must_change"] is True
    # Nothing but the password change until then.
    assert c.get("/api/sites").status_code == 403
    assert c.get("/api/sites").json()["error"] == "choose a new password first"
    assert c.post("/api/pools/scale", {"pool": "default", "workers": 2}).status_code == 403
    # Too short, the same one, a wrong current one: refused.
    assert c.post("/api/password", {"old": password, "new": "short"}).status_code == 400
    assert c.post("/api/password", {"old": password, "new": password}).status_code == 400
    assert c.post("/api/password", {"old": "wrong" * 3, "new": "another long password"}).status_code == 403
    # Changed: the file's password is worth nothing now, and is gone.
    assert c.post("/api/password", {"old": password, "new": "the admin's own password"}).status_code == 200
    assert not os.path.exists(path)
    assert c.get("/api/sites").status_code == 200


def test_headers_cookie_flags_and_the_content_security_policy(ps, adm):
    r = adm.get("/")
    assert r.status_code == 200 and "<title>Velocity panel</title>" in r.text
    csp = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["strict-transport-security"].startswith("max-age=")
    # The sign-in's cookie.
    c = Client(ps)
    r = c.post("/api/login", {"user": "admin", "password": PASSWORD}, csrf=False)
    cookie = r.headers["set-cookie"]
    assert re.match(r"__Host-vc_panel=[A-Za-z0-9_-]{43}; Path=/; Secure; HttpOnly; SameSite=Strict$", cookie), cookie
    assert r.headers["cache-control"] == "no-store"
    # No inline script or style in the pages: the CSP forbids them.
    page = adm.get("/index.html").text
    assert "<script>" not in page and "style=" not in page and "onclick" not in page


def test_a_change_needs_its_csrf_token_the_panels_origin_and_json(ps, adm):
    body = {"pool": "default", "workers": 2}
    r = adm.post("/api/pools/scale", body, csrf=False)
    assert r.status_code == 403 and "CSRF" in r.json()["error"]
    r = adm.post("/api/pools/scale", body, headers={"X-CSRF-Token": "x" * 43})
    assert r.status_code == 403
    r = adm.post("/api/pools/scale", body, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403 and "origin" in r.json()["error"]
    # A form post (what another site can send without a preflight).
    r = adm.http.post(adm.url("/api/pools/scale"), data="pool=default&workers=2",
                      headers={"X-CSRF-Token": adm.csrf, "Content-Type": "application/x-www-form-urlencoded"}, verify=False)
    assert r.status_code == 415
    # Duplicate keys, not an object, too big: refused before any route
    # runs (a body over 64 KiB is cut by h2o: a 413 or a closed link).
    for raw in ('{"pool":"default","pool":"x","workers":2}', "[1]", "{" + " " * 70000 + "}"):
        try:
            r = adm.http.post(adm.url("/api/pools/scale"), data=raw,
                              headers={"X-CSRF-Token": adm.csrf, "Content-Type": "application/json"}, verify=False)
            assert r.status_code in (400, 413), (raw[:20], r.status_code)
        except requests.exceptions.ConnectionError:
            assert len(raw) > 65536
    assert adm.get("/api/me").status_code == 200


def test_a_session_is_made_at_sign_in_never_taken_from_the_client(ps, adm):
    c = Client(ps)
    planted = "A" * 43
    c.http.cookies.set("__Host-vc_panel", planted, domain="127.0.0.1", path="/")
    assert c.get("/api/me").status_code == 401
    c.login("admin", PASSWORD)
    got = c.http.cookies.get("__Host-vc_panel")
    assert got and got != planted
    # The planted id signs nobody in, then or now.
    attacker = Client(ps)
    attacker.http.cookies.set("__Host-vc_panel", planted, domain="127.0.0.1", path="/")
    assert attacker.get("/api/me").status_code == 401
    # Signing in again (say, on a shared browser) ends the session it
    # came with: the old cookie is worth nothing.
    old = got
    c.login("admin", PASSWORD)
    assert c.http.cookies.get("__Host-vc_panel") != old
    stale = Client(ps)
    stale.http.cookies.set("__Host-vc_panel", old, domain="127.0.0.1", path="/")
    assert stale.get("/api/me").status_code == 401
    # Signing out ends it too.
    token = c.http.cookies.get("__Host-vc_panel")
    assert c.post("/api/logout").status_code == 200
    again = Client(ps)
    again.http.cookies.set("__Host-vc_panel", token, domain="127.0.0.1", path="/")
    assert again.get("/api/me").status_code == 401


def test_a_viewer_reads_but_every_change_is_refused(ps, adm):
    r = adm.post("/api/users/add", adm.step_up({"user": "vera", "role": "viewer"}))
    assert r.status_code == 200, r.text
    first = r.json()["password"]
    v = Client(ps)
    v.login("vera", first)
    assert v.post("/api/password", {"old": first, "new": "vera's own long password"}).status_code == 200
    assert v.get("/api/sites").status_code == 200
    assert v.get("/api/pools").status_code == 200
    for path, body in [("/api/pools/scale", {"pool": "default", "workers": 1}),
                       ("/api/cache/purge", {"kind": "tag", "value": "x"}), ("/api/reload", {}),
                       ("/api/users/add", {"user": "eve", "role": "admin"}),
                       ("/api/users/role", {"user": "vera", "role": "admin"}),
                       ("/api/users/totp-reset", {"user": "admin"}),
                       ("/api/sites/save", {"name": "x", "text": "site: {};"}),
                       ("/api/sites/enable", {"name": "x", "enabled": True})]:
        r = v.post(path, body)
        assert r.status_code == 403 and r.json()["error"] == "a viewer may not change anything", (path, r.text)
    assert v.get("/api/users").status_code == 403
    assert v.get("/api/sites/file?name=x").status_code == 403  # a site file may hold an app's secret
    # A viewer made an admin: only with the admin's password again (a
    # step-up); the change ends vera's sessions, and she signs in anew as
    # an admin. The last admin is not made a viewer.
    r = adm.post("/api/users/role", {"user": "vera", "role": "admin"})
    assert r.status_code in (401, 403) and "password" in r.json()["error"], r.text
    r = adm.post("/api/users/role", adm.step_up({"user": "vera", "role": "admin"}))
    assert r.status_code == 200 and r.json()["role"] == "admin", r.text
    assert v.get("/api/sites").status_code == 401
    v.login("vera", "vera's own long password")
    assert v.get("/api/users").status_code == 200
    assert adm.post("/api/users/role", {"user": "vera", "role": "viewer"}).status_code == 200
    assert adm.post("/api/users/role", {"user": "admin", "role": "viewer"}).status_code == 409
    assert adm.post("/api/users/role", {"user": "vera", "role": "root"}).status_code == 400
    assert adm.post("/api/users/role", {"user": "../vera", "role": "viewer"}).status_code == 400
    assert adm.post("/api/users/role", {"user": "nobody-here", "role": "viewer"}).status_code == 404
    v = Client(ps)
    v.login("vera", "vera's own long password")
    assert v.get("/api/users").status_code == 403
    # Taking a role away takes effect at once: removed, vera is out.
    assert adm.post("/api/users/remove", {"user": "vera"}).status_code == 200
    assert v.get("/api/sites").status_code == 401


def test_totp_enrolment_then_codes_and_recovery_codes_each_used_once(ps, adm):
    set_password(ps, "tina", "tina's first long password")
    c = Client(ps)
    c.login("tina", "tina's first long password")
    assert c.post("/api/password", {"old": "tina's first long password", "new": PASSWORD}).status_code == 200
    r = c.post("/api/totp/begin")
    secret = r.json()["secret"]
    assert re.fullmatch(r"[A-Z2-7]{32}", secret) and r.json()["uri"].startswith("otpauth://totp/Velocity:tina?")
    qr = c.get("/api/totp/qr.svg")
    assert qr.headers["content-type"] == "image/svg+xml" and qr.text.startswith("<svg") and "<path" in qr.text
    assert c.post("/api/totp/confirm", {"code": "000000" if totp(secret) != "000000" else "111111"}).status_code == 400
    enrolled = time.time()  # codes below are of this step and the next: a 30 s boundary crossed changes nothing
    r = c.post("/api/totp/confirm", {"code": totp(secret, at=enrolled)})
    assert r.status_code == 200
    recovery = r.json()["recovery"]
    assert len(recovery) == 10 and len(set(recovery)) == 10
    # The password alone no longer signs in.
    c2 = Client(ps)
    r = c2.post("/api/login", {"user": "tina", "password": PASSWORD}, csrf=False)
    assert r.status_code == 401 and r.json()["need_code"] is True
    # The code enrolment used is spent; the next step's is accepted once.
    c2.login("tina", PASSWORD, code=totp(secret, at=enrolled), expect=401)
    c2.login("tina", PASSWORD, code=totp(secret, at=enrolled, step=1))
    Client(ps).login("tina", PASSWORD, code=totp(secret, at=enrolled, step=1), expect=401)
    # A recovery code, once.
    Client(ps).login("tina", PASSWORD, code=recovery[3].upper())
    Client(ps).login("tina", PASSWORD, code=recovery[3], expect=401)
    assert c2.get("/api/me").json()["recovery_left"] == 9
    # An admin resets it; then the password alone signs in again.
    assert adm.post("/api/users/totp-reset", {"user": "tina"}).status_code == 200
    Client(ps).login("tina", PASSWORD)


def test_path_traversal_in_paths_and_parameters_is_refused(ps, adm):
    secret = "correct horse"  # the admins' password, had a file of the data directory been served
    for path in ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/api/../index.html", "/panel.js%00.html",
                 "/..%2f..%2fetc%2fpasswd", "/.%2e/var/panel/first-password", "/static/../../../etc/shadow",
                 "/api/sites/..", "/%5c..%5cetc"]:
        code, _, body = curl("-k", "--path-as-is", ps.panel + path)
        assert code in (400, 404), (path, code)
        assert b"root:" not in body and secret.encode() not in body
    for path, body in [("/api/users/add", adm.step_up({"user": "../../x", "role": "viewer"})),
                       ("/api/users/add", adm.step_up({"user": "a/b", "role": "viewer"})),
                       ("/api/users/totp-reset", {"user": ".."}),
                       ("/api/pools/scale", {"pool": "../../default", "workers": 2}),
                       ("/api/pools/scale", {"pool": "default/../x", "workers": 2}),
                       ("/api/cache/purge", {"kind": "site", "value": "../../etc"}),
                       ("/api/cache/purge", {"kind": "../tag", "value": "x"}),
                       ("/api/sites/save", {"name": "../../etc/cron.d/x", "text": "x"}),
                       ("/api/sites/save", {"name": "@config", "text": "x"}),
                       ("/api/sites/enable", {"name": "..", "enabled": True})]:
        r = adm.post(path, body)
        assert r.status_code in (400, 404), (path, body, r.status_code, r.text)
    for name in ["../../etc/passwd", "..%2f..%2fetc%2fpasswd", "x/../../y", ".hidden"]:
        r = adm.get("/api/sites/file?name=" + name)
        assert r.status_code in (400, 404) and "root:" not in r.text, (name, r.status_code)
    for url in ["../../etc/passwd", "file:///etc/passwd", "%00", "http://x/%0a"]:
        r = adm.get("/api/cache/show?url=" + url)
        assert r.status_code in (400, 404) and "root:" not in r.text, (url, r.status_code)


def test_plain_http_gets_no_answer(ps):
    port = ps.panel_port
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        got = b""
        try:
            while chunk := sock.recv(4096):
                got += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    assert b"HTTP/1" not in got and b"Velocity" not in got
    # TLS 1.1 and older are refused too.
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        assert tls.version() == "TLSv1.2"


def test_scale_and_purge_go_through_the_daemons_and_are_audited(ps, adm):
    before = {p["pool"]: p for p in adm.get("/api/pools").json()["pools"]}["default"]
    want = 3 if int(before["workers_wanted"]) != 3 else 2
    r = adm.post("/api/pools/scale", {"pool": "default", "workers": want})
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        pool = adm.get("/api/pools").json()["pools"][0]
        if int(pool["workers"]) == want and len(pool["workers_list"]) == want:
            break
        time.sleep(0.2)
    assert int(pool["workers"]) == want and len(pool["workers_list"]) == want
    # A page tagged "panel-tag" is stored, then purged by its tag.
    status = tagged_page(ps, "panel-tag")
    r = adm.post("/api/cache/purge", {"kind": "tag", "value": "panel-tag"})
    assert r.status_code == 200, r.text
    assert not status().startswith("Velocity; hit")
    # Both changes are audit events on the bus, and in the audit log.
    got = ps.events_of("panel.audit", lambda es: {e["fields"]["action"] for e in es} >= {"pool.scale", "cache.purge"})
    actions = {e["fields"]["action"]: e["fields"] for e in got}
    assert actions["pool.scale"]["user"] == "admin" and actions["pool.scale"]["target"] == f"default to {want}"
    assert actions["cache.purge"]["from"] == "127.0.0.1" and actions["cache.purge"]["result"] == "ok"
    log = adm.get("/api/audit").json()["events"]
    assert log[0]["time_ms"] >= log[-1]["time_ms"] and any(e["action"] == "cache.purge" for e in log)


def test_status_and_configtest_of_the_panels_settings(ps, tmp_path):
    r = ps.vc("status", check=True)
    assert re.search(r"^vc-panel\s+\d+\s+running", r.stdout, re.M)
    conf = tmp_path / "etc"
    conf.mkdir()
    for body, why in [('panel: { trusted_proxies = ["10.0.0.0/99"]; };', 'not an address or a CIDR block'),
                      ('panel: { slow_after = 5; lockout_after = 2; };', "below panel.slow_after"),
                      ('panel: { tls_cert = "/x.pem"; };', "go together"),
                      ('panel: { lockout_time = "1ms"; };', "panel.lockout_time")]:
        (conf / "vc.conf").write_text("\n" + body + "\n")
        r = subprocess.run([VC, "--conf", str(conf), "--data", str(tmp_path / "var"), "configtest"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and why in r.stderr + r.stdout, (body, r.stdout, r.stderr)
        assert "vc.conf:2" in r.stderr + r.stdout, r.stderr


def test_vc_panel_passwd_says_when_the_panel_is_off(suite):
    r = subprocess.run([VC, "--data", suite.data, "panel", "passwd", "admin"], input="a long enough password\n",
                       capture_output=True, text=True, timeout=30, env=suite.env)
    assert r.returncode == 1 and "is panel.enable = true?" in r.stderr


@pytest.fixture(scope="module")
def locking():
    """Failures slow sign-ins from the 2nd on and lock at the 4th; only
    127.0.0.1 is a trusted proxy (curl from 127.0.0.2 is a client)."""
    s = panel_suite(panel='slow_after = 2; lockout_after = 4; lockout_time = "60s"; '
                          'trusted_proxies = ["127.0.0.1"];').start()
    yield s
    s.stop()
    s.cleanup()


def sign_in(s, user, password, forwarded_for=None, interface="127.0.0.1"):
    """A sign-in by curl from `interface`: (status, JSON answer, Retry-After)."""
    args = ["-k", "--interface", interface, "-H", "Content-Type: application/json", "-H", f"Origin: {s.panel}",
            "--data", '{"user":"%s","password":"%s"}' % (user, password)]
    if forwarded_for:
        args += ["-H", f"X-Forwarded-For: 192.0.2.99, {forwarded_for}"]
    code, head, body = curl(*args, s.panel + "/api/login")
    retry = re.search(r"^retry-after: (\d+)", head, re.M | re.I)
    import json
    return code, json.loads(body), int(retry.group(1)) if retry else None


def test_failed_sign_ins_slow_down_then_lock_the_account_from_any_address(locking):
    s = locking
    set_password(s, "bob", "bob's own long password")
    # Each try from another address (a trusted proxy names them): the
    # account's count, not the address's, slows and then locks.
    assert sign_in(s, "bob", "guess1", "10.1.0.1")[0] == 401
    assert sign_in(s, "bob", "guess2", "10.1.0.2")[0] == 401
    code, got, retry = sign_in(s, "bob", "guess3", "10.1.0.3")
    assert code == 429 and retry == 1, got
    assert got["error"] == "too many failed sign-ins for this account: wait 1 s before trying again"
    time.sleep(retry)  # as the answer says: the server's own back-off
    assert sign_in(s, "bob", "guess3", "10.1.0.4")[0] == 401
    code, got, retry = sign_in(s, "bob", "guess4", "10.1.0.5")
    assert code == 429 and retry == 2
    time.sleep(retry)
    assert sign_in(s, "bob", "guess4", "10.1.0.6")[0] == 401
    # Locked: the right password too, from a new address.
    code, got, retry = sign_in(s, "bob", "bob's own long password", "10.1.0.7")
    assert code == 429 and re.fullmatch(r"too many failed sign-ins for this account: locked for \d+ s", got["error"])
    assert 50 <= retry <= 60 and got["error"].endswith(f" {retry} s")
    got = s.events_of("panel.audit", lambda es: any(e["fields"]["result"] == "locked out" for e in es))
    locked = [e["fields"] for e in got if e["fields"]["result"] == "locked out"]
    # Nobody is signed in yet: the account tried is the target.
    assert locked and locked[0]["target"] == "bob" and locked[0]["from"] == "10.1.0.7"
    # A reload keeps the counts (the settings are swapped, not the table).
    s.vc("reload", check=True)
    assert sign_in(s, "bob", "bob's own long password", "10.1.0.9")[0] == 429
    # Root setting a new password (`vc panel passwd`) ends the lockout.
    set_password(s, "bob", "bob's password from root")
    assert sign_in(s, "bob", "bob's password from root", "10.1.0.8")[0] == 200


def test_a_forged_x_forwarded_for_does_not_dodge_the_address_lockout(locking):
    s = locking
    # From 127.0.0.2, not a trusted proxy: its X-Forwarded-For is
    # ignored, so new names and new forged addresses count against it.
    assert sign_in(s, "nobody1", "x", "10.2.0.1", interface="127.0.0.2")[0] == 401
    assert sign_in(s, "nobody2", "x", "10.2.0.2", interface="127.0.0.2")[0] == 401
    code, got, _ = sign_in(s, "nobody3", "x", "10.2.0.3", interface="127.0.0.2")
    assert code == 429 and "for this address" in got["error"]
    # Through the trusted proxy, the client it names is counted.
    assert sign_in(s, "nobody4", "x", "10.3.0.1")[0] == 401
    got = s.events_of("panel.audit", lambda es: any(e["fields"]["target"] == "nobody4" for e in es))
    froms = {e["fields"]["target"]: e["fields"]["from"] for e in got}
    assert froms["nobody1"] == "127.0.0.2" and froms["nobody4"] == "10.3.0.1"


def test_readiness_on_the_admin_listener(ps):
    """/ready and /ready/NAME (daemons/vc-front/core/readiness.h): 200 when
    every daemon answers healthy; a stopped vc-php is 503 with why."""
    admin_url = f"http://127.0.0.1:{ps.admin}"

    def ready(path):
        code, _, body = curl(admin_url + path)
        return code, body.decode()

    deadline = time.monotonic() + 10
    while ready("/ready")[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    code, body = ready("/ready")
    assert code == 200, body
    names = {line.split(":")[0] for line in body.splitlines()}
    assert {"front", "bus", "cache", "php", "acme", "panel"} <= names, body
    assert ready("/ready/php") == (200, "php: ready\n")
    code, body = ready("/ready/nope")
    assert code == 404 and "these are: " in body and " php" in body
    # A pool that stops answering is not ready, and neither is the suite.
    pid = ps.daemon_pid("vc-php")
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 10
        while ready("/ready/php")[0] != 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        code, body = ready("/ready/php")
        assert code == 503 and body.startswith("php: not ready: not answering"), body
        code, body = ready("/ready")
        assert code == 503 and "php: not ready" in body and "bus: ready" in body
    finally:
        os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 10
    while ready("/ready")[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ready("/ready")[0] == 200


def test_the_panel_under_the_privilege_model():
    """Started as root without allow_root: vc-panel runs as the suite's
    user, and reaches what it shows and changes (the supervisor's status,
    a pool's scale) as that user; its files are that user's."""
    if os.geteuid() != 0:
        pytest.skip("the privilege model applies when the suite is started as root; this run is not root")
    s = panel_suite(as_root=False).start()
    try:
        pid = s.daemon_pid("vc-panel")
        assert os.stat(f"/proc/{pid}").st_uid != 0
        first = os.path.join(s.data, "panel", "first-password")
        assert os.stat(first).st_uid == os.stat(f"/proc/{pid}").st_uid and os.stat(first).st_mode & 0o777 == 0o600
        c = admin(s)
        daemons = c.get("/api/daemons")
        assert daemons.status_code == 200 and any(d["daemon"] == "vc-panel" for d in daemons.json()["daemons"])
        r = c.post("/api/pools/scale", {"pool": "default", "workers": 2})
        assert r.status_code == 200, r.text
        r = c.post("/api/reload")
        assert r.status_code == 200, r.text
        # Site files: root writes them for the panel's process alone.
        text = 'site: { hosts = ["p.test"]; root = "%s"; };\n' % os.path.join(REPO, "integration", "fixtures", "docroot")
        assert c.post("/api/sites/save", {"name": "p", "text": text}).status_code == 200
        r = c.post("/api/sites/enable", {"name": "p", "enabled": True})
        assert r.status_code == 200, r.text
    finally:
        s.stop()
        s.cleanup()


def test_the_pages_files_are_revalidated_with_a_tag_and_the_server_is_not_named(ps):
    """The panel's own files: asked again at each load (no-cache), answered
    304 while unchanged (an ETag); no answer says which server it is."""
    code, head, body = curl("-k", ps.panel + "/panel.js")
    h = {k.lower(): v for k, v in (line.split(": ", 1) for line in head.splitlines()[1:] if ": " in line)}
    assert code == 200 and body and h["cache-control"] == "no-cache" and h["etag"].startswith('"'), h
    assert "server" not in h, h
    code, head2, body2 = curl("-k", "-H", f"If-None-Match: {h['etag']}", ps.panel + "/panel.js")
    assert code == 304 and body2 == b"", head2
    code, _, _ = curl("-k", "-H", 'If-None-Match: "other"', ps.panel + "/panel.js")
    assert code == 200
    code, head3, _ = curl("-k", ps.panel + "/api/me")
    assert "server:" not in head3.lower(), head3
