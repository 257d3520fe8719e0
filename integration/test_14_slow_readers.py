"""Clients that do not read (docs/SECURITY.md, "Slow readers"): what the
front holds for one answer is bounded by front.response_buffer, then a
temporary file up to front.response_temp_max, then the worker waits; the
front's memory stays bounded and every answer still arrives whole."""
import hashlib
import os
import re
import socket
import subprocess

import requests

from conftest import free_port
from test_04_php_pool import php_status, rss_kib, wait_for

MIB = 1024 * 1024
# Under the sanitizers (VC_SANITIZED=1, ops/test.sh) freed memory waits in
# ASan's 32 MiB quarantine and shadow memory adds an eighth: bounds get that
# much slack, not a factor (a factor would swallow what they check).
RSS_SLACK_KIB = 40 * 1024 if os.environ.get("VC_SANITIZED") else 0


def pattern_sha(mb):
    """What integration/fixtures/docroot/pattern.php?mb=N sends."""
    h = hashlib.sha256()
    for i in range(mb):
        h.update((b"%07d\n" % i) * 131072)
    return h.hexdigest()


def stalled(port, path):
    """Asks for path on a socket with a small receive buffer and reads only
    the head: the rest waits in the front."""
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    c.settimeout(30)
    c.connect(("127.0.0.1", port))
    # HTTP/1.0: the body ends with the connection, not in chunks.
    c.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = c.recv(1)
        assert chunk, "the connection closed before the head"
        head += chunk
    assert re.match(rb"HTTP/1\.\d 200 ", head), head
    return c


def drain(c):
    """Reads the rest of the answer; returns (bytes, sha256)."""
    h, n = hashlib.sha256(), 0
    while True:
        try:
            chunk = c.recv(1 << 20)
        except ConnectionResetError:
            break
        if not chunk:
            break
        h.update(chunk)
        n += len(chunk)
    c.close()
    return n, h.hexdigest()


def metric(s, name):
    text = requests.get(f"http://127.0.0.1:{s.admin}/metrics", timeout=5).text
    return sum(int(v) for v in re.findall(rf"^{name}\{{[^}}]*\}} (\d+)$", text, re.M))


def temp_files(pid):
    """Sizes of the answers' temporary files the process holds open."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if "/temp/" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                out.append(os.stat(f"/proc/{pid}/fd/{fd}").st_size)
        except OSError:
            pass
    return out


def conf_suite(make_suite, tmp_path, text, **kw):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text(text)
    return make_suite(conf=str(conf), **kw).start()


def warm_front(s):
    """The front's pid and its RSS once a 4 MiB answer has warmed its
    buffers (growth is counted from there)."""
    front = s.daemon_pid("vc-front")
    requests.get(s.url("/pattern.php?mb=4"), timeout=10)
    return front, rss_kib(front)


def assert_grew_less(front, before, limit_kib, what):
    grew = rss_kib(front) - before
    assert grew < limit_kib + RSS_SLACK_KIB, f"the front grew by {grew} KiB for {what}"


def test_answers_nobody_reads_go_to_a_file_and_free_the_worker(make_suite, tmp_path):
    """Two clients ask for 96 MiB and read nothing: the front takes 4 MiB
    of each in memory (front.response_buffer), the rest in temporary files;
    both workers are idle again, the front's memory grew by much less than
    the 192 MiB it was sent, and each answer arrives whole once read."""
    s = conf_suite(make_suite, tmp_path, "php: { workers = 2; };\n")
    front, before = warm_front(s)
    clients = [stalled(s.http, "/pattern.php?mb=96") for _ in range(2)]
    try:
        assert wait_for(lambda: sum(temp_files(front)) >= 2 * 80 * MIB, timeout=30), temp_files(front)
        assert wait_for(lambda: all(w["state"] == "idle" for w in php_status(s)["workers"]), timeout=10)
        assert_grew_less(front, before, 40 * 1024, "two unread answers")
        assert metric(s, "vc_front_answers_spilled_total") == 2
        # Other clients are served meanwhile.
        assert requests.get(s.url("/hello.php"), timeout=5).status_code == 200
    finally:
        got = [drain(c) for c in clients]
    want = pattern_sha(96)
    assert all(n == 96 * MIB and sha == want for n, sha in got), got
    assert wait_for(lambda: temp_files(front) == [])  # closed with their answers


def test_past_the_temp_limit_the_worker_waits_for_the_client(make_suite, tmp_path):
    """With the file capped at 8 MiB, a 64 MiB answer nobody reads keeps
    its worker busy in its write: the front holds about 1 + 8 MiB, no more,
    and reads the worker again as the client catches up."""
    s = conf_suite(make_suite, tmp_path,
                   'php: { workers = 1; };\nfront: { response_buffer = "1M"; response_temp_max = "8M"; };\n')
    front, before = warm_front(s)
    c = stalled(s.http, "/pattern.php?mb=64")
    try:
        assert wait_for(lambda: metric(s, "vc_front_answers_throttled_total") == 1, timeout=20)
        assert sum(temp_files(front)) <= 8 * MIB + 256 * 1024, temp_files(front)
        assert php_status(s)["workers"][0]["state"] == "busy"
        assert_grew_less(front, before, 24 * 1024, "one unread answer")
    finally:
        n, sha = drain(c)
    assert (n, sha) == (64 * MIB, pattern_sha(64))
    assert wait_for(lambda: php_status(s)["workers"][0]["state"] == "idle")
    assert requests.get(s.url("/hello.php"), timeout=5).status_code == 200


def test_with_no_temp_file_the_worker_waits_at_the_memory_bound(make_suite, tmp_path):
    s = conf_suite(make_suite, tmp_path,
                   'php: { workers = 1; };\nfront: { response_buffer = "1M"; response_temp_max = 0; };\n')
    front, before = warm_front(s)
    c = stalled(s.http, "/pattern.php?mb=48")
    try:
        assert wait_for(lambda: metric(s, "vc_front_answers_throttled_total") == 1, timeout=20)
        assert temp_files(front) == [] and metric(s, "vc_front_answers_spilled_total") == 0
        assert_grew_less(front, before, 16 * 1024, "one unread answer")
    finally:
        n, sha = drain(c)
    assert (n, sha) == (48 * MIB, pattern_sha(48))


def test_a_slow_http2_client_over_tls_gets_a_spilled_answer_whole(make_suite, tmp_path):
    """The file path under HTTP/2 and TLS, read slowly by curl."""
    s = conf_suite(make_suite, tmp_path, 'front: { response_buffer = "1M"; };\n')
    r = subprocess.run(["curl", "-sk", "--http2", "--limit-rate", "24M", "-o", "-", "-w", "%{http_version}",
                        s.surl("/pattern.php?mb=48")], capture_output=True, timeout=60)
    body, version = r.stdout[:-1], r.stdout[-1:]
    assert version == b"2" and len(body) == 48 * MIB, (version, len(body))
    assert hashlib.sha256(body).hexdigest() == pattern_sha(48)
    assert metric(s, "vc_front_answers_spilled_total") == 1


def test_a_relayed_answer_too_far_behind_is_cut_not_held(make_suite, tmp_path):
    """Over TCP the broker relays every answer on one link, which cannot
    wait for one client: past both bounds that client's answer is cut, and
    everyone else's goes on."""
    port = free_port()
    s = conf_suite(make_suite, tmp_path,
                   f'endpoints: {{ php = "tcp://127.0.0.1:{port}"; }};\n'
                   'front: { response_buffer = "1M"; response_temp_max = "4M"; };\n')
    c = stalled(s.http, "/pattern.php?mb=64")
    try:
        assert wait_for(lambda: metric(s, "vc_front_answers_cut_total") == 1, timeout=20)
        assert requests.get(s.url("/hello.php"), timeout=5).status_code == 200
    finally:
        n, _ = drain(c)
    assert n < 64 * MIB
    assert "cutting the answer to /pattern.php" in s.logs()
