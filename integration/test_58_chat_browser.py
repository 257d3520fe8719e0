"""The chat example (examples/chat) in Chromium, driven by playwright-core:
two pages, each with socket.io-client's default transports (polling, then
the upgrade to WebSocket), join through the PHP handler, exchange messages
relayed by vc_socketio_emit() and acked by the handler, and see each other
come and go."""
import json
import os
import shutil
import time

import pytest

from conftest import Suite
from node_client import end_in_chromium, start_in_chromium

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_DIR = os.path.join(REPO, "integration", "node")
CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.isdir(os.path.join(NODE_DIR, "node_modules", "playwright-core"))),
    reason="Chromium or playwright-core not installed (ops/install-deps.sh installs them)")


@pytest.fixture
def chat(tmp_path):
    root = tmp_path / "public"
    shutil.copytree(os.path.join(REPO, "examples", "chat", "public"), root)
    os.makedirs(root / "vendor")
    shutil.copy(os.path.join(NODE_DIR, "node_modules", "socket.io-client", "dist", "socket.io.min.js"),
                root / "vendor")
    for d in (tmp_path, root, root / "vendor"):
        os.chmod(d, 0o755)
    etc = tmp_path / "etc"
    (etc / "sites-enabled").mkdir(parents=True)
    (etc / "vc.conf").write_text("\n")
    # As the example's README writes it.
    (etc / "sites-enabled" / "chat.conf").write_text(
        'site: {\n  default = true;\n  root = "%s";\n'
        '  socketio: { path = "/socket.io/"; handler = "socket.php"; };\n};\n' % root)
    s = Suite(root="", conf=str(etc)).start()
    yield s
    s.stop()
    s.cleanup()


class Pages:
    def __init__(self, s, names):
        self.proc, self.home = start_in_chromium("chat_pages.mjs", s.url("/index.html"), *names)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise AssertionError("the pages did not connect: " + self.close()[-3000:])

    def send(self, cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def wait_for(self, name, pred, timeout=15):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = self.send({"dump": name})
            if pred(got):
                return got
            time.sleep(0.1)
        raise AssertionError(f"{name} did not get it in {timeout} s: {self.send({'dump': name})}")

    def close(self):
        return end_in_chromium(self.proc, self.home)


def test_two_pages_chat_through_the_php_handler(chat):
    pages = Pages(chat, ["Ann", "Bob"])
    try:
        # Bob joined after Ann: Ann saw him come.
        pages.wait_for("Ann", lambda g: ["joined", "Bob"] in g)
        pages.send({"say": "Ann", "text": "hello, Bob"})
        pages.wait_for("Bob", lambda g: ["said", "Ann", "hello, Bob"] in g)
        pages.wait_for("Ann", lambda g: ["said", "Ann", "hello, Bob"] in g and ["ack", True] in g)
        pages.send({"say": "Bob", "text": "hi Ann ✓"})
        got = pages.wait_for("Ann", lambda g: ["said", "Bob", "hi Ann ✓"] in g)
        said = [x for x in got if x[0] == "said"]
        assert said == [["said", "Ann", "hello, Bob"], ["said", "Bob", "hi Ann ✓"]], got
        # Blank: the handler's ack says no, and nobody is sent it (Ann's
        # next message comes after it in Bob's log, the blank never).
        pages.send({"say": "Bob", "text": "   "})
        pages.wait_for("Bob", lambda g: ["ack", False] in g)
        pages.send({"say": "Ann", "text": "still here"})
        got = pages.wait_for("Bob", lambda g: ["said", "Ann", "still here"] in g)
        assert [x[2] for x in got if x[0] == "said"] == ["hello, Bob", "hi Ann ✓", "still here"], got
    finally:
        err = pages.close()
    assert "pageerror" not in err, err[-3000:]
