"""Connections lent to workers (docs/php.md, "Lent connections"): with
php.lend_connections = 1, an idle lent worker gets a plaintext HTTP/1.1
connection with its first PHP request and serves the next requests for
the same script itself, answering byte for byte as the front; it hands
the connection back for anything else (a static file, an Upgrade,
another script), when the front wants the worker, after a slow reader,
at its recycle, and the front takes the connection back as if just
accepted. In every case no request is lost or answered twice."""
import http.client
import os
import re
import signal
import socket
import time

import pytest
import requests

from conftest import FIXTURES
from mesh import wait_until

LEASE_PHP = r"""<?php
$q = $_GET;
if (isset($q['mark'])) { touch($q['mark']); }
if (isset($q['sleep'])) { usleep((int)$q['sleep'] * 1000); }
if (isset($q['status'])) { http_response_code((int)$q['status']); }
if (isset($q['big'])) { echo str_repeat('b', (int)$q['big']); exit; }
if (isset($q['stream'])) {
    while (ob_get_level()) { ob_end_flush(); }
    for ($i = 0; $i < 3; $i++) { echo "part $i\n"; flush(); usleep(20000); }
    exit;
}
if (isset($q['pid'])) { echo getmypid(), "\n"; exit; }
header('X-Lease: yes');
echo $_SERVER['REQUEST_METHOD'], ' ', $_SERVER['REQUEST_URI'], ' [', $_SERVER['QUERY_STRING'], '] ',
     $_SERVER['SERVER_PROTOCOL'], "\n";
foreach (['HTTP_HOST', 'HTTP_X_A', 'HTTP_X_FORWARDED_FOR', 'CONTENT_LENGTH', 'CONTENT_TYPE', 'SCRIPT_NAME',
          'SCRIPT_FILENAME', 'HTTP_CONNECTION', 'HTTP_TRANSFER_ENCODING', 'HTTP_EXPECT'] as $k) {
    echo $k, '=', $_SERVER[$k] ?? '-', "\n";
}
echo 'body=', file_get_contents('php://input'), "\n";
"""


def lent_suite(make_suite, tmp_path, lend=1, php="", workers=2, more=""):
    """A site without the response cache (a site with it never lends), its
    workers lent to the front."""
    root = tmp_path / "root"  # one for both suites of a test: SCRIPT_FILENAME is in the answers
    if not root.exists():  # and its files once: a static file's date and ETag are in its answer
        root.mkdir(parents=True)
        (root / "lease.php").write_text(LEASE_PHP)
        (root / "other.php").write_text("<?php echo 'other ', $_SERVER['REQUEST_URI'], \"\\n\";\n")
        (root / "style.css").write_text(open(os.path.join(FIXTURES, "docroot", "style.css")).read())
    conf = tmp_path / ("etc%d" % lend)
    (conf / "sites-enabled").mkdir(parents=True, exist_ok=True)
    (conf / "vc.conf").write_text("php: { workers = %d; lend_connections = %d; %s };\n%s" % (workers, lend, php, more))
    (conf / "sites-enabled" / "s.conf").write_text('site: { root = "%s"; default = true; cache = false; };\n' % root)
    s = make_suite(root=str(root), conf=str(conf)).start()

    def all_lent():
        php = [d for d in s.status()["daemons"] if d["daemon"] == "vc-php"][0]
        return php["workers"] and all(w["lent"] == "yes" for w in php["workers"])
    assert wait_until(all_lent), s.logs()
    return s


def metric(s, name):
    text = requests.get("http://127.0.0.1:%d/metrics" % s.admin, timeout=5).text
    m = re.search(r"^%s(?:{[^}]*})? (\d+)" % name, text, re.M)
    assert m, text
    return int(m.group(1))


def connect(s):
    c = socket.create_connection(("127.0.0.1", s.http), timeout=10)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def read_until(c, marker, have=b"", timeout=10.0, times=1):
    """Bytes from c until marker is among them, times times (or the peer
    closed)."""
    deadline = time.monotonic() + timeout
    while have.count(marker) < times and time.monotonic() < deadline:
        c.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            b = c.recv(65536)
        except socket.timeout:
            break
        if not b:
            break
        have += b
    return have


def closed_without_a_word(c, timeout=10.0):
    """The peer closed c (an end, or a reset) before timeout, and sent
    nothing first."""
    c.settimeout(timeout)
    try:
        return c.recv(65536) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def read_to_end(c, timeout=10.0):
    return read_until(c, b"\0never\0", timeout=timeout)


def answers(raw):
    """Each HTTP/1.1 answer in raw (Content-Length or chunked framed), its
    Date masked: the only bytes two servers may differ in."""
    return re.sub(rb"\r\nDate: [^\r]*\r\n", b"\r\nDate: -\r\n", raw)


def get(path, extra=b"", version=b"1.1"):
    return b"GET " + path + b" HTTP/" + version + b"\r\nHost: t\r\n" + extra + b"\r\n"


# One connection's conversation: bytes to send, and after each, what ends
# the answers the client waits for before it sends on (or 100 Continue),
# and how many times.
END = b"Server: Velocity\r\n\r\n"  # a bodiless answer's head
CONVERSATION = [
    (get(b"/lease.php?a=1", b"X-A: 1\r\nX-Forwarded-For: 6.6.6.6\r\n"), b"body=\n"),
    (b"HEAD /lease.php HTTP/1.1\r\nHost: t\r\n\r\n", END),
    (b"POST /lease.php?p HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
     b"body=hello\n"),
    (b"POST /lease.php HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
     b"body=abcde\n"),
    (b"POST /lease.php HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n", b"100 Continue\r\n\r\n"),
    (b"wxyz", b"body=wxyz\n"),
    (get(b"/lease.php?status=404"), b"body=\n"),
    (get(b"/lease.php?status=503"), b"body=\n"),
    (get(b"/lease.php?status=204"), END),
    (get(b"/lease.php?big=70000"), b"\r\n0\r\n\r\n"),
    (get(b"/style.css"), b"}\n"),  # a static file: handed back
    (get(b"/lease.php?again"), b"body=\n"),  # lent again
    (get(b"/other.php"), b"other /other.php\n"),  # another script: handed back, lent with it
    (get(b"/lease.php?pipelined=1") + get(b"/style.css") + get(b"/lease.php?pipelined=2"), b"body=\n", 2),
]


def converse(s):
    c = connect(s)
    raw = b""
    for send, until, *times in CONVERSATION:
        c.sendall(send)
        raw += read_until(c, until, times=times[0] if times else 1)
    # Last, an Upgrade PHP answers (and the front closes the connection after).
    c.sendall(get(b"/lease.php?ws", b"Connection: Upgrade\r\nUpgrade: websocket\r\n"))
    raw += read_to_end(c)
    c.close()
    return answers(raw)


COUNTED = ("vc_front_requests_total", "vc_front_php_requests_total", "vc_front_php_errors_total")


def test_a_lent_connection_answers_byte_for_byte_as_the_front(make_suite, tmp_path):
    unlent = lent_suite(make_suite, tmp_path, lend=0)
    front = converse(unlent)
    counted = [metric(unlent, name) for name in COUNTED]
    s = lent_suite(make_suite, tmp_path, lend=1)
    lent = converse(s)
    # The front's request counters as if it had read them all (the
    # worker's records come in batches, the last as the connection ends).
    assert counted[1] >= 10 and counted[2] == 1 and wait_until(lambda: [metric(s, name) for name in COUNTED] == counted), \
        (counted, [metric(s, name) for name in COUNTED])
    assert front.count(b"HTTP/1.1 ") >= 16, front
    at = next((i for i in range(min(len(lent), len(front))) if lent[i] != front[i]), min(len(lent), len(front)))
    assert lent == front, (at, lent[max(0, at - 300):at + 200], front[max(0, at - 300):at + 200])
    # And the workers did serve them: lent at the first, after the static
    # file, after the other script; each came back, but the last, closed.
    assert metric(s, "vc_front_php_conns_lent_total") >= 3, s.logs()
    assert metric(s, "vc_front_php_conns_back_total") >= 2
    assert metric(s, "vc_front_php_conn_requests_total") >= 9
    assert b"HTTP_X_FORWARDED_FOR=-" in lent  # dropped, as the front drops it from a client it does not trust


def test_a_streamed_answer_on_a_lent_connection_is_chunked_as_the_front_chunks_it(make_suite, tmp_path):
    s = lent_suite(make_suite, tmp_path)
    with requests.Session() as sess:
        sess.headers["Accept-Encoding"] = None  # a request that may be compressed stays with the front
        assert sess.get(s.url("/lease.php?first"), timeout=10).status_code == 200
        r = sess.get(s.url("/lease.php?stream=1"), timeout=10)
        assert r.headers.get("transfer-encoding") == "chunked", r.headers
        assert r.text == "part 0\npart 1\npart 2\n"
        assert sess.get(s.url("/lease.php?after"), timeout=10).status_code == 200
    assert metric(s, "vc_front_php_conns_lent_total") >= 1


def lent_worker_pid(s, c, timeout=10.0):
    """The pid of the worker c was lent to: its first answer says it."""
    c.sendall(get(b"/lease.php?pid=1"))
    raw = read_until(c, b"\n", read_until(c, b"\r\n\r\n", timeout=timeout))
    return int(raw.split(b"\r\n\r\n", 1)[1].strip())


def test_a_request_waiting_in_the_front_takes_the_connection_back_with_a_partial_head(make_suite, tmp_path):
    # One worker: a second client's request waits in the front, which asks
    # the worker for the connection it holds. That one is mid-head.
    s = lent_suite(make_suite, tmp_path, workers=1)
    a = connect(s)
    lent_worker_pid(s, a)
    a.sendall(b"GET /lease.php?half=1 HTTP/1.1\r\nHost: t\r\n")
    b = requests.get(s.url("/lease.php?b=1"), timeout=10)
    assert b.status_code == 200 and "[b=1]" in b.text
    a.sendall(b"X-A: 2\r\n\r\n")
    got = read_until(a, b"body=\n")
    assert b"[half=1]" in got and b"HTTP_X_A=2" in got, got
    assert got.count(b"HTTP/1.1 200") == 1
    assert metric(s, "vc_front_php_conns_back_total") >= 1


def test_a_post_partly_read_is_finished_by_the_worker_before_the_connection_goes_back(make_suite, tmp_path):
    s = lent_suite(make_suite, tmp_path, workers=1)
    a = connect(s)
    lent_worker_pid(s, a)
    a.sendall(b"POST /lease.php HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n01234")
    box = {}
    import threading
    t = threading.Thread(target=lambda: box.update(r=requests.get(s.url("/lease.php?b=2"), timeout=15)))
    t.start()
    a.sendall(b"56789")
    got = read_until(a, b"body=")
    got = read_until(a, b"\n", got.split(b"body=", 1)[1] if b"body=" in got else b"")
    assert got.startswith(b"0123456789"), got
    t.join()
    assert box["r"].status_code == 200 and "[b=2]" in box["r"].text
    # The connection is the front's again, and goes on.
    a.sendall(get(b"/lease.php?c=3", b"Connection: close\r\n"))
    assert b"[c=3]" in read_to_end(a)


def test_a_slow_reader_gets_its_whole_answer_and_its_connection_goes_back(make_suite, tmp_path):
    s = lent_suite(make_suite, tmp_path)
    a = socket.socket()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    a.connect(("127.0.0.1", s.http))
    lent_worker_pid(s, a)
    lent = metric(s, "vc_front_php_conns_lent_total")
    size = 16 * 1024 * 1024  # more than the kernel buffers: the worker's writes block
    a.sendall(get(b"/lease.php?big=%d" % size))
    r = http.client.HTTPResponse(a)
    r.begin()
    assert r.status == 200 and r.read() == b"b" * size
    # At once (a connection idle for a second goes back anyway): the next
    # request finds the connection the front's, which lends it again.
    a.sendall(get(b"/lease.php?after=1", b"Connection: close\r\n"))
    assert b"[after=1]" in read_to_end(a)
    assert metric(s, "vc_front_php_conns_lent_total") == lent + 1


def waiting_for_a_request(pid):
    """The worker sleeps in poll() (its lent connections and its link),
    as it does only between requests: it holds nothing of them."""
    try:
        with open("/proc/%d/wchan" % pid) as f:
            return "poll" in f.read()
    except OSError:
        return False


def answered(c, path):
    """c is served on: a request on it gets its answer."""
    c.sendall(get(path))
    raw = read_until(c, b"\n", read_until(c, b"\r\n\r\n"))
    return raw.startswith(b"HTTP/1.1 200 ") and path.split(b"?")[1] in raw


def test_a_worker_killed_mid_request_closes_its_connection_and_mid_idle_gives_it_back(make_suite, tmp_path):
    s = lent_suite(make_suite, tmp_path)
    mark = tmp_path / "root" / "running"  # where the pool's scripts may write
    a = connect(s)
    pid = lent_worker_pid(s, a)
    a.sendall(get(b"/lease.php?sleep=10000&mark=" + str(mark).encode()))
    assert wait_until(mark.exists, timeout=10)
    os.kill(pid, signal.SIGKILL)
    assert closed_without_a_word(a)  # no answer had begun
    # Idle, the worker held nothing of the connection: the front takes it
    # back (docs/php.md, "Faults"), and its client sees nothing happen.
    b = connect(s)
    pid = lent_worker_pid(s, b)
    assert wait_until(lambda: waiting_for_a_request(pid), timeout=10)
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: metric(s, "vc_front_php_conns_rescued_total") == 1)
    assert answered(b, b"/lease.php?after=b") and answered(b, b"/lease.php?again=b")
    b.close()
    # The pool goes on, lending again.
    with requests.Session() as sess:
        for i in range(3):
            assert sess.get(s.url("/lease.php?i=%d" % i), timeout=10).status_code == 200


def test_a_request_on_a_lent_connection_is_held_to_the_pools_wall_clock(make_suite, tmp_path):
    # max_execution_time counts CPU time, so a script that sleeps is only
    # stopped by the pool, at max_execution_time + kill_grace (1 + 1 s):
    # the broker sees a lent connection's request by the worker's clock,
    # as it sees the front's by its board.
    s = lent_suite(make_suite, tmp_path, php='ini = ["max_execution_time=1"]; kill_grace = "1s";')
    a = connect(s)
    pid = lent_worker_pid(s, a)
    t0 = time.monotonic()
    a.sendall(get(b"/lease.php?sleep=30000"))
    assert closed_without_a_word(a, timeout=20)  # no answer had begun
    took = time.monotonic() - t0
    assert 1.5 < took < 8, took
    assert "worker %d ran a request on a lent connection for" % pid in s.logs()
    php = [d for d in s.status()["daemons"] if d["daemon"] == "vc-php"][0]
    assert php["status"]["killed"] == "1" and pid not in [int(w["pid"]) for w in php["workers"]]
    with requests.Session() as sess:
        assert sess.get(s.url("/lease.php?after=1"), timeout=10).status_code == 200


def test_one_worker_serves_several_lent_connections_in_turn(make_suite, tmp_path):
    # lend_connections = 4 and one worker: four connections are lent to it
    # together, and it answers each in turn, its access-log lines with
    # each connection's own client.
    s = lent_suite(make_suite, tmp_path, lend=4, workers=1)
    conns = [connect(s) for _ in range(4)]
    assert len({lent_worker_pid(s, c) for c in conns}) == 1
    # With one connection a worker, the second's request would have waited
    # for the worker, which gives the first back, and nothing is lent for
    # a second after: one lend.
    assert metric(s, "vc_front_php_conns_lent_total") == 4
    for r in range(3):
        for i, c in enumerate(conns):
            c.sendall(get(b"/lease.php?c=%d&r=%d" % (i, r), b"User-Agent: conn/%d\r\n" % i))
        for i, c in enumerate(conns):
            got = read_until(c, b"body=\n")
            assert got.count(b"HTTP/1.1 200") == 1 and b"[c=%d&r=%d]" % (i, r) in got, got
    for c in conns:
        c.close()
    assert wait_until(lambda: metric(s, "vc_front_php_conn_requests_total") == 16)
    lines = access_lines(s, 16)
    for i in range(4):
        for r in range(3):
            assert [line for line in lines if 'GET /lease.php?c=%d&r=%d HTTP/1.1" 200' % (i, r) in line and
                    '"conn/%d"' % i in line], lines


def test_a_worker_turns_to_each_of_its_connections(make_suite, tmp_path):
    # Four slow requests pipelined on one connection, then one on another
    # connection of the same worker: that one is served after the first
    # of the four, not after the fourth.
    s = lent_suite(make_suite, tmp_path, lend=2, workers=1)
    a, b = connect(s), connect(s)
    lent_worker_pid(s, a)
    lent_worker_pid(s, b)
    a.sendall(b"".join(get(b"/lease.php?sleep=300&n=%d" % i) for i in range(4)))
    t0 = time.monotonic()
    b.sendall(get(b"/lease.php?b=1"))
    assert b"[b=1]" in read_until(b, b"body=\n")
    b_took = time.monotonic() - t0
    assert read_until(a, b"body=\n", times=4).count(b"HTTP/1.1 200") == 4
    a_took = time.monotonic() - t0
    assert b_took < a_took - 0.5, (b_took, a_took)


def test_a_request_waiting_in_the_front_takes_every_connection_back(make_suite, tmp_path):
    # lend_connections = 2, one worker holding two connections: a third
    # connection's request waits in the front, which asks for both back.
    # All three are answered, and the two go on, the front's again.
    s = lent_suite(make_suite, tmp_path, lend=2, workers=1)
    a, b = connect(s), connect(s)
    lent_worker_pid(s, a)
    lent_worker_pid(s, b)
    assert requests.get(s.url("/lease.php?c=1"), timeout=10).status_code == 200
    assert wait_until(lambda: metric(s, "vc_front_php_conns_back_total") == 2)
    for c, name in ((a, b"a"), (b, b"b")):
        c.sendall(get(b"/lease.php?" + name))
        got = read_until(c, b"body=\n")
        assert got.count(b"HTTP/1.1 200") == 1 and b"[" + name + b"]" in got, got


def test_a_worker_killed_with_two_connections_gives_back_the_one_it_held_nothing_of(make_suite, tmp_path):
    # One worker holds a and b; a runs a request when it is killed, b
    # waits for its next: a is closed, b goes on in the front.
    s = lent_suite(make_suite, tmp_path, lend=2, workers=1)
    mark = tmp_path / "root" / "running"
    a, b = connect(s), connect(s)
    pid = lent_worker_pid(s, a)
    assert lent_worker_pid(s, b) == pid
    a.sendall(get(b"/lease.php?sleep=10000&mark=" + str(mark).encode()))
    assert wait_until(mark.exists, timeout=10)
    os.kill(pid, signal.SIGKILL)
    assert closed_without_a_word(a)
    assert answered(b, b"/lease.php?after=b")
    assert metric(s, "vc_front_php_conns_rescued_total") == 1
    with requests.Session() as sess:
        assert sess.get(s.url("/lease.php?after=1"), timeout=10).status_code == 200


def test_a_recycled_worker_hands_its_connection_back_first(make_suite, tmp_path):
    s = lent_suite(make_suite, tmp_path, workers=1, php="max_requests = 3;")
    pids = set()
    a = connect(s)
    for i in range(7):
        a.sendall(get(b"/lease.php?pid=%d" % i))
        raw = read_until(a, b"\n", read_until(a, b"\r\n\r\n"))
        assert raw.count(b"HTTP/1.1 200") == 1, (i, raw, s.logs())
        pids.add(int(raw.split(b"\r\n\r\n", 1)[1].strip()))
    assert len(pids) >= 2, pids  # 7 requests, 3 a worker
    assert metric(s, "vc_front_php_conns_back_total") >= 1


@pytest.mark.parametrize("how", [("reload",), ("restart", "front"), ("restart", "php")])
def test_a_reload_or_restart_loses_no_request(make_suite, tmp_path, how):
    """A reload replaces the front and the pool's workers; a restart of
    the front leaves its lent workers with their connections; a restart
    of the pool takes every worker back."""
    s = lent_suite(make_suite, tmp_path)
    a = connect(s)
    lent_worker_pid(s, a)
    assert s.vc(*how).returncode == 0
    # A keep-alive connection may close between two requests (RFC 9112
    # 9.3.1): then the client asks again on a new one. Never half an answer.
    a.sendall(get(b"/lease.php?after=reload"))
    raw = read_until(a, b"body=\n", timeout=15)
    if raw == b"":
        a = connect(s)
        a.sendall(get(b"/lease.php?after=reload"))
        raw = read_until(a, b"body=\n", timeout=15)
    assert raw.count(b"HTTP/1.1 200") == 1 and b"[after=reload]" in raw, raw


def access_lines(s, n):
    """The first n lines of s's access log, once there are n (a lent
    connection's come in batches), their times masked."""
    path = os.path.join(s.data, "log", "access.log")

    def lines():
        got = open(path).read().splitlines() if os.path.exists(path) else []
        return got if len(got) >= n else None
    got = wait_until(lines, timeout=10)
    assert got, open(path).read() if os.path.exists(path) else "no access log"
    return [re.sub(r'\[[^]]+\]|"time":"[^"]*"|"(total|backend)_ms":[0-9.]+', "-", line) for line in got[:n]]


def test_requests_a_worker_serves_are_in_the_access_log_as_the_front_writes_them(make_suite, tmp_path):
    asked = [(get(b"/lease.php?a=1", b"Referer: http://r.example/\r\nUser-Agent: agent/1\r\n"), b"body=\n"),
             (get(b"/lease.php?b=2", b"User-Agent: agent/2\r\n"), b"body=\n"),
             (b"POST /lease.php HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc", b"body=abc\n"),
             (get(b"/lease.php?status=404"), b"body=\n"),
             (get(b"/style.css", b"Connection: close\r\n"), b"}\n")]
    for fmt in ("combined", "json"):
        logs = []
        for lend in (0, 1):
            s = lent_suite(make_suite, tmp_path / fmt, lend=lend, more='front: { access_log = "%s"; };\n' % fmt)
            c = connect(s)
            for req, end in asked:
                c.sendall(req)
                read_until(c, end)
            read_to_end(c)
            logs.append(access_lines(s, len(asked)))
            if lend:
                assert metric(s, "vc_front_php_conn_requests_total") >= 4
            s.stop()
        assert logs[1] == logs[0], (fmt, logs)


def test_the_watchdog_cuts_a_lent_connection_that_trickles(make_suite, tmp_path):
    # front.idle_timeout 1 s: no progress for 1 + 4 s cuts a connection
    # (core/watchdog.c), lent or not; the worker would wait 30 s for the
    # rest of this body.
    s = lent_suite(make_suite, tmp_path, more='front: { idle_timeout = "1s"; };\n')
    a = connect(s)
    lent_worker_pid(s, a)
    a.sendall(b"POST /lease.php HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789")
    t0 = time.monotonic()
    assert closed_without_a_word(a, timeout=20)
    assert time.monotonic() - t0 < 15
    # The worker is free again: it serves the next connection.
    with requests.Session() as sess:
        sess.headers["Accept-Encoding"] = None
        assert sess.get(s.url("/lease.php?next=1"), timeout=10).status_code == 200


def test_a_connection_cut_mid_answer_costs_the_worker_nothing(make_suite, tmp_path):
    # A client that reads nothing of a long answer is cut by the watchdog
    # (front.idle_timeout 1 s + 4) while the worker waits to write: its next
    # write fails (EPIPE), which must end the answer, not the worker. One
    # worker: the next connection's first answer names the same pid.
    s = lent_suite(make_suite, tmp_path, workers=1, more='front: { idle_timeout = "1s"; };\n')
    a = connect(s)
    pid = lent_worker_pid(s, a)
    a.sendall(get(b"/lease.php?big=%d" % (24 * 1024 * 1024)))
    assert b"transfer-encoding: chunked" in read_until(a, b"\r\n\r\n")  # begun, by the worker; then not read
    b = socket.create_connection(("127.0.0.1", s.http), timeout=30)
    assert lent_worker_pid(s, b, timeout=25) == pid, s.logs()
    a.close()
