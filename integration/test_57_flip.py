"""Deploys the suite does not make (docs/background.md): Deployer,
Capistrano and plain `ln -sfn` lay out releases/N, flip a `current` link
to the new one, then reload the server. Under a steady load, with the
root given in a site file and with `vc up --root APP/current/public`:
no request fails, no answer mixes two releases (the app prints its
release from two files), and every answer after `vc reload` returns is
the new release's."""
import os
import threading
import time

import pytest
import requests

from conftest import Suite

INDEX = """<?php
$first = trim(file_get_contents(__DIR__ . '/../RELEASE'));
usleep(3000);
require __DIR__ . '/../lib.php';
echo $first, ' ', SECOND, "\\n";
"""


def layout(tmp_path):
    base = tmp_path / "app"
    for r in ("1", "2"):
        rel = base / "releases" / r
        (rel / "public").mkdir(parents=True)
        (rel / "public" / "index.php").write_text(INDEX)
        (rel / "RELEASE").write_text(f"r{r}\n")
        (rel / "lib.php").write_text(f"<?php const SECOND = 'r{r}';\n")
    os.symlink("releases/1", base / "current")
    return base


def flip(base, release):
    tmp = base / "current.tmp"
    os.symlink(f"releases/{release}", tmp)
    os.rename(tmp, base / "current")


@pytest.mark.parametrize("how", ["site file", "vc up --root"])
def test_a_flip_of_current_then_a_reload_serves_the_new_release_with_no_failure_or_mix(tmp_path, how):
    base = layout(tmp_path)
    root = f"{base}/current/public"
    if how == "site file":
        etc = tmp_path / "etc"
        (etc / "sites-enabled").mkdir(parents=True)
        (etc / "vc.conf").write_text("php: { workers = 4; };\n")
        (etc / "sites-enabled" / "app.conf").write_text(f'site: {{ root = "{root}"; default = true; }};\n')
        s = Suite(root="", conf=str(etc))
    else:
        s = Suite(root=root, args=["--workers", "4"])
    answers, failures = [], []
    stop = threading.Event()

    def client():
        with requests.Session() as http:
            while not stop.is_set():
                try:
                    r = http.get(s.url("/index.php"), timeout=10)
                    answers.append((time.monotonic(), r.status_code, r.text.strip()))
                except requests.RequestException as e:
                    failures.append(repr(e))

    threads = [threading.Thread(target=client) for _ in range(4)]
    try:
        s.start()
        assert requests.get(s.url("/index.php"), timeout=10).text.strip() == "r1 r1"
        for t in threads:
            t.start()
        time.sleep(1.0)
        flip(base, "2")
        assert s.vc("reload").returncode == 0
        reloaded = time.monotonic()
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join()
        assert not failures, failures[:5]
        assert len(answers) > 100, len(answers)
        bad = [a for a in answers if a[1] != 200 or a[2] not in ("r1 r1", "r2 r2")]
        assert not bad, bad[:5]
        late = [a for a in answers if a[0] > reloaded + 0.05]
        assert late and all(a[2] == "r2 r2" for a in late), [a for a in late if a[2] != "r2 r2"][:5]
        # A restart of the front follows the link too (it was resolved
        # once, at start, before), and so does one of the whole suite.
        for daemons in (["front"], []):
            flip(base, "1" if daemons else "2")
            assert s.vc("restart", *daemons).returncode == 0
            assert requests.get(s.url("/index.php"), timeout=10).text.strip() == ("r1 r1" if daemons else "r2 r2")
    finally:
        stop.set()
        s.stop()
        s.cleanup()
