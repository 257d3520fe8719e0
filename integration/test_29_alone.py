"""Each daemon run alone, as a container runs it: no `vc up`, the
configuration from `--conf DIR` and the environment (VC_ENDPOINTS among
it), `--health` as the container's health check, SIGTERM to stop. The
images and the pod (deploy/, ops/pod-test.sh) run exactly this."""
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import BUILD, FIXTURES, alive, curl, descendants, free_port

DAEMONS = ("vc-bus", "vc-cache", "vc-php", "vc-front")


class Alone:
    """The four daemons, each started by the test as its own process."""

    def __init__(self, tmp_path, env=None):
        self.dir = tmp_path
        self.data = str(tmp_path / "data")
        self.conf = tmp_path / "etc"
        self.conf.mkdir()
        (self.conf / "vc.conf").write_text("php: { workers = 2; };\n")
        self.http, self.https, self.admin = free_port(), free_port(), free_port()
        self.env = dict(os.environ, VC_LISTEN=f"127.0.0.1:{self.http}", VC_TLS_LISTEN=f"127.0.0.1:{self.https}",
                        VC_ADMIN_LISTEN=f"127.0.0.1:{self.admin}", VC_ROOT=os.path.join(FIXTURES, "docroot"),
                        **(env or {}))
        for k in ("VC_DATA", "VC_CONF", "VC_READY_FD"):
            self.env.pop(k, None)
        if os.geteuid() == 0:
            self.env["VC_ALLOW_ROOT"] = "1"
        self.procs = {}

    def run(self, name, *args, env=None, conf=None, unset=()):
        """The daemon once, to its exit (--health, or a refusal)."""
        env = {k: v for k, v in dict(self.env, **(env or {})).items() if k not in unset}
        return subprocess.run([os.path.join(BUILD, "bin", name), "--data", self.data, "--conf", str(conf or self.conf)] +
                              list(args), capture_output=True, text=True, timeout=20, env=env)

    def start(self, name, env=None):
        log = open(self.dir / f"{name}.log", "a")
        self.procs[name] = subprocess.Popen(
            [os.path.join(BUILD, "bin", name), "--data", self.data, "--conf", str(self.conf)],
            stdout=log, stderr=subprocess.STDOUT, env=dict(self.env, **(env or {})))
        return self.procs[name]

    def health(self, name, env=None):
        return self.run(name, "--health", env=env)

    def wait_healthy(self, name, timeout=20, env=None):
        deadline = time.monotonic() + timeout
        while True:
            r = self.health(name, env=env)
            if r.returncode == 0:
                return r
            assert self.procs[name].poll() is None, f"{name} exited:\n{self.logs(name)}"
            assert time.monotonic() < deadline, f"{name} not healthy: {r.stderr}\n{self.logs(name)}"
            time.sleep(0.1)

    def logs(self, name):
        return (self.dir / f"{name}.log").read_text()

    def stop(self, name, timeout=10):
        """SIGTERM; the daemon and every process under it must be gone."""
        p = self.procs.pop(name)
        tree = descendants(p.pid)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=timeout)
        deadline = time.monotonic() + 5
        while any(alive(c) for c in tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [c for c in tree if alive(c)], f"{name} left processes behind"
        return rc

    def cleanup(self):
        for p in list(self.procs.values()):
            for c in descendants(p.pid):
                try:
                    os.kill(c, signal.SIGKILL)
                except OSError:
                    pass
            p.kill()
            p.wait()
        for name in DAEMONS:
            log = self.dir / f"{name}.log"
            if log.exists():
                for bad in ("ERROR: AddressSanitizer", "runtime error:"):
                    assert bad not in log.read_text(), log.read_text()


@pytest.fixture
def alone(tmp_path):
    os.chmod(tmp_path, 0o755)
    a = Alone(tmp_path)
    yield a
    a.cleanup()


def page(a, path="/hello.php"):
    return curl(f"http://127.0.0.1:{a.http}{path}")


def test_the_daemons_alone_serve_php_answer_health_and_stop_on_sigterm(alone):
    for name in DAEMONS:
        assert alone.health(name).returncode == 1  # nothing runs yet
    # In any order, as a pod starts its containers: the front waits for
    # the pool, everyone's events wait for the bus.
    for name in reversed(DAEMONS):
        alone.start(name)
    for name in DAEMONS:
        r = alone.wait_healthy(name)
        assert f"{name}: healthy" in r.stdout
    code, _, body = page(alone)
    assert code == 200 and b"hello" in body.lower()
    code, _, _ = curl("-k", f"https://127.0.0.1:{alone.https}/hello.php")
    assert code == 200
    # A daemon gone is unhealthy, and says why.
    assert alone.stop("vc-cache") == 0
    r = alone.health("vc-cache")
    assert r.returncode == 1 and "not healthy" in r.stderr
    for name in ("vc-front", "vc-php", "vc-bus"):
        assert alone.stop(name) == 0, alone.logs(name)


def test_a_pool_killed_and_started_again_serves_the_front_again(alone):
    """What a pod does when a container's process dies: a new one starts
    on the same volume; the front links to it by itself."""
    for name in DAEMONS:
        alone.start(name)
    for name in DAEMONS:
        alone.wait_healthy(name)
    assert page(alone)[0] == 200
    php = alone.procs.pop("vc-php")
    kids = descendants(php.pid)
    php.kill()
    php.wait()
    deadline = time.monotonic() + 5  # the workers die with their broker
    while any(alive(c) for c in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [c for c in kids if alive(c)]
    alone.start("vc-php")
    alone.wait_healthy("vc-php")
    deadline = time.monotonic() + 10
    while True:
        code, _, _ = page(alone)
        if code == 200:
            break
        assert time.monotonic() < deadline, f"no page after the pool came back: {code}"
        time.sleep(0.1)
    assert "linked to the PHP pool" in alone.logs("vc-front")


def test_endpoints_come_from_the_environment(alone):
    """VC_ENDPOINTS moves the PHP link to TCP, as the two-pod setup does."""
    port = free_port()
    env = {"VC_ENDPOINTS": f"php=tcp://127.0.0.1:{port}"}
    for name in DAEMONS:
        alone.start(name, env=env)
    for name in DAEMONS:
        alone.wait_healthy(name)
    assert page(alone)[0] == 200
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # the pool listens there
    assert not os.path.exists(os.path.join(alone.data, "run", "php", "php.sock"))


@pytest.mark.parametrize("value, why", [
    ("php", "expected NAME=URI"),
    ("nope=tcp://127.0.0.1:1", "not an endpoint of the suite"),
    ("php=http://127.0.0.1:1", "expected \"ipc://PATH\" or \"tcp://HOST:PORT\""),
])
def test_a_bad_endpoint_in_the_environment_is_refused_with_its_reason(alone, value, why):
    r = alone.run("vc-bus", env={"VC_ENDPOINTS": value})
    assert r.returncode == 1
    assert "environment VC_ENDPOINTS" in r.stderr and why in r.stderr, r.stderr


def test_a_missing_configuration_directory_is_refused(alone):
    r = alone.run("vc-bus", conf=alone.dir / "nowhere")
    assert r.returncode == 1 and "does not exist (--conf)" in r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal is of root")
def test_alone_as_root_is_refused_unless_allowed(alone):
    r = alone.run("vc-php", unset=("VC_ALLOW_ROOT",))
    assert r.returncode == 1 and "would stay root" in r.stderr, r.stderr


def test_only_the_daemons_that_serve_a_site_need_its_root(alone):
    """The bus, the cache and vc-acme do not see the application in their
    containers; the front and the pool do, and refuse a root that is not
    there, with file and line."""
    (alone.conf / "sites-enabled").mkdir()
    (alone.conf / "sites-enabled" / "app.conf").write_text('\nsite: { default = true; root = "/nowhere/public"; };\n')
    no_root = {"VC_ROOT": ""}  # else it would be the default site's root
    alone.start("vc-bus", env=no_root)
    alone.wait_healthy("vc-bus")
    for name in ("vc-front", "vc-php"):
        r = alone.run(name, env=no_root)
        assert r.returncode == 1
        assert 'app.conf:2: site "app": root "/nowhere/public" is not a directory' in r.stderr, r.stderr


KEY = "0f" * 32


def tcp_pool(alone, port, php_env=None, front_env=None):
    """The pool over TCP, as the two-pod setup runs it; each side's own
    environment added (its link key, or none)."""
    ep = {"VC_ENDPOINTS": f"php=tcp://127.0.0.1:{port}"}
    alone.start("vc-bus")
    alone.start("vc-php", env=dict(ep, **(php_env or {})))
    alone.start("vc-front", env=dict(ep, **(front_env or {})))
    for name in ("vc-bus", "vc-php", "vc-front"):
        alone.wait_healthy(name)


def wait_log(alone, name, text, timeout=10):
    deadline = time.monotonic() + timeout
    while text not in alone.logs(name):
        assert time.monotonic() < deadline, f"{name} never said {text!r}:\n{alone.logs(name)}"
        time.sleep(0.05)


def no_php_answer(alone):
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2",
                        f"http://127.0.0.1:{alone.http}/hello.php"], capture_output=True, text=True)
    return r.stdout != "200"


def test_the_tcp_link_with_the_key_on_both_sides_serves(alone):
    port = free_port()
    tcp_pool(alone, port, {"VC_LINK_KEY": KEY}, {"VC_LINK_KEY": KEY})
    assert page(alone)[0] == 200
    assert "the link key checked" in alone.logs("vc-php")
    assert "the link key checked" in alone.logs("vc-front")


@pytest.mark.parametrize("front_key, front_says", [
    (None, "it asks for the link key, and none is set"),
    ("1e" * 32, "it closed the link during the key's exchange"),
])
def test_a_front_without_the_key_is_refused(alone, front_key, front_says):
    port = free_port()
    tcp_pool(alone, port, {"VC_LINK_KEY": KEY}, {"VC_LINK_KEY": front_key} if front_key else {})
    wait_log(alone, "vc-front", front_says)
    if front_key:
        wait_log(alone, "vc-php", "it does not hold the link key (link_key)")
    assert "a front linked" not in alone.logs("vc-php")
    assert no_php_answer(alone)  # 2 s: the front tried again twenty times meanwhile
    assert alone.logs("vc-front").count(front_says) == 1  # said once, not once a try
    assert alone.logs("vc-front").count("linked to the PHP pool") <= 1
    if front_key:  # the pool too says it once in 10 s
        assert alone.logs("vc-php").count("it does not hold the link key") == 1


def test_a_client_that_proves_nothing_is_cut(alone):
    """Anything that reaches the port: a request in place of the proof is
    not run; silence is cut after 5 s."""
    port = free_port()
    tcp_pool(alone, port, {"VC_LINK_KEY": KEY}, {"VC_LINK_KEY": KEY})
    for send in (b"\x01\x00\x00\x00\x05\x00\x00\x00hello", b""):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        t0 = time.monotonic()
        if send:
            s.sendall(send)
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        s.close()
        assert b"vc-link-challenge" in got and len(got) < 200  # the challenge, and nothing else
        if not send:
            assert 4 < time.monotonic() - t0 < 9
    wait_log(alone, "vc-php", "refused a link from 127.0.0.1")
    assert page(alone)[0] == 200  # the real front is unaffected


def test_a_pool_without_the_key_gets_no_request(alone):
    """The front checks the pool too: something at the pool's address that
    cannot prove the key gets the front's proof and nothing after it."""
    import threading
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(4)
    port = lsock.getsockname()[1]
    after = []

    def impostor():
        conn, _ = lsock.accept()
        conn.settimeout(3)
        nonce = os.urandom(32)
        frames = [b"vc-link-challenge", nonce]
        conn.sendall(len(frames).to_bytes(4, "little") + b"".join(len(f).to_bytes(4, "little") + f for f in frames))
        proof = conn.recv(4096)
        frames = [b"vc-link-proof", b"\0" * 32]
        conn.sendall(len(frames).to_bytes(4, "little") + b"".join(len(f).to_bytes(4, "little") + f for f in frames))
        try:
            while True:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                after.append(chunk)
        except socket.timeout:
            pass
        after.insert(0, proof)
        conn.close()

    t = threading.Thread(target=impostor)
    t.start()
    ep = {"VC_ENDPOINTS": f"php=tcp://127.0.0.1:{port}", "VC_LINK_KEY": KEY}
    alone.start("vc-front", env=ep)
    alone.wait_healthy("vc-front")
    wait_log(alone, "vc-front", "it does not hold the link key (link_key): not our pool")
    assert no_php_answer(alone)
    t.join(10)
    lsock.close()
    assert b"vc-link-proof" in after[0]
    assert not b"".join(after[1:]), after  # no request crossed


def test_a_short_link_key_is_refused(alone):
    r = alone.run("vc-php", env={"VC_LINK_KEY": "short"})
    assert r.returncode == 1 and "link_key is 5 characters: give at least 32" in r.stderr, r.stderr


def curve_key():
    return subprocess.run([os.path.join(BUILD, "bin", "vc"), "keygen"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_zeromq_over_tcp_is_curve_and_refuses_another_key(alone):
    """Control, events and rooms over TCP, as between pods: CurveZMQ with the
    suite's key; a daemon holding another key is not let in."""
    names = ["bus-in", "bus-out", "rooms-in", "rooms-out", "cache-in"] + [f"ctl-{d}" for d in DAEMONS]
    endpoints = ",".join(f"{n}=tcp://127.0.0.1:{free_port()}" for n in names)
    key = curve_key()
    assert len(key) == 40
    env = {"VC_ENDPOINTS": endpoints, "VC_CURVE_SECRET_KEY": key}
    alone.start("vc-bus", env=env)
    alone.wait_healthy("vc-bus", env=env)  # --health over TCP, with the key
    for name in DAEMONS[1:]:
        alone.start(name, env=env)
    for name in DAEMONS[1:]:
        alone.wait_healthy(name, env=env)
    assert page(alone)[0] == 200
    assert not [f for f in os.listdir(os.path.join(alone.data, "run")) if f.endswith(".sock")]
    # The front had the bus's welcome on rooms-out before it was ready.
    assert "no welcome" not in alone.logs("vc-front")
    # A daemon with another key: its handshake fails (it expects another
    # server key).
    other = dict(env, VC_CURVE_SECRET_KEY=curve_key())
    r = alone.run("vc-bus", "--health", env=other)
    assert r.returncode == 1 and "not healthy" in r.stderr
    # A client that knows the suite's public key but holds another secret:
    # the handshake ends at the ZAP handler; a plain client gets nothing.
    import zmq
    ctl = dict(e.split("=", 1) for e in endpoints.split(","))["ctl-vc-bus"]
    ctx = zmq.Context()
    try:
        for curve in (True, False):
            s = ctx.socket(zmq.REQ)
            s.linger = 0
            if curve:
                s.curve_serverkey = zmq.curve_public(key.encode())
                s.curve_publickey, s.curve_secretkey = zmq.curve_keypair()
            s.connect(ctl)
            s.send(b"\n\x06status")  # a Command with verb "status"
            assert s.poll(2000) == 0, "a client without the key got an answer"
            s.close()
    finally:
        ctx.destroy(linger=0)  # closes what a failed assertion left open
    wait_log(alone, "vc-bus", "refused a ZeroMQ peer from 127.0.0.1: it does not hold the suite's key")


def test_zeromq_over_tcp_without_a_key_is_refused(alone):
    r = alone.run("vc-bus", env={"VC_ENDPOINTS": f"bus-in=tcp://127.0.0.1:{free_port()}"})
    assert r.returncode == 1
    assert "endpoints.bus-in is TCP: set curve_secret_key" in r.stderr, r.stderr
    r = alone.run("vc-bus", env={"VC_CURVE_SECRET_KEY": "not a key"})
    assert r.returncode == 1 and "curve_secret_key is not a CurveZMQ secret key" in r.stderr, r.stderr
