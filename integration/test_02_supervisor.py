"""The supervisor: restarts, announcements, clean stops."""
import os
import select
import signal
import socket
import subprocess
import time

import pytest

from conftest import VC, alive, curl, descendants


@pytest.mark.parametrize("daemon", ["vc-bus", "vc-cache", "vc-php", "vc-front", "vc-acme"])
def test_killed_daemon_is_back_within_2s_and_announced(suite, daemon):
    old = suite.daemon_pid(daemon)
    os.kill(old, signal.SIGKILL)
    t0 = time.monotonic()
    new = None
    while time.monotonic() - t0 < 2.0:
        st = suite.status() if suite.vc("status").returncode == 0 else None
        if st:
            d = [x for x in st["daemons"] if x["daemon"] == daemon][0]
            if int(d["pid"]) not in (0, old) and d["state"] == "running":
                new = int(d["pid"])
                break
        time.sleep(0.05)
    assert new is not None, f"{daemon} was not back within 2 s\n{suite.logs()}"
    # The restart is on the bus (and in the journal).
    deadline = time.monotonic() + 3
    while True:
        evs = suite.events()
        restarted = [e for e in evs if e["topic"] == "vc.daemon.restarted" and e["fields"]["daemon"] == daemon]
        exited = [e for e in evs if e["topic"] == "vc.daemon.exited" and e["fields"]["daemon"] == daemon]
        if restarted and exited:
            break
        assert time.monotonic() < deadline, evs
        time.sleep(0.1)
    assert restarted[-1]["fields"]["pid"] == str(new)
    assert "signal 9" in exited[-1]["fields"]["status"]
    # And the suite serves again.
    deadline = time.monotonic() + 5
    while True:
        try:
            code, _, body = curl(suite.url("/hello.php"), timeout=5)
            if code == 200:
                break
        except AssertionError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert body == b"hello world\n"


def test_live_events_stream(suite):
    """`vc events` follows the bus live: a restart shows up as it happens."""
    p = subprocess.Popen([VC, "--data", suite.data, "events", "--json", "--for", "6", "vc.daemon."],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=suite.env)
    # It says so once the bus has linked it (the bus's welcome message).
    ready, _, _ = select.select([p.stderr], [], [], 5)
    assert ready and "following the bus" in p.stderr.readline()
    os.kill(suite.daemon_pid("vc-front"), signal.SIGKILL)
    # Read as it comes, up to the --for limit: both events, then enough.
    out = ""
    try:
        for line in p.stdout:
            out += line
            if "vc.daemon.exited" in out and "vc.daemon.restarted" in out:
                break
    finally:
        p.terminate()
        p.communicate(timeout=15)
    assert "vc.daemon.exited" in out and "vc.daemon.restarted" in out


def test_sigterm_leaves_no_process(make_suite):
    s = make_suite().start()
    tree = descendants(s.proc.pid)
    assert len(tree) >= 3 + 1 + 4  # daemons, zygote, workers
    t0 = time.monotonic()
    s.stop(timeout=5.0)  # asserts nothing is left
    assert time.monotonic() - t0 < 5.0
    assert not any(alive(p) for p in tree)


def test_background_up_and_stop(make_suite):
    s = make_suite()
    r = subprocess.run([VC, "--data", s.data, "up", "-d", "--root", s.root, "--listen", f"127.0.0.1:{s.http}",
                        "--tls-listen", f"127.0.0.1:{s.https}"], capture_output=True, text=True, timeout=30,
                       env=s.env, cwd=s.dir)
    assert r.returncode == 0, r.stderr
    try:
        assert s.vc("status", "--wait", "10").returncode == 0
        code, _, body = curl(s.url("/hello.php"))
        assert code == 200
        again = s.vc("up", "-d", "--root", s.root)
        assert again.returncode != 0 and "already runs" in again.stderr
    finally:
        r = s.vc("stop")
    assert r.returncode == 0 and "stopped" in r.stdout
    assert s.vc("status").returncode != 0


def test_64_fronts_serve_reload_and_stop(make_suite):
    """front.processes goes up to 64: the supervisor's poll set and its
    list of daemons follow the configuration (a fixed array of 12 was
    overrun at 9 fronts), through a start, a reload that replaces every
    front, and a stop."""
    s = make_suite(args=["--workers", "2"], env={"VC_FRONT_PROCESSES": "64"}).start(wait=120)
    fronts = [d for d in s.status()["daemons"] if d["daemon"].startswith("vc-front")]
    assert len(fronts) == 64 and all(d["state"] == "running" for d in fronts), fronts
    # Connections land on fronts at the kernel's choice (SO_REUSEPORT):
    # many of them reach many fronts, and every one is answered.
    for _ in range(64):
        code, _, body = curl(s.url("/hello.php"))
        assert code == 200 and body == b"hello world\n"
    before = {d["pid"] for d in fronts}
    r = s.vc("reload", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    after = [d for d in s.status()["daemons"] if d["daemon"].startswith("vc-front")]
    assert len(after) == 64 and not before & {d["pid"] for d in after}, "every front is replaced by a reload"
    code, _, body = curl(s.url("/hello.php"))
    assert code == 200
    s.stop(timeout=30)


def test_a_clean_stop_goes_newest_first_and_logs_no_error(make_suite):
    """docs/running.md: vc-acme stops first, then the fronts (they finish what they hold,
    with the pool still there), then the pool, then the cache, then the bus. Stopped
    together, every clean stop logged "lost the link to the PHP pool"."""
    s = make_suite().start()
    code, _, _ = curl(s.url("/hello.php"))
    assert code == 200
    s.stop()
    logs = s.logs()
    assert "lost the link" not in logs and "[error]" not in logs, logs
    order = [line.split(" up: ")[1].split(" ")[0] for line in logs.splitlines() if ") stopped: " in line]
    assert order == ["vc-acme", "vc-front", "vc-php", "vc-cache", "vc-bus"], order


def test_systemd_readiness_reload_and_stop(make_suite, tmp_path):
    """Under systemd (Type=notify): `vc up` says READY=1 once every daemon
    is ready, RELOADING=1 then READY=1 around `vc reload` (a refused one
    too: the old configuration serves on), and STOPPING=1; no daemon it
    starts gets NOTIFY_SOCKET. The socket here is the test's, as
    systemd's would be."""
    path = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    os.chmod(path, 0o777)
    sock.settimeout(30)
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text("\n")
    s = make_suite(conf=str(conf), env={"NOTIFY_SOCKET": path})
    s.start()

    def message():
        return dict(line.split("=", 1) for line in sock.recv(4096).decode().splitlines())
    try:
        ready = message()
        assert ready["READY"] == "1" and ready["STATUS"].startswith("serving http 127.0.0.1:"), ready
        assert s.vc("reload").returncode == 0
        assert message() == {"RELOADING": "1"}
        assert message()["READY"] == "1"
        (conf / "vc.conf").write_text("listen = 1;\n")
        assert s.vc("reload").returncode != 0
        assert message() == {"RELOADING": "1"}
        refused = message()
        assert refused["READY"] == "1" and "reload refused" in refused["STATUS"], refused
        for pid in descendants(s.proc.pid):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    assert b"NOTIFY_SOCKET=" not in f.read(), pid
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                pass  # gone, or a PHP worker of another user
    finally:
        s.stop()
    assert message() == {"STOPPING": "1"}
    sock.close()
