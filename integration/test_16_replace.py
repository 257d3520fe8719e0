"""Replacing a daemon under load fails no request (DESIGN.md: each daemon
can be restarted or upgraded without the others dropping anything).

`vc restart php` starts a new pool process beside the old one; the old one
tells the fronts it is leaving, hands back what it had not started, and
finishes what runs, while new requests already go to the new one."""
import os
import re
import threading
import time

import pytest
import requests

from conftest import alive, curl, wrk
from test_04_php_pool import wait_for


def php_served(s):
    """Requests the front has passed to PHP so far (its metrics)."""
    text = requests.get(f"http://127.0.0.1:{s.admin}/metrics", timeout=5).text
    return sum(int(n) for n in re.findall(r"^vc_front_php_requests_total\{[^}]*\} (\d+)", text, re.M))


def pool_pid(s, other_than=None):
    """The pool's pid once it runs (a restart may be under way: a pool
    over TCP stops before its successor starts)."""
    def running():
        r = s.vc("status", "--json")
        if r.returncode != 0:
            return None
        d = [d for d in __import__("json").loads(r.stdout)["daemons"] if d["daemon"] == "vc-php"][0]
        return int(d["pid"]) if d["state"] == "running" and int(d["pid"]) != other_than else None
    pid = wait_for(running, timeout=10)
    assert pid, s.logs()[-2000:]
    return pid


def restart_php_under_load(s, path, conns=8, restarts=3, script=None, seconds=None):
    """wrk on path while `vc restart php` runs `restarts` times, each once
    the load has reached PHP again; the pool's pid is new each time. The
    load ends once the last pool has served it too, or after `seconds`,
    long enough for every restart (under the sanitizers a fork mode pool
    serves a few dozen requests a second, and a load that ended before the
    last restart failed it as "no load reached PHP")."""
    seconds = seconds or 3 + 3 * restarts
    result = {}
    done = threading.Event()
    t = threading.Thread(target=lambda: result.update(r=wrk(s.url(path), seconds=seconds, conns=conns,
                                                               script=script, until=done)))
    before = php_served(s)
    t.start()
    pids = [pool_pid(s)]
    try:
        for i in range(restarts + 1):
            floor = php_served(s)
            assert wait_for(lambda: php_served(s) > floor + 50, timeout=5), "no load reached PHP"
            if i == restarts:
                break  # the last pool has served the load too: enough
            r = s.vc("restart", "php")
            assert r.returncode == 0, r.stdout + r.stderr
            pids.append(pool_pid(s, other_than=pids[-1]))
    finally:
        done.set()
        t.join()
    total, (connect, read, write, timeout), non2xx = result["r"]
    assert len(set(pids)) == restarts + 1, pids
    assert total > 200 and php_served(s) - before >= total, (total, php_served(s) - before)
    assert (connect, read, write, timeout, non2xx) == (0, 0, 0, 0, 0), (result, s.logs()[-3000:])
    assert "went away with" not in s.logs()
    return pids


@pytest.mark.parametrize("mode", ["classic", "fork"])
def test_restart_php_under_load_fails_nothing(make_suite, mode):
    s = make_suite(args=["--workers", "3", "--mode", mode]).start()
    pids = restart_php_under_load(s, "/hello.php")
    # The old pools are gone, and the new one answers its control socket.
    assert wait_for(lambda: not any(alive(p) for p in pids[:-1]), timeout=10)
    php = [d for d in s.status()["daemons"] if d["daemon"] == "vc-php"][0]
    assert php["healthy"] and php["status"]["pid"] == str(pids[-1]), php
    def replaced(events):
        return [e["fields"]["pid"] for e in events if e["fields"]["daemon"] == "vc-php"]
    got = replaced(s.events_of("vc.daemon.replaced", lambda e: len(replaced(e)) >= len(pids) - 1))
    assert got == [str(p) for p in pids[1:]]


def test_restart_php_under_post_load_runs_each_post_once(make_suite, tmp_path):
    """A POST is never run twice: what the old pool had not started goes to
    the new one, what it started it finishes."""
    lua = tmp_path / "post.lua"
    lua.write_text('wrk.method = "POST"\nwrk.body = "a=1&b=2"\n'
                   'wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"\n')
    s = make_suite(args=["--workers", "2"]).start()
    restart_php_under_load(s, "/echo.php", script=str(lua), restarts=2)


def test_new_requests_do_not_wait_for_the_old_pools_slow_one(make_suite):
    """While the old pool finishes a 3 s request, the new one serves."""
    s = make_suite(args=["--workers", "2"]).start()
    slow = {}
    t = threading.Thread(target=lambda: slow.update(r=curl(s.url("/sleep.php?ms=3000"), timeout=20)))
    t.start()
    assert wait_for(lambda: any("/sleep.php" in w.get("uri", "")
                                for d in s.status()["daemons"] for w in d.get("workers", [])), timeout=5)
    old = pool_pid(s)
    t0 = time.monotonic()
    assert s.vc("restart", "php").returncode == 0
    assert pool_pid(s) != old
    served = []
    for _ in range(20):
        code, _, body = curl(s.url("/hello.php"), timeout=10)
        served.append(code)
    elapsed = time.monotonic() - t0
    t.join()
    code, _, body = slow["r"]
    assert code == 200 and body.startswith(b"slept "), slow
    assert served == [200] * 20
    # All 20 answered while the old pool still ran the slow one.
    assert elapsed < 2.5, elapsed


def test_restart_php_over_tcp_fails_nothing(make_suite, tmp_path):
    """A pool linked over TCP cannot listen twice: it stops first, and the
    front holds new requests until the new one is up."""
    from conftest import free_port
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text(f'endpoints: {{ php = "tcp://127.0.0.1:{free_port()}"; }};\n')
    s = make_suite(conf=str(conf), args=["--workers", "2"]).start()
    restart_php_under_load(s, "/hello.php", restarts=2)


def test_restart_bus_under_load_fails_nothing(suite):
    result = {}
    t = threading.Thread(target=lambda: result.update(r=wrk(suite.url("/hello.php"), seconds=5, conns=8)))
    t.start()
    old = suite.daemon_pid("vc-bus")
    for _ in range(2):
        floor = php_served(suite)
        assert wait_for(lambda: php_served(suite) > floor + 50, timeout=5)
        assert suite.vc("restart", "bus").returncode == 0
        assert wait_for(lambda: suite.vc("status").returncode == 0, timeout=5)
    t.join()
    total, errors, non2xx = result["r"]
    assert suite.daemon_pid("vc-bus") != old
    assert total > 200 and errors == [0, 0, 0, 0] and non2xx == 0, result


def test_a_slow_successor_does_not_hold_up_the_supervisor(make_suite, tmp_path):
    """While a new pool boots (3 s here), the supervisor goes on answering,
    and `vc restart` returns once the new one serves."""
    from test_04_php_pool import APP, PUBLIC
    script = tmp_path / "worker.php"
    script.write_text("<?php\n"
                      f"if (file_exists({str(tmp_path / 'slow')!r})) usleep(3000000);\n"
                      f"require {os.path.join(APP, 'app.php')!r};\n"
                      "return static fn () => app_handle();\n")
    s = make_suite(root=PUBLIC, args=["--mode", "worker", "--worker-script", str(script), "--workers", "2"]).start()
    old = pool_pid(s)
    (tmp_path / "slow").write_text("")
    done = {}

    def restart():
        done["r"] = s.vc("restart", "php", timeout=60)
        done["t"] = time.monotonic()
    t0 = time.monotonic()
    t = threading.Thread(target=restart)
    t.start()
    waits = []
    while t.is_alive() and time.monotonic() - t0 < 2.5:
        a = time.monotonic()
        r = s.vc("status", "--json")
        waits.append(time.monotonic() - a)
        assert r.returncode == 0, r.stdout + r.stderr
        code, _, _ = curl(s.url("/"), timeout=5)  # the old pool still serves
        assert code == 200
    t.join()
    assert done["r"].returncode == 0, done["r"].stdout + done["r"].stderr
    assert done["t"] - t0 >= 2.5, done["t"] - t0
    assert len(waits) >= 3 and max(waits) < 1.0, waits
    assert pool_pid(s) != old
