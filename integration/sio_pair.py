"""The suite and socket.io 4.8 (npm, integration/node/sio_reference.mjs)
with the same Socket.IO settings, side by side, for the test_58 files."""
import json
import os
import shutil
import subprocess

from conftest import FIXTURES, Suite

NODE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")
PATH = "/socket.io/"
# node with the sanitized run's preload would not start.
NODE_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}


def pair_of(d, settings, vc_conf=""):
    """Yields (the suite, the reference's port). settings: the reference's
    (sio_reference.mjs), the site's written from them; with "handlers",
    the site runs integration/fixtures/docroot/sio_handler.php as its
    handler, and the reference the same in JavaScript."""
    (d / "www").mkdir()
    (d / "www" / "index.php").write_text("<?php echo 'app';\n")
    for f in ("sio_op.php", "sio_handler.php"):
        shutil.copy(os.path.join(FIXTURES, "docroot", f), d / "www")
    handler = 'handler = "sio_handler.php"; ' if settings.get("handlers") else ""
    if settings.get("recovery"):
        handler += 'recovery = "%dms"; ' % settings["recovery"]
    (d / "etc" / "sites-enabled").mkdir(parents=True)
    (d / "etc" / "vc.conf").write_text(vc_conf + "\n")
    (d / "etc" / "sites-enabled" / "app.conf").write_text(
        'site: { default = true; root = "%s";\n'
        '  socketio: { path = "%s"; namespaces = %s; ping_interval = "%dms"; ping_timeout = "%dms";\n'
        '              max_payload = %d; %s}; };\n' % (d / "www", PATH, json.dumps(settings["namespaces"]),
                                                        settings["pingInterval"], settings["pingTimeout"],
                                                        settings["maxPayload"], handler))
    s = Suite(root="", conf=str(d / "etc")).start()
    ref = subprocess.Popen([shutil.which("node"), os.path.join(NODE_DIR, "sio_reference.mjs"), json.dumps(settings)],
                           cwd=NODE_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=NODE_ENV)
    try:
        line = ref.stdout.readline()
        assert line.startswith("listening "), line
        yield s, int(line.split()[1])
    finally:
        ref.stdin.close()
        try:
            ref.wait(timeout=10)
        except subprocess.TimeoutExpired:
            ref.kill()
            ref.wait()
        s.stop()
        s.cleanup()
