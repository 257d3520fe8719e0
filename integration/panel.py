"""The panel in tests: a suite with vc-panel on, a client of its API
(requests, with the session's CSRF token), RFC 6238 codes computed here
(not by the panel's code), and Chromium driven through playwright-core
(node/panel_driver.mjs)."""
import base64
import hashlib
import hmac
import json
import os
import re
import struct
import subprocess
import tempfile
import time

from urllib.parse import quote

import requests
import urllib3

from conftest import VC, Suite, curl
from node_client import end_in_chromium, start_in_chromium
from reference import free_port

urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_DIR = os.path.join(REPO, "integration", "node")
CHROMIUM = "/usr/bin/chromium"
PASSWORD = "correct horse battery staple"


def panel_suite(root=None, panel="", sites=None, env=None, as_root=True, conf_extra=""):
    """A suite whose vc.conf turns the panel on (plus `panel` settings, and
    conf_extra after), with optional site files {name: body}. Not started."""
    port = free_port()
    conf = tempfile.mkdtemp(prefix="vc-panel-conf-")
    os.chmod(conf, 0o755)
    with open(os.path.join(conf, "vc.conf"), "w") as f:
        f.write('panel: { enable = true; listen = "127.0.0.1:%d"; %s };\n%s\n' % (port, panel, conf_extra))
    os.makedirs(os.path.join(conf, "sites-enabled"))
    for name, body in (sites or {}).items():
        with open(os.path.join(conf, "sites-enabled", name + ".conf"), "w") as f:
            f.write(body)
    s = Suite(root=root, conf=conf, env=env, as_root=as_root)
    s.panel = f"https://127.0.0.1:{port}"
    s.panel_port = port
    s.conf_tmp = conf
    return s


def tagged_page(s, tag):
    """A PHP page the cache stores with Surrogate-Key `tag`, fetched until
    it is a hit: a function that gives its Cache-Status now."""
    path = "/cached.php?id=" + tag + "&h[]=" + quote("Cache-Control: public, max-age=60") + "&h[]=" + quote(
        "Surrogate-Key: " + tag)

    def status():
        _, head, _ = curl(s.url(path))
        return re.search(r"^cache-status: (.*?)\r?$", head, re.M | re.I).group(1)

    deadline = time.monotonic() + 5
    while not status().startswith("Velocity; hit") and time.monotonic() < deadline:
        time.sleep(0.1)  # stored once vc-cache has taken the offer
    assert status().startswith("Velocity; hit")
    status.url = s.url(path)
    return status


def totp(secret, at=None, step=0):
    """The RFC 6238 code of a base32 secret at time `at` (now), `step`
    steps later."""
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    counter = int((time.time() if at is None else at) // 30) + step
    mac = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    off = mac[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", mac[off:off + 4])[0] & 0x7FFFFFFF) % 1000000)


class Client:
    """A browser-like client of the API: keeps the cookie, sends the
    CSRF token on changes, and the panel's own Origin."""

    def __init__(self, suite):
        self.s = suite
        self.http = requests.Session()
        self.http.verify = False
        self.csrf = None
        self.password = None  # the last one it signed in with: its step-ups send it

    def url(self, path):
        return self.s.panel + path

    def get(self, path, **kw):
        # verify per call: a session's own is overridden by CURL_CA_BUNDLE.
        return self.http.get(self.url(path), timeout=30, verify=False, **kw)

    def post(self, path, body=None, csrf=True, headers=None, **kw):
        h = {"Origin": self.s.panel}
        if csrf and self.csrf:
            h["X-CSRF-Token"] = self.csrf
        h.update(headers or {})
        return self.http.post(self.url(path), json=body if body is not None else {}, headers=h, timeout=30,
                              verify=False, **kw)

    def login(self, user, password, code=None, expect=200):
        body = {"user": user, "password": password}
        if code:
            body["code"] = code
        r = self.post("/api/login", body, csrf=False)
        assert r.status_code == expect, (r.status_code, r.text)
        if r.status_code == 200:
            self.csrf = r.json()["csrf"]
            self.password = password
        return r

    def step_up(self, body, code=None):
        """body with the password (and code) a step-up asks for (docs/panel.md)."""
        return dict(body, password=self.password, **({"code": code} if code else {}))


def set_password(s, user, password):
    """`vc panel passwd USER`, the password on stdin."""
    cmd = s.prefix + [VC, "--data", s.data] + (["--conf", s.conf] if s.conf else [])
    r = subprocess.run(cmd + ["panel", "passwd", user], input=password + "\n", capture_output=True, text=True,
                       timeout=30, env=s.env)
    assert r.returncode == 0, r.stderr
    return r


def admin(s, password=PASSWORD):
    """A signed-in admin whose password is changed (the first sign-in's
    duty done): its Client."""
    set_password(s, "admin", "first-" + password)
    c = Client(s)
    c.login("admin", "first-" + password)
    r = c.post("/api/password", {"old": "first-" + password, "new": password})
    assert r.status_code == 200, r.text
    c.password = password
    return c


def viewer(s, adm, name):
    """A viewer added by adm, signed in with its own password: its Client."""
    r = adm.post("/api/users/add", adm.step_up({"user": name, "role": "viewer"}))
    assert r.status_code == 200, r.text
    first = r.json()["password"]
    v = Client(s)
    v.login(name, first)
    assert v.post("/api/password", {"old": first, "new": name + "'s own long password"}).status_code == 200
    return v


def no_violations(b, page):
    got = b("axe")
    assert got == [], f"axe-core on {page}: {got}"


def sign_in(b, user, password):
    """The sign-in form, filled and sent (after signing out if needed)."""
    if b("visible", "#signout"):
        b("click", "#signout")
    b("waitVisible", "#signin-form")
    b("fill", "#signin-user", user)
    b("fill", "#signin-password", password)
    b("click", "#signin-form button[type=submit]")


def change_password(b, old, new):
    """The forced change's form, filled and sent."""
    b("waitVisible", "#change-form")
    b("fill", "#change-old", old)
    b("fill", "#change-new", new)
    b("fill", "#change-again", new)
    b("click", "#change-form button[type=submit]")


class Browser:
    """Chromium through node/panel_driver.mjs: one JSON request a line
    on its stdin, one JSON answer a line on its stdout."""

    def __init__(self):
        if not (os.path.exists(CHROMIUM) and os.path.isdir(os.path.join(NODE_DIR, "node_modules", "playwright-core"))):
            raise AssertionError("Chromium or playwright-core is missing: ops/install-deps.sh installs them")
        self.proc, self.home = start_in_chromium("panel_driver.mjs")

    def __call__(self, op, *args):
        self.proc.stdin.write(json.dumps({"op": op, "args": list(args)}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("the browser driver stopped: " + self.close()[-3000:])
        got = json.loads(line)
        if "error" in got:
            raise AssertionError(f"{op}{args}: {got['error']}")
        return got.get("value")

    def close(self):
        return end_in_chromium(self.proc, self.home)
