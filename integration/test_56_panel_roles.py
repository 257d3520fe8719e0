"""The panel's roles and step-ups (docs/panel.md, "Roles and step-up"):
the table in the docs is every route the panel serves, and each route is
called as anonymous, a viewer, an admin without step-up and an admin with
it; a refusal for who the caller is names what was missing ("need"), any
other answer is the route's own (a 400 for an empty body, say)."""
import os
import re
import time

import pytest
import requests

from conftest import REPO
from panel import PASSWORD, Client, admin, panel_suite, totp, viewer

PANEL_SRC = os.path.join(REPO, "daemons", "vc-panel")
ROUTE = re.compile(r'\{"(GET|POST)", "(/api/[^"]*)", ACCESS_([A-Z_]+)')
LEVELS = {"OPEN": "anyone", "SIGNED": "signed in", "VIEWER": "viewer", "ADMIN": "admin", "STEP_UP": "admin, step-up"}


def doc_table():
    with open(os.path.join(REPO, "docs", "panel.md")) as f:
        text = f.read()
    table = text.split("<!-- roles table: begin -->")[1].split("<!-- roles table: end -->")[0]
    rows = {}
    for line in table.splitlines():
        m = re.match(r"\| `(GET|POST) (/api/\S+)` \| ([^|]+) \|", line)
        if m:
            rows[(m.group(1), m.group(2))] = m.group(3).strip()
    return rows


def served_routes():
    got = {}
    for name in sorted(os.listdir(PANEL_SRC)):
        if name.endswith(".c"):
            with open(os.path.join(PANEL_SRC, name)) as f:
                for m in ROUTE.finditer(f.read()):
                    got[(m.group(1), m.group(2))] = m.group(3)
    return got


def test_the_docs_table_is_every_route_the_panel_serves():
    docs, served = doc_table(), served_routes()
    assert set(docs) == set(served), (set(docs) ^ set(served))
    for route, level in served.items():
        assert docs[route].startswith(LEVELS[level]), (route, docs[route], level)


@pytest.fixture(scope="module")
def roles():
    # No slow-down: the sweep sends wrong passwords to /api/password on purpose.
    s = panel_suite(panel="slow_after = 100; lockout_after = 100;").start()
    adm = admin(s)
    v = viewer(s, adm, "vivian")
    yield s, adm, v
    s.stop()
    s.cleanup()


def call(s, client, method, path, body=None):
    """One call, as client (None: anonymous); an answer that streams (SSE)
    is read no further. (status, the refusal's "need" or None)."""
    if client is None:
        r = requests.request(method, s.panel + path, json=body or {} if method == "POST" else None, verify=False,
                             timeout=30, headers={"Origin": s.panel}, stream=True)
    elif method == "GET":
        r = client.http.get(client.url(path), verify=False, timeout=30, stream=True)
    else:
        r = client.post(path, body or {}, stream=True)
    need = r.json().get("need") if r.headers.get("content-type", "").startswith("application/json") else None
    status = r.status_code
    r.close()
    return status, need


def expect(level, who):
    """What the level asks that who lacks ("need"): None if who may call it."""
    order = ["anyone", "signed in", "viewer", "admin", "admin, step-up"]
    has = {"anonymous": "anyone", "viewer": "viewer", "admin": "admin", "admin+step-up": "admin, step-up"}[who]
    if order.index(level) <= order.index(has):
        return None
    if who == "anonymous":
        return "signin"
    return "step_up" if who == "admin" else "admin"


def test_every_route_as_each_role(roles):
    s, adm, v = roles
    docs = doc_table()
    # Signing out ends the session the sweep uses: last.
    order = sorted(docs, key=lambda r: r[1] == "/api/logout")
    failures = []
    for who, client in (("anonymous", None), ("viewer", v), ("admin", adm), ("admin+step-up", adm)):
        for method, path in order:
            level = docs[(method, path)]
            if level.startswith("admin;"):  # users/totp-reset: its own test below
                level = "admin"
            if path == "/api/logout" and who.startswith("admin"):
                continue  # the admin's session is the next tests'; the viewer's ends here, last
            body = adm.step_up({}) if who == "admin+step-up" else {}
            status, need = call(s, client, method, path, body)
            want = expect(level, who)
            if who == "anonymous" and level == "anyone":
                want = None
            if need != want or (want == "signin" and status != 401):
                failures.append((who, method, path, status, need, want))
    assert not failures, failures


def test_resetting_ones_own_totp_is_a_step_up_anothers_is_not(roles):
    s, adm, v = roles
    r = adm.post("/api/users/totp-reset", {"user": "admin"})
    assert r.status_code == 403 and r.json()["need"] == "step_up", r.text
    r = adm.post("/api/users/totp-reset", adm.step_up({"user": "admin"}))
    assert r.status_code == 200, r.text
    assert adm.post("/api/users/totp-reset", {"user": "vivian"}).status_code == 200


def test_making_an_admin_is_a_step_up_making_a_viewer_is_not(roles):
    s, adm, v = roles
    r = adm.post("/api/users/role", {"user": "vivian", "role": "admin"})
    assert r.status_code == 403 and r.json()["need"] == "step_up", r.text
    r = adm.post("/api/users/role", adm.step_up({"user": "vivian", "role": "admin"}))
    assert r.status_code == 200, r.text
    assert adm.post("/api/users/role", {"user": "vivian", "role": "viewer"}).status_code == 200
    # Her sessions ended with each change: she signs in again, a viewer.
    assert v.get("/api/users").status_code == 401
    v.login("vivian", "vivian's own long password")
    assert v.get("/api/users").status_code == 403 and v.get("/api/sites").status_code == 200


def test_a_stolen_session_cannot_reset_its_totp_enrol_its_own_and_open_a_terminal(roles):
    """The review's way in: an admin session alone, without the password
    or a code. With TOTP on, the password alone is not enough either; the
    password and a code (or a recovery code) are; each code once."""
    s, adm, _ = roles
    set_up = Client(s)
    set_up.login("admin", PASSWORD)
    secret = set_up.post("/api/totp/begin").json()["secret"]
    at = time.time() - 30
    r = set_up.post("/api/totp/confirm", {"code": totp(secret, at=at)})
    assert r.status_code == 200
    recovery = r.json()["recovery"]
    stolen = adm  # signed in before TOTP was on: the cookie is all the thief has
    for body in ({"user": "admin"}, {"user": "admin", "password": "guess"},
                 {"user": "admin", "password": PASSWORD}, {"user": "admin", "code": totp(secret, at=at, step=1)}):
        r = stolen.post("/api/users/totp-reset", body)
        assert r.status_code == 403 and r.json()["need"] == "step_up", (body, r.text)
    r = stolen.post("/api/users/add", {"user": "mallory", "role": "admin", "password": PASSWORD})
    assert r.status_code == 403 and r.json()["need"] == "step_up", r.text
    # The owner, with the password and a recovery code: once.
    r = stolen.post("/api/users/add", {"user": "ally", "role": "viewer", "password": PASSWORD, "code": recovery[0]})
    assert r.status_code == 200, r.text
    r = stolen.post("/api/users/add", {"user": "ally2", "role": "viewer", "password": PASSWORD, "code": recovery[0]})
    assert r.status_code == 403 and r.json()["need"] == "step_up", r.text
    # The step-ups refused are in the audit log.
    got = s.events_of("panel.audit", lambda es: any("step-up refused" in e["fields"]["result"] for e in es))
    assert any(e["fields"]["user"] == "admin" and "step-up refused" in e["fields"]["result"] for e in got), got
    r = stolen.post("/api/users/totp-reset",
                    {"user": "admin", "password": PASSWORD, "code": totp(secret, at=at, step=1)})
    assert r.status_code == 200, r.text
