"""Trust boundaries inside the machine (docs/SECURITY.md, "Who may speak
to what"): a local user, or one site's PHP, reaches neither the bus nor
another site's secrets. Each test speaks as another local user through
runuser, as an attacker with an account or a site would."""
import os
import stat
import subprocess
import time

import pytest

from conftest import Suite

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trust_peer.py")


def need_root():
    if os.geteuid() != 0:
        pytest.skip("other local users exist to the test only when it runs as root")


def as_user(user, *args):
    """trust_peer.py as user (None: as the test itself)."""
    cmd = ["/usr/bin/python3", PEER, *args]
    if user:
        cmd = ["runuser", "-u", user, "--"] + cmd
    subprocess.run(cmd, check=True, timeout=20)


def bus_status(s):
    for d in s.status()["daemons"]:
        if d["daemon"] == "vc-bus":
            return d["status"]
    raise KeyError("vc-bus")


def wait_for(what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def walled(tmp_path):
    """The suite as an installation runs it: daemons as vc, PHP as www-data."""
    need_root()
    s = Suite(as_root=False).start()
    yield s
    s.stop()
    s.cleanup()


def marks(s, topic):
    return [e["fields"].get("mark") for e in s.events() if e["topic"] == topic and "mark" in e.get("fields", {})]


def test_bus_believes_a_sender_only_as_far_as_it_is_trusted(walled):
    s = walled
    ep = f"ipc://{s.data}/run/bus-in.sock"
    # An unrelated local user: neither a command-like event nor a pool's fact.
    as_user("nobody", "event", ep, "tls.on_demand.wanted", "vc-front", "stranger-acme")
    as_user("nobody", "event", ep, "php.worker.exited", "vc-php", "stranger-php")
    # The pool's user (its PHP): its own pool's facts, nothing else.
    as_user("www-data", "event", ep, "php.worker.exited", "vc-php", "pool-own")
    as_user("www-data", "event", ep, "cache.purged", "vc-cache", "pool-lie")
    as_user("www-data", "event", ep, "php.worker.exited", "vc-php.other", "pool-other")
    # Root's, last: once it is in, every earlier one was read.
    as_user(None, "event", ep, "test.trust.marker", "vc", "root")
    wait_for(lambda: marks(s, "test.trust.marker") == ["root"])
    assert marks(s, "php.worker.exited") == ["pool-own"]
    assert marks(s, "tls.on_demand.wanted") == [] and marks(s, "cache.purged") == []
    assert int(bus_status(s)["refused"]) == 4
    assert "refused an event \"tls.on_demand.wanted\" from uid" in s.logs()


def test_only_the_fronts_send_room_messages(walled):
    s = walled
    sock = f"{s.data}/run/rooms-in.sock"
    mode = os.stat(sock).st_mode
    assert not mode & (stat.S_IWOTH | stat.S_IWGRP), oct(mode)
    before = int(bus_status(s)["room_messages"])
    as_user("nobody", "room", f"ipc://{sock}", "app1:private-orders", "forged", '{"x":1}')
    as_user("www-data", "room", f"ipc://{sock}", "app1:private-orders", "forged", '{"x":2}')
    as_user(None, "room", f"ipc://{sock}", "app1:marker", "marker", '{"x":3}')
    wait_for(lambda: int(bus_status(s)["room_messages"]) > before)
    assert int(bus_status(s)["room_messages"]) == before + 1


@pytest.mark.parametrize("host, refused", [("10.1.2.3", True), ("php.internal", True), ("*", True),
                                           ("127.0.0.1", False), ("[::1]", False)])
def test_a_tcp_link_without_key_is_refused_off_loopback(make_suite, tmp_path, host, refused):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text(f'\nendpoints: {{\n  php = "tcp://{host}:7001";\n}};\n')
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    where = f"{conf}/vc.conf:3: endpoints.php is \"tcp://{host}:7001\" without link_key"
    if refused:
        assert r.returncode == 1 and where in r.stderr and "any host that reaches the port" in r.stderr, r.stderr
    else:
        assert r.returncode == 0 and f"warning: {where}" in r.stderr and "every local user" in r.stderr, r.stderr
    # With the key, neither.
    (conf / "vc.conf").write_text(f'link_key = "{"k" * 32}";\nendpoints: {{ php = "tcp://{host}:7001"; }};\n')
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode == 0 and "link_key" not in r.stderr, r.stderr


def test_a_tcp_link_from_the_environment_names_the_variable(make_suite, tmp_path):
    s = make_suite(root="", env={"VC_ENDPOINTS": "php=tcp://10.9.9.9:7001"})
    r = s.vc("configtest")
    assert r.returncode == 1 and "environment VC_ENDPOINTS: endpoints.php is" in r.stderr, r.stderr
