"""A worker is not readable by what its own scripts run (docs/SECURITY.md,
"Processes a script starts"): a program started with shell_exec(), as the
pool's user, cannot take the worker's descriptors with pidfd_getfd() (a
front's lent connections: another client's next request) nor read its
memory through /proc/PID/mem. Run with the privilege model as root (PHP
as www-data) and as a normal user (PHP as that user) alike; with the
pool's syscall filter on and off. The broker still reads each worker's
memory figures."""
import json
import os
import shutil
import tempfile

import pytest
import requests

from conftest import Suite

# Run as the pool's user, a child of the worker's shell: the worker is
# the PHP script's pid. It tries what the review did.
PROBE = r"""
import ctypes, errno, json, os, sys
pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
out = {}
try:
    pidfd = os.pidfd_open(pid)
    out["pidfd_open"] = "ok"
    fd = libc.syscall(438, pidfd, 0, 0)  # pidfd_getfd(pidfd, 0, 0)
    out["pidfd_getfd"] = "ok" if fd >= 0 else errno.errorcode[ctypes.get_errno()]
except OSError as e:
    out["pidfd_open"] = errno.errorcode[e.errno]
    out["pidfd_getfd"] = "not tried"
for name in ("mem", "environ"):
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            f.read(1)
        out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode[e.errno]
print(json.dumps(out))
"""

PAGE = r"""<?php
header('Content-Type: application/json');
$out = shell_exec('/usr/bin/python3 ' . escapeshellarg(__DIR__ . '/probe.py') . ' ' . getmypid() . ' 2>&1');
echo $out;
"""


@pytest.fixture(params=[False, True], ids=["no-filter", "filter"])
def probed(request):
    root = tempfile.mkdtemp(prefix="vc-probe-")
    os.chmod(root, 0o755)
    for name, text in (("probe.py", PROBE), ("probe.php", PAGE)):
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(root, name), 0o644)
    env = {"VC_SYSCALL_FILTER": "true"} if request.param else {}
    s = Suite(root=root, as_root=False, args=["--workers", "2"], env=env)
    s.start()
    yield s
    s.stop()
    s.cleanup()
    shutil.rmtree(root, ignore_errors=True)


def test_a_scripts_child_cannot_take_the_workers_descriptors_or_read_its_memory(probed):
    r = requests.get(probed.url("/probe.php"), timeout=20)
    assert r.status_code == 200, r.text
    got = json.loads(r.text)
    assert got["pidfd_getfd"] != "ok", got
    assert got["mem"] in ("EACCES", "EPERM"), got
    assert got["environ"] in ("EACCES", "EPERM"), got


def test_the_broker_still_reads_each_workers_memory(probed):
    """From the smaps_rollup each worker sent it (the kernel refuses the
    broker the worker's own by path now)."""
    assert requests.get(probed.url("/probe.php"), timeout=20).status_code == 200
    php = [d for d in probed.status()["daemons"] if d["daemon"] == "vc-php"][0]
    pss = [int(w["pss_kib"]) for w in php["workers"]]
    uss = [int(w["uss_kib"]) for w in php["workers"]]
    assert len(pss) == 2 and all(0 < u <= p for p, u in zip(pss, uss)), php["workers"]
