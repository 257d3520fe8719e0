"""vc-acme against a scripted CA (fake_acme_ca.py) for what Pebble 2.4
cannot be made to do: renewal information (RFC 9773) that moves the
renewal and an order that names the certificate it replaces; Retry-After
while an order is processing; a rate limit that is waited out and
reported; malformed JSON, a nonce refused every time, a failed challenge
and an order that expires, each leaving the certificate in service; and
kill -9 of vc-acme at each step of an order."""
import datetime
import errno
import json
import os
import signal
import socket
import subprocess
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import serialization

from acme_ca import certs, served_cert, start_with, wait_issued, write_conf
from conftest import FIXTURES
from fake_acme_ca import FakeCA, cert_id

DOCROOT = os.path.join(FIXTURES, "docroot")


def start(make_suite, tmp_path, setup=None, acme=""):
    """A suite whose one site f.test gets its certificate from a fake CA;
    setup(ca) scripts the CA before the suite starts; acme: more acme.*
    settings."""
    conf = tmp_path / "etc"
    s = make_suite(root="", conf=str(conf))
    ca = FakeCA(s.http)
    if setup:
        setup(ca)
    ca.start()
    write_conf(conf, f'directory = "{ca.directory}"; profile = "shortlived"; {acme}',
               {"f": f'hosts = ["f.test"]; root = "{DOCROOT}"; tls = "acme"; default = true;'})
    return start_with(s, ca)


@pytest.fixture
def fake_ca(make_suite, tmp_path):
    made = []

    def make(setup=None, acme=""):
        made.append(start(make_suite, tmp_path, setup, acme))
        return made[-1]
    yield make
    for s, ca in made:
        s.stop(check=False)
        ca.stop()


def serial_served(s, tmp_path, ca):
    root = tmp_path / "fake-root.pem"
    root.write_bytes(ca.root_pem())
    cert, der = served_cert(s, "f.test", str(root))
    return x509.load_der_x509_certificate(der).serial_number


def wait_served_serial(s, tmp_path, ca, serial, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if serial_served(s, tmp_path, ca) == serial:
                return
        except OSError:  # the generated certificate, before the first is served
            pass
        assert time.monotonic() < deadline, f"serial {serial:x} is not served"
        time.sleep(0.2)


def wait_failed(s, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        failed = [e["fields"] for e in s.events() if e["topic"] == "acme.cert.failed"]
        if failed:
            return failed[-1]
        assert time.monotonic() < deadline, s.logs()[-3000:]
        time.sleep(0.2)


def test_a_rate_limit_is_waited_out_and_reported(fake_ca):
    s, ca = fake_ca(lambda ca: ca.problem("new-order", 429, "rateLimited", "too many certificates for f.test",
                                          {"Retry-After": "7200"}))
    failed = wait_failed(s)
    assert failed["rate_limited"] == "yes" and "too many certificates for f.test" in failed["problem"], failed
    assert int(failed["retry_at"]) >= time.time() + 7000, failed  # Retry-After, not the minute's back-off
    c = certs(s)["f"]
    assert "rateLimited" in c["last_error"] and c["next_try"] == int(failed["retry_at"]), c
    assert "rate-limited by the CA" in s.logs()
    assert len(ca.sent("new-order")) == 1
    # The operator may insist.
    s.vc("cert", "renew", "--force", "f", check=True)
    wait_issued(s, ["f"], errors_ok=True)
    assert len(ca.sent("new-order")) == 2


def test_renewal_information_moves_the_renewal_and_the_order_replaces(fake_ca, tmp_path):
    def setup(ca):
        ca.renew_first_now = True  # the first certificate's window is now...
        ca.processing, ca.processing_retry_after = 2, 2  # ...and each order processes a while
    s, ca = fake_ca(setup)
    deadline = time.monotonic() + 60
    while len(ca.issued) < 2 or not any(e["topic"] == "acme.cert.renewed" for e in s.events()):
        assert time.monotonic() < deadline, s.logs()[-3000:]
        time.sleep(0.2)
    first, second = ca.issued[:2]
    orders = [r[3] for r in ca.sent("new-order")]
    assert "replaces" not in orders[0] and orders[1]["replaces"] == cert_id(first), orders
    assert orders[0]["profile"] == orders[1]["profile"] == "shortlived", orders  # acme.profile
    assert "the CA suggests renewing" in s.logs()
    # Polled as the CA asked: a second after finalising, then Retry-After.
    polls = [r[0] for r in ca.sent("order")]
    assert len(polls) >= 2 and polls[1] - polls[0] >= 1.9, polls
    # The second certificate's window (the last third of its life) sets its renewal.
    wait_served_serial(s, tmp_path, ca, second.serial_number)
    deadline = time.monotonic() + 10
    while not certs(s)["f"]["window_start"]:
        assert time.monotonic() < deadline, certs(s)
        time.sleep(0.2)
    c = certs(s)["f"]
    nb = second.not_valid_before.replace(tzinfo=datetime.timezone.utc).timestamp()
    na = second.not_valid_after.replace(tzinfo=datetime.timezone.utc).timestamp()
    assert abs(c["window_start"] - (nb + (na - nb) * 2 / 3)) <= 1 and c["window_end"] == int(na) - 60, c
    assert c["window_start"] <= c["renew_at"] <= c["window_end"], c


def test_a_ca_that_says_already_replaced_is_asked_again_without_replaces(fake_ca):
    def setup(ca):
        ca.renew_first_now = True
        ca.hold("new-order", after=1)  # the renewal's newOrder
    s, ca = fake_ca(setup)
    assert ca.held.wait(60), s.logs()[-3000:]
    ca.problem("new-order", 409, "alreadyReplaced", "that certificate was replaced already")
    ca.release()
    wait_topic(s, "acme.cert.renewed", timeout=60)
    orders = [r[3] for r in ca.sent("new-order")]
    assert len(orders) == 3 and "replaces" in orders[1] and "replaces" not in orders[2], orders


def test_the_rfc_9773_certificate_identifier():
    """The RFC's own example (4.1): keyIdentifier 69:88:5B:6B:87:46:40:41:
    E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4, serial 00:87:65:43:21."""
    class Fake:
        serial_number = 0x87654321
        extensions = x509.Extensions([x509.Extension(
            x509.AuthorityKeyIdentifier.oid, False,
            x509.AuthorityKeyIdentifier(bytes.fromhex("69885B6B87464041E1B37B847BA0AE2CDE01C8D4"), None, None))])
    assert cert_id(Fake) == "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"


FAULTS = {
    "malformed JSON": (lambda ca: ca.fault("new-order", 201, '{"status": "pending", "identifiers": [',
                                           {"Location": ca.base + "/order/9"}), "answered JSON that does not parse"),
    "a nonce refused every time": (lambda ca: ca.problem("new-order", 400, "badNonce", "stale", times=10),
                                   "badNonce"),
    "a failed challenge": (lambda ca: setattr(ca, "fail_challenge", True), "unauthorized: the key authorisation"),
    "an expired order": (lambda ca: setattr(ca, "expire_order", True),
                         "the order is invalid after finalisation: urn:ietf:params:acme:error:malformed: "
                         "the order expired"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_failed_renewal_leaves_the_certificate_in_service(fake_ca, tmp_path, fault):
    s, ca = fake_ca()
    before = wait_issued(s, ["f"])["f"]
    serial = ca.issued[0].serial_number
    wait_served_serial(s, tmp_path, ca, serial)
    orders = len(ca.sent("new-order"))
    breaks, why = FAULTS[fault]
    breaks(ca)
    s.vc("cert", "renew", "--force", "f", check=True)
    failed = wait_failed(s)
    assert why in failed["error"], failed
    c = certs(s)["f"]
    assert why in c["last_error"] and c["not_after"] == before["not_after"], c
    assert c["next_try"] >= time.time() + 30, c  # backs off
    assert serial_served(s, tmp_path, ca) == serial
    if fault == "a nonce refused every time":  # tried again with each new nonce, three times, then given up
        assert len(ca.sent("new-order")) == orders + 4


def test_a_ca_that_does_not_answer_in_time_is_a_failed_order(fake_ca, tmp_path):
    """A CA that holds a request past acme.ca_timeout (2 s here; 30 s by
    default): the order fails with that reason and backs off, and the
    certificate in service stays."""
    s, ca = fake_ca(acme='ca_timeout = "2s";')
    before = wait_issued(s, ["f"])["f"]
    serial = ca.issued[0].serial_number
    wait_served_serial(s, tmp_path, ca, serial)
    ca.hold("new-order")
    try:
        t0 = time.monotonic()
        s.vc("cert", "renew", "--force", "f", check=True)
        failed = wait_failed(s)
        waited = time.monotonic() - t0
    finally:
        ca.release()
    assert "new-order: Operation timed out after 2" in failed["error"] and waited < 10, (failed, waited)
    c = certs(s)["f"]
    assert c["not_after"] == before["not_after"] and c["next_try"] >= time.time() + 30, c
    assert serial_served(s, tmp_path, ca) == serial


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
@pytest.mark.parametrize("room", ["none", "the key only"])
def test_a_full_disk_mid_write_leaves_the_certificate_in_service(fake_ca, tmp_path, room):
    """DATA/tls/acme on a full filesystem (a 64 KiB tmpfs, filled, or with
    one page left, where the new key fits and its chain does not): the
    order fails with the reason, nothing half-written is left, and the
    pair in service stays, key and chain."""
    s, ca = fake_ca()
    before = wait_issued(s, ["f"])["f"]
    serial = ca.issued[0].serial_number
    wait_served_serial(s, tmp_path, ca, serial)
    acme_dir = os.path.join(s.data, "tls", "acme")
    kept = {n: open(os.path.join(acme_dir, n), "rb").read() for n in ("f.key", "f.crt")}
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", acme_dir], check=True)
    try:
        for name, data in kept.items():
            with open(os.path.join(acme_dir, name), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(acme_dir, name), 0o600)
        with open(os.path.join(acme_dir, "filler"), "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"x" * 4096)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
            if room == "the key only":
                f.truncate(f.tell() - 4096)
        s.vc("cert", "renew", "--force", "f", check=True)
        failed = wait_failed(s)
        file = "f.key" if room == "none" else "f.crt"
        assert f'{file}" could not be written: No space left on device' in failed["error"], failed
        assert "No space left on device" in s.logs()
        assert sorted(os.listdir(acme_dir)) == ["f.crt", "f.key", "filler"]
        for name, data in kept.items():
            assert open(os.path.join(acme_dir, name), "rb").read() == data, name
        c = certs(s)["f"]
        assert c["not_after"] == before["not_after"] and c["next_try"] >= time.time() + 30, c
        assert serial_served(s, tmp_path, ca) == serial
    finally:
        subprocess.run(["umount", acme_dir], check=True)


KILL_AT = ["new-order", "authz", "challenge", "finalize", "order", "cert"]


@pytest.mark.parametrize("step", KILL_AT)
def test_kill_9_at_each_step_of_an_order(fake_ca, tmp_path, step):
    """The renewal the CA's window asks for is held at step while vc-acme
    is killed; the supervisor's new vc-acme orders again from the start,
    and the certificate in service is served throughout."""
    def setup(ca):
        ca.renew_first_now = True
        ca.processing = 1  # one poll of the order, for step "order"
        ca.hold(step, after=1)
    s, ca = fake_ca(setup)
    assert ca.held.wait(60), s.logs()[-3000:]
    first = ca.issued[0].serial_number
    wait_served_serial(s, tmp_path, ca, first)
    pid = s.daemon_pid("vc-acme")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while acme_pid(s) in (pid, None):  # the supervisor starts another
        assert time.monotonic() < deadline, s.logs()[-3000:]
        time.sleep(0.1)
    assert serial_served(s, tmp_path, ca) == first
    ca.release()
    wait_topic(s, "acme.cert.renewed", timeout=60)
    with open(os.path.join(s.data, "tls", "acme", "f.crt"), "rb") as f:
        installed = x509.load_pem_x509_certificate(f.read()).serial_number
    assert installed != first and installed in [c.serial_number for c in ca.issued]
    wait_served_serial(s, tmp_path, ca, installed)
    c = certs(s)["f"]
    assert c["last_error"] == "" and c["not_after"] > 0, c


def acme_pid(s):
    """vc-acme's pid while it runs, else None (vc status fails meanwhile)."""
    r = s.vc("status", "--json")
    try:
        d = {d["daemon"]: d for d in json.loads(r.stdout)["daemons"]}["vc-acme"]
    except (ValueError, KeyError):
        return None
    return int(d["pid"]) if d["state"] == "running" else None


def test_a_key_and_certificate_that_disagree_are_ordered_again(fake_ca, tmp_path):
    """What a kill between the two writes of an install leaves: a new key
    beside the old certificate. The front keeps the pair it serves; the
    next vc-acme orders again."""
    s, ca = fake_ca()
    wait_issued(s, ["f"])
    first = ca.issued[0].serial_number
    wait_served_serial(s, tmp_path, ca, first)
    key = os.path.join(s.data, "tls", "acme", "f.key")
    with open(key, "wb") as f:
        f.write(ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    r = s.vc("restart", "acme", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    deadline = time.monotonic() + 60
    while len(ca.issued) < 2:
        assert serial_served(s, tmp_path, ca) == first
        assert time.monotonic() < deadline, s.logs()[-3000:]
        time.sleep(0.2)
    assert "its key and certificate do not agree" in s.logs()
    wait_served_serial(s, tmp_path, ca, ca.issued[1].serial_number)


def test_issue_skips_the_back_off_and_revoke_replaces_the_certificate(fake_ca, tmp_path):
    s, ca = fake_ca(lambda ca: ca.problem("new-order", 503, "serverInternal", "down for maintenance",
                                          {"Retry-After": "3600"}))
    failed = wait_failed(s)
    assert failed["rate_limited"] == "no" and int(failed["retry_at"]) >= time.time() + 3500, failed
    r = s.vc("cert", "issue", "f.test")
    assert r.returncode == 0 and "ordered next" in r.stdout, r.stdout + r.stderr
    wait_issued(s, ["f"], errors_ok=True)
    first = ca.issued[0].serial_number
    wait_served_serial(s, tmp_path, ca, first)
    r = s.vc("cert", "issue", "f.test")  # it has one now
    assert r.returncode == 1 and "has a certificate until" in r.stderr, r.stdout + r.stderr
    r = s.vc("cert", "revoke", "--reason", "7", "f.test")
    assert r.returncode == 1 and "CRL reason code" in r.stderr, r.stdout + r.stderr
    r = s.vc("cert", "revoke", "--reason", "4", "f.test")
    assert r.returncode == 0 and "will be revoked next" in r.stdout, r.stdout + r.stderr
    deadline = time.monotonic() + 30
    while len(ca.issued) < 2:
        assert time.monotonic() < deadline, s.logs()[-3000:]
        time.sleep(0.2)
    assert ca.revoked == [(first, 4)]
    wait_served_serial(s, tmp_path, ca, ca.issued[1].serial_number)
    assert "replaces" not in ca.sent("new-order")[-1][3]  # a revoked certificate is not replaced, it is gone
    topics = wait_topic(s, "acme.cert.renewed")
    assert topics.index("acme.cert.revoked") < topics.index("acme.cert.renewed"), topics


def wait_topic(s, topic, timeout=10):
    """The topics of the events so far, once one of them is topic."""
    deadline = time.monotonic() + timeout
    while True:
        topics = [e["topic"] for e in s.events()]
        if topic in topics:
            return topics
        assert time.monotonic() < deadline, (topic, topics)
        time.sleep(0.1)


def test_a_ca_that_fails_falls_back_to_the_next_and_a_site_may_name_its_own(make_suite, tmp_path):
    """acme.directory is down: site g gets its certificate from the CA in
    acme.fallback, and asks that CA, not the first, for its renewal
    window; site f names its own CA (acme_directory)."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    down = f"http://127.0.0.1:{closed.getsockname()[1]}/dir"
    closed.close()
    conf = tmp_path / "etc"
    s = make_suite(root="", conf=str(conf))
    ca = FakeCA(s.http).start()
    write_conf(conf, f'directory = "{down}"; fallback = ["{ca.directory}"];', {
        "f": f'hosts = ["f.test"]; root = "{DOCROOT}"; tls = "acme"; acme_directory = "{ca.directory}";',
        "g": f'hosts = ["g.test"]; root = "{DOCROOT}"; tls = "acme"; default = true;'})
    try:
        s.start()
        wait_issued(s, ["f", "g"])
        assert len(ca.issued) == 2
        assert f'"g": GET {down}' in s.logs() and f"trying the next CA, {ca.directory}" in s.logs()
        assert f'"f": GET {down}' not in s.logs()
        deadline = time.monotonic() + 10
        while len(ca.sent("renewal-info")) < 2:  # each certificate's window, from the CA that issued it
            assert time.monotonic() < deadline, s.logs()[-3000:]
            time.sleep(0.2)
    finally:
        s.stop(check=False)
        ca.stop()
