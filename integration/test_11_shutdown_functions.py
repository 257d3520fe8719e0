"""register_shutdown_function() in every mode, against nginx + php-fpm 8.2:
a request's shutdown functions run at the end of that request, their
output and headers are part of its answer, and they never run again for a
later request on the same worker. What a worker script registers while it
boots runs when the worker ends (recycled, or the suite stopping)."""
import os
import re
import tempfile

import pytest

from conftest import Suite, alive
from test_04_php_pool import wait_for
from reference import Reference
from test_06_conformance import HOST, SCRIPTS, normalise, raw_requests

CONFORMANCE = os.path.dirname(SCRIPTS)

# The mode and its vc up arguments. One worker, so a second request of a
# case lands on the worker that ran the first.
MODES = {
    "classic": [],
    "worker-callable": ["--mode", "worker", "--worker-script", os.path.join(CONFORMANCE, "worker.php")],
    "worker-franken": ["--mode", "worker", "--worker-script", os.path.join(CONFORMANCE, "worker-franken.php")],
    "fork": ["--mode", "fork"],
    "fork-worker-script": ["--mode", "fork", "--worker-script", os.path.join(CONFORMANCE, "worker.php")],
}

# Each case twice on one connection (and so one worker): the second answer
# must not carry the first request's shutdown output again.
CASES = ["shutdown", "shutdown-exit", "shutdown-twice", "shutdown-nested", "shutdown-header",
         "shutdown-after-exit", "shutdown-after-fatal", "shutdown-after-exception"]


def frameless(body):
    """A stack trace's frames name the worker script below the request's
    in worker mode (docs/php.md); the rest of an error must match."""
    return b"\n".join(line for line in body.split(b"\n") if not line.startswith(b"#"))


@pytest.fixture(scope="module")
def reference():
    tmp = tempfile.mkdtemp(prefix="vc-shutdown-")
    ref = Reference(1, "classic", tmp, SCRIPTS, server_name=HOST)
    yield ref
    ref.stop()


@pytest.fixture(scope="module", params=list(MODES))
def ours(request):
    s = Suite(root=SCRIPTS, args=["--workers", "1"] + MODES[request.param])
    s.start()
    yield s
    s.stop()
    s.cleanup()


@pytest.mark.parametrize("case", CASES)
def test_shutdown_functions_as_php_fpm(ours, reference, case):
    reqs = [("GET", f"/flow.php?case={case}", {}, b"")] * 2
    a, b = raw_requests(ours.http, reqs), raw_requests(reference.http, reqs)
    ports = (ours.http, reference.http, ours.https, reference.https)
    for i, (x, y) in enumerate(zip(a, b)):
        x = (x[0], x[1], x[2], frameless(x[3]))
        y = (y[0], y[1], y[2], frameless(y[3]))
        nx, ny = normalise(x, ports, x[3] == y[3]), normalise(y, ports, x[3] == y[3])
        assert nx == ny, f"answer {i + 1}:\nours:    {nx}\nphp-fpm: {ny}"


BOOT_SCRIPT = """<?php
// Registered while the worker boots: runs when the worker ends.
register_shutdown_function(static function (): void {
    file_put_contents(getenv('VC_TEST_MARKS') . '/' . getmypid(), "boot shutdown ran\\n", FILE_APPEND);
});
return static function (): void {
    echo getmypid(), "\\n";
};
"""


@pytest.mark.parametrize("mode", ["worker", "fork"])
def test_boot_shutdown_functions_run_when_the_worker_ends(tmp_path, mode):
    script = tmp_path / "boot-shutdown.php"
    script.write_text(BOOT_SCRIPT)
    marks = tmp_path / "marks"
    marks.mkdir()
    s = Suite(root=SCRIPTS, args=["--workers", "1", "--mode", mode, "--worker-script", str(script)],
              env={"VC_TEST_MARKS": str(marks), "VC_MAX_REQUESTS": "2"})
    try:
        s.start()
        pids = [raw_requests(s.http, [("GET", "/index.php", {}, b"")])[0][3].strip().decode() for _ in range(3)]
        # Worker mode: the first worker served two requests and was
        # recycled; fork mode: one process a request, each ended.
        ended = pids[:2] if mode == "fork" else pids[:1]
        for pid in set(ended):
            # A recycled worker is gone once the next one answered; its
            # shutdown function ran before it exited.
            assert not alive(int(pid)) or os.path.exists(marks / pid)
        s.stop()
        for pid in set(pids):
            path = marks / pid
            assert path.exists(), f"worker {pid} ended without its boot's shutdown function: {os.listdir(marks)}"
            assert path.read_text() == "boot shutdown ran\n"
        # The boot's function runs once per worker, never per request
        # (worker mode's first worker served two); a worker forked but
        # never used (fork mode keeps one ready) ends the same way.
        for name in os.listdir(marks):
            assert (marks / name).read_text() == "boot shutdown ran\n", name
    finally:
        s.cleanup()


FAILING_SCRIPT = """<?php
return static function (): void {
    if (isset($_GET['fail'])) {
        register_shutdown_function(static function () { throw new LogicException('late'); });
    }
    echo getmypid(), "\\n";
};
"""


def test_a_shutdown_function_that_fails_ends_its_worker(tmp_path):
    """An uncaught exception in a shutdown function is fatal, as in the
    handler: the answer is whole, and the worker is replaced, not reused
    with its shutdown half run."""
    script = tmp_path / "failing-shutdown.php"
    script.write_text(FAILING_SCRIPT)
    s = Suite(root=SCRIPTS, args=["--workers", "1", "--mode", "worker", "--worker-script", str(script)],
              env={"VC_PHP_INI": "display_errors=1;html_errors=0"})
    try:
        s.start()
        first = raw_requests(s.http, [("GET", "/index.php?fail=1", {}, b"")])[0]
        assert first[0] == 200 and b"Uncaught LogicException: late" in first[3], first
        failed = first[3].split(b"\n", 1)[0]
        again = raw_requests(s.http, [("GET", "/index.php", {}, b"")])[0]
        assert again[3].strip() != failed, "the worker whose shutdown function failed served again"
        assert wait_for(lambda: not alive(int(failed)), timeout=5)
    finally:
        s.stop()
        s.cleanup()


FATAL_SCRIPT = """<?php
return static function (): void {
    echo getmypid(), "\\n";
    no_such_function_here();
};
"""


def test_a_worker_ended_by_a_fatal_error_is_logged_with_its_request(tmp_path):
    """Worker mode ends a worker whose request hit a fatal error, after
    its answer is whole. The pool logs the exit against that request,
    never as a worker that died idle, and never runs the request again
    (the zygote's report of the exit could come before the end of the
    worker's link was read: a GET ran twice)."""
    script = tmp_path / "fatal.php"
    script.write_text(FATAL_SCRIPT)
    s = Suite(root=SCRIPTS, args=["--workers", "2", "--mode", "worker", "--worker-script", str(script)])
    n = 20
    try:
        s.start()
        for i in range(n):
            r = raw_requests(s.http, [("GET", f"/index.php?fatal={i}", {}, b"")])[0]
            assert r[0] == 500, r
        def ended():
            return len(re.findall(r"ended \(exit \d+\) after answering GET /index\.php\?fatal=\d+", s.logs()))
        assert wait_for(lambda: ended() == n, timeout=5), s.logs()
        logs = s.logs()
        assert "while idle" not in logs and "retried" not in logs, logs
        ran = re.findall(r"\[r[0-9a-f]+\] PHP Fatal error", logs)
        assert len(ran) == n, f"{len(ran)} fatal errors for {n} requests"
    finally:
        s.stop()
        s.cleanup()
