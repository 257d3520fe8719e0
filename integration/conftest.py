"""Fixtures that run the real suite: `vc up` in a temporary directory on
free loopback ports, waited for with `vc status --wait` (never a sleep),
and stopped with SIGTERM on teardown, checking no process is left."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from reference import free_port, tree  # noqa: F401 (free_port: for the tests)

# The modules whose tests need the machine to themselves, and why: ops/test.sh
# runs the others several at once (pytest-xdist) and these after, one at a
# time (the "alone" mark, integration/pytest.ini).
ALONE = {
    "test_08_h2_floods": "the front's memory and another client's p99 under floods",
    "test_09_faults": "a pool back to size within 500 ms of each kill",
    "test_14_slow_readers": "another client's p99 while slow readers hold the front",
    "test_22_pusher_js": "Chromium, its timeouts",
    # Three nodes each, with 200 ms heartbeats: a node starved of CPU for
    # 600 ms is suspect, and a presence or a deploy waits on it.
    "test_34_mesh": "three nodes with 200 ms heartbeats",
    "test_35_mesh_certs": "three nodes with 200 ms heartbeats",
    "test_36_mesh_netns": "three nodes with 200 ms heartbeats, in network namespaces",
    "test_46_deploy_cluster": "three nodes with 200 ms heartbeats",
    "test_47_deploy_netns": "three nodes with 200 ms heartbeats, in network namespaces",
    "test_24_browser": "Chromium, its timeouts",
    "test_37_debian_apps": "Debian's applications' own files in /etc and /var/lib, and their database",
    "test_50_panel_browser": "Chromium's timeouts, and Lighthouse's scores, which the machine's load moves",
    "test_53_panel_ops_browser": "Chromium, its timeouts",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__ in ALONE:
            item.add_marker(pytest.mark.alone)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VC_BUILD_DIR", os.path.join(REPO, "build"))
VC = os.path.join(BUILD, "bin", "vc")
FIXTURES = os.path.join(REPO, "integration", "fixtures")


def descendants(pid):
    """Every process below pid, from /proc (children of children too)."""
    return tree(pid)[1:]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except OSError:
        return False


class Suite:
    """as_root: started as root, the suite's daemons and PHP stay root
    (allow_root), as the tests before the privilege model assumed; the
    privilege tests (test_12_privileges.py) pass False and run the real
    model. Started as another user, everything runs as that user."""

    def __init__(self, root=None, conf=None, args=(), env=None, as_root=True, prefix=()):
        self.dir = tempfile.mkdtemp(prefix="vc-it-", dir="/tmp")
        # The suite's user and the pool's must be able to cross it.
        os.chmod(self.dir, 0o711)
        self.data = os.path.join(self.dir, "var")
        # root "": no --root (a configuration's sites say theirs).
        self.root = os.path.join(FIXTURES, "docroot") if root is None else root
        self.conf = conf
        self.http = free_port()
        self.https = free_port()
        self.admin = free_port()
        self.args = list(args)
        self.env = dict(os.environ, VC_DATA=self.data, VC_ADMIN_LISTEN=f"127.0.0.1:{self.admin}", **(env or {}))
        self.env.pop("VC_CONF", None)
        if as_root and os.geteuid() == 0:
            self.env.setdefault("VC_ALLOW_ROOT", "1")
        self.proc = None
        self.log = None
        self.prefix = list(prefix)  # e.g. setpriv, to start the suite as another user

    def vc(self, *args, timeout=30, check=False):
        cmd = [VC, "--data", self.data]
        if self.conf:
            cmd += ["--conf", self.conf]
        r = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout,
                           env=self.env, cwd=self.dir)
        if check and r.returncode != 0:
            raise AssertionError(f"vc {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r

    def up_command(self):
        cmd = [VC, "--data", self.data]
        if self.conf:
            cmd += ["--conf", self.conf]
        return self.prefix + cmd + ["up"] + (["--root", self.root] if self.root else []) + [
            "--listen", f"127.0.0.1:{self.http}", "--tls-listen", f"127.0.0.1:{self.https}"] + self.args

    def start(self, wait=20):
        self.log = open(os.path.join(self.dir, "up.log"), "w")
        self.proc = subprocess.Popen(self.up_command(), stdout=self.log, stderr=subprocess.STDOUT, env=self.env,
                                     cwd=self.dir)
        r = self.vc("status", "--wait", str(wait), timeout=wait + 10)
        if r.returncode != 0:
            self.stop(check=False)
            raise AssertionError(f"the suite did not become healthy:\n{r.stdout}{r.stderr}\n{self.logs()}")
        return self

    def status(self):
        r = self.vc("status", "--json", check=True)
        return json.loads(r.stdout)

    def daemon_pid(self, name):
        for d in self.status()["daemons"]:
            if d["daemon"] == name:
                return int(d["pid"])
        raise KeyError(name)

    def url(self, path="/"):
        return f"http://127.0.0.1:{self.http}{path}"

    def surl(self, path="/"):
        return f"https://127.0.0.1:{self.https}{path}"

    def logs(self):
        try:
            with open(os.path.join(self.dir, "up.log")) as f:
                return f.read()
        except OSError:
            return ""

    def events(self, since="5m"):
        r = self.vc("events", "--json", "--since", since, check=True)
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

    def events_of(self, topic, enough=bool, timeout=10.0):
        """The events on `topic`, once `enough(them)` (or at the timeout).
        An event travels (daemon, bus, store) apart from the answer or the
        log line a test saw: it may land a moment after them."""
        deadline = time.monotonic() + timeout
        while True:
            got = [e for e in self.events() if e["topic"] == topic]
            if enough(got) or time.monotonic() > deadline:
                return got
            time.sleep(0.1)

    def stop(self, check=True, timeout=5.0):
        """SIGTERM to `vc up`; every process it started must be gone in time."""
        if self.proc is None:
            return
        tree = descendants(self.proc.pid)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout + 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(alive(p) for p in tree):
            time.sleep(0.05)
        left = [p for p in tree if alive(p)]
        for p in left:
            os.kill(p, signal.SIGKILL)
        self.proc = None
        if self.log:
            self.log.close()
        if check:
            assert not left, f"processes left after SIGTERM: {left}\n{self.logs()}"
            logs = self.logs()
            # A sanitizer's report, or one of our invariants (VC_ASSERT,
            # VC_CHECK_OBJ) stopping a daemon that the supervisor restarted.
            for bad in ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", '" failed at '):
                assert bad not in logs, logs

    def cleanup(self):
        self.stop(check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


def configtest_site(make_suite, tmp_path, body):
    """vc configtest of a configuration with one site file,
    sites-enabled/x.conf, whose site (on its line 2) is "site: { BODY };"."""
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text("\n")
    (conf / "sites-enabled" / "x.conf").write_text("\nsite: { %s };\n" % body)
    return make_suite(root="", conf=str(conf)).vc("configtest")


@pytest.fixture
def make_suite():
    made = []

    def make(**kw):
        s = Suite(**kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.cleanup()


@pytest.fixture
def suite(make_suite):
    s = make_suite().start()
    yield s
    s.stop()


def site_symlink(target, link):
    """A symlink as a site's PHP makes one: its pool's user's, never
    root's (php.user = "root" is refused), so run as root the test gives
    it to nobody. The front follows root's own links out of a root (a
    Debian package's tree), never a site's (docs/SECURITY.md)."""
    os.symlink(target, link)
    if os.geteuid() == 0:
        os.lchown(link, 65534, 65534)


def curl(*args, timeout=20):
    """Runs curl; returns (status line code, headers text, body bytes)."""
    r = subprocess.run(["curl", "-sS", "-D", "-", "--max-time", str(timeout)] + list(args),
                       capture_output=True, timeout=timeout + 5)
    if r.returncode != 0:
        raise AssertionError(f"curl {' '.join(args)} failed: {r.stderr.decode()}")
    raw = r.stdout
    # Skip interim 1xx blocks; the last header block is the answer's.
    while True:
        head, _, body = raw.partition(b"\r\n\r\n")
        code = int(head.split(b" ", 2)[1])
        if 100 <= code < 200 and body.startswith(b"HTTP/"):
            raw = body
            continue
        return code, head.decode("latin-1"), body


def latencies(s, n=60, path="/hello.php"):
    """n sequential requests on one connection; their times in seconds."""
    import requests
    sess = requests.Session()
    out = []
    for _ in range(n):
        t0 = time.monotonic()
        assert sess.get(s.url(path), timeout=10).status_code == 200
        out.append(time.monotonic() - t0)
    return out


def p99(xs):
    import statistics
    return statistics.quantiles(xs, n=100)[98]


def wrk(url, seconds=4, conns=16, script=None, until=None):
    """wrk against url: (requests, [connect, read, write, timeout] socket
    errors, non-2xx/3xx answers). script: a Lua file (a POST, say).
    until: a threading.Event that ends the load early (wrk stops on
    SIGINT and reports what it did); seconds is then the longest."""
    import re
    cmd = ["wrk", "-t2", f"-c{conns}", f"-d{seconds}s"] + (["-s", script] if script else []) + [url]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if until is not None and until.wait(seconds) and p.poll() is None:
        p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=seconds + 30)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return total, [int(x) for x in errors.groups()] if errors else [0, 0, 0, 0], int(non2xx.group(1)) if non2xx else 0
