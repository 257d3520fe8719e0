"""pusher-js, or Laravel Echo on top of it (from npm, run by Node),
unmodified, as a page would use them: integration/node/realtime_client.mjs
subscribes to the channels it is given and prints each event as a line."""
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading

from pusher import app_of

NODE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")


def start_in_chromium(script, *args):
    """Node running node/SCRIPT (a playwright-core driver of Chromium),
    with a HOME of its own for Chromium's profile and without the
    sanitizers' preload (it is for our daemons): (the process, its HOME)."""
    home = tempfile.mkdtemp(prefix="vc-chromium-")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    env["HOME"] = home
    proc = subprocess.Popen([shutil.which("node"), os.path.join(NODE_DIR, script), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=NODE_DIR, env=env)
    return proc, home


def end_in_chromium(proc, home):
    """Closes its stdin (the driver then closes the browser), waits a
    bounded while, removes its HOME: what it said on stderr."""
    try:
        proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(home, ignore_errors=True)
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    return err or ""


def have_pusher_js():
    """The npm packages are there (ops/install-deps.sh installs them)."""
    return os.path.isdir(os.path.join(NODE_DIR, "node_modules", "pusher-js"))


class NodeClient:
    def __init__(self, suite, channels, events, echo=False, user=None, key=None):
        auth = suite.url("/pusher_auth.php" + (f"?user={user}" if user else ""))
        opts = {"key": key or app_of(suite)[1], "host": "127.0.0.1", "port": suite.http, "authEndpoint": auth,
                "channels": channels, "events": events, "echo": echo}
        # Not the sanitizer's preload of an ASan run: it is for our daemons.
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
        self.proc = subprocess.Popen([shutil.which("node"), os.path.join(NODE_DIR, "realtime_client.mjs"),
                                      json.dumps(opts)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=NODE_DIR, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def next(self, timeout=10):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no line from the Node client: " + self.stop()[-2000:])

    def wait_for(self, pred, timeout=10):
        seen = []
        while True:
            m = self.next(timeout)
            if pred(m):
                return m
            seen.append(m)
            assert len(seen) < 50, seen

    def send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def stop(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read()
