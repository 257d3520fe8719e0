"""HTTP/2 abuse, with python3-h2 crafting the frames."""
import os
import re
import socket
import sys
import threading
import time

import pytest
import requests

from conftest import latencies, p99

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "hardening"))
from rapid_reset import attack  # noqa: E402
import made_you_reset  # noqa: E402


ATTACKER = "127.0.0.2"


def php_accepted(s):
    php = [d for d in s.status()["daemons"] if d["daemon"] == "vc-php"][0]
    return int(php["status"]["accepted"])


def test_rapid_reset_reaches_php_a_bounded_number_of_times(suite):
    before = php_accepted(suite)
    sent = attack(suite.http, 100000)
    # The connection is cut once it has cancelled 100 PHP requests.
    assert sent < 100000
    reached = php_accepted(suite) - before
    assert reached <= 300, reached
    assert "cancelled 100 PHP requests" in suite.logs()


def test_made_you_reset_reaches_php_a_bounded_number_of_times(suite):
    """Streams the server resets itself (a zero WINDOW_UPDATE after each
    request) are charged to the same budget as the client's resets."""
    before = php_accepted(suite)
    sent = made_you_reset.attack(suite.http, 100000)
    assert sent < 100000
    reached = php_accepted(suite) - before
    assert reached <= 300, reached
    assert "cancelled 100 PHP requests" in suite.logs()


def sink():
    """A port that reads and drops everything: the attacker's own CPU cost
    without a server behind it, for a fair baseline on a small machine."""
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=lambda: [None for _ in iter(lambda: c.recv(65536), b"")], daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return srv


def _attack_until(attack, port, stop, rounds):
    # From another address than the client's, as a real attacker is: bans
    # (front.ban_time) are per address.
    while not stop.is_set():
        attack(port, 2000, source=ATTACKER)
        with rounds.get_lock():
            rounds.value += 1


def latencies_under(s, port, attack=attack):
    """The client's latencies while the attack runs in its own process (so
    it does not share the client's interpreter lock); and how many times
    the attacker connected."""
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    stop, rounds = ctx.Event(), ctx.Value("i", 0)
    p = ctx.Process(target=_attack_until, args=(attack, port, stop, rounds))
    p.start()
    # Measured once the attack runs, not while its first connection's
    # budget of requests (CONN_RESET_BUDGET) is still reaching PHP.
    time.sleep(0.5)
    try:
        # 200 samples, so that the p99 is not simply the slowest request
        # (with 60 it is: one scheduling hiccup under the sanitizers, seen
        # at 0.22 s, decided it).
        return latencies(s, 200), rounds.value
    finally:
        stop.set()
        p.join(10)
        if p.is_alive():
            p.kill()
            p.join()


def assert_latency_holds(suite, attack):
    srv = sink()
    try:
        base, _ = latencies_under(suite, srv.getsockname()[1], attack)
    finally:
        srv.close()
    during, rounds = latencies_under(suite, suite.http, attack)
    assert rounds >= 2  # the attacker reconnected (and was banned)
    # Within 2x of the p99 the client sees while the attacker spends the
    # same CPU on a sink (and a floor: loopback p99s of a few milliseconds
    # are noise-sized on a shared machine).
    assert p99(during) <= max(2 * p99(base), p99(base) + 0.02), (p99(base), p99(during))


# A p99 against a p99 measured a moment before: other suites running
# beside it move both (one did, by a first request of 38 ms in CI): these
# two run in the pass that runs alone.
@pytest.mark.alone
def test_well_behaved_client_keeps_its_latency_under_rapid_reset(suite):
    assert_latency_holds(suite, attack)


@pytest.mark.alone
def test_well_behaved_client_keeps_its_latency_under_made_you_reset(suite):
    assert_latency_holds(suite, made_you_reset.attack)


def banned_total(s):
    metrics = requests.get(f"http://127.0.0.1:{s.admin}/metrics").text
    return int(re.search(r'vc_front_connections_banned_total\{front="vc-front"\} (\d+)', metrics).group(1))


def test_an_address_cut_twice_is_refused(make_suite, tmp_path):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text('front: { ban_time = "3s"; };\n')
    s = make_suite(conf=str(conf)).start()
    for _ in range(2):
        made_you_reset.attack(s.http, 2000, source=ATTACKER)
    assert wait_logged(s, "refusing 127.0.0.2 for 3 s")
    before = banned_total(s)
    banned = socket.create_connection(("127.0.0.1", s.http), source_address=(ATTACKER, 0))
    banned.settimeout(2)
    try:
        banned.sendall(b"GET /hello.php HTTP/1.1\r\nHost: x\r\n\r\n")
        assert banned.recv(100) == b""  # closed unanswered
    except ConnectionResetError:
        pass
    banned.close()
    assert banned_total(s) == before + 1
    # Others are served meanwhile; the address is served again after it.
    assert requests.get(s.url("/hello.php"), timeout=5).status_code == 200
    time.sleep(3.2)
    again = socket.create_connection(("127.0.0.1", s.http), source_address=(ATTACKER, 0))
    again.sendall(b"GET /hello.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    again.settimeout(5)
    assert again.recv(100).startswith(b"HTTP/1.1 200")
    again.close()
    events = s.events_of("front.client.banned")
    assert events and events[0]["fields"]["address"] == ATTACKER


def wait_logged(s, text, timeout=5):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in s.logs():
            return True
        time.sleep(0.05)
    return False
