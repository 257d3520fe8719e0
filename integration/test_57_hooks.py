"""Release hooks (docs/deploys.md, "Hooks") on one machine: `build` runs
in a copy of the tree on the deployer's side before it is signed,
`before_switch` in the new release through the site's pool before the
switch (a migration: failing, nothing switches), `after_switch` after it;
their output is in `vc releases SITE --log`."""
import os
import subprocess

import pytest

from conftest import VC
from test_45_deploy import deployed, get, release_of, write_app  # noqa: F401 (deployed is a fixture)

HOOKS = """deploy_hooks: {
    build = ["echo building the assets; mkdir -p public/build && echo built > public/build/app.js"];
    before_switch = ["php bin/migrate.php --force"];
    after_switch = ["php bin/warm.php"];
  };"""

MIGRATE = """<?php
// A migration: it runs in the new release, with the shared storage/.
$v = trim(file_get_contents('VERSION'));
file_put_contents('storage/hooks.log', "migrate $v " . getcwd() . " " . PHP_SAPI . " " . json_encode($argv) . "\\n",
                  FILE_APPEND);
echo "migrating to $v\\n";
if (file_exists('SLOW')) {
    sleep(3);
}
if (file_exists('FAIL')) {
    fwrite(STDERR, "SQLSTATE[42S01]: table exists\\n");
    exit(3);
}
"""

WARM = """<?php
file_put_contents('storage/hooks.log', "warm " . trim(file_get_contents('VERSION')) . "\\n", FILE_APPEND);
echo "cache warmed\\n";
"""


def write_hooked_app(app, version, fail=False, slow=False):
    write_app(app, version)
    os.makedirs(os.path.join(app, "bin"), exist_ok=True)
    with open(os.path.join(app, "bin", "migrate.php"), "w") as f:
        f.write(MIGRATE)
    with open(os.path.join(app, "bin", "warm.php"), "w") as f:
        f.write(WARM)
    for name, wanted in (("FAIL", fail), ("SLOW", slow)):
        path = os.path.join(app, name)
        if wanted:
            open(path, "w").close()
        elif os.path.exists(path):
            os.unlink(path)


def hooks_log(s):
    with open(os.path.join(s.srv, "shared", "storage", "hooks.log")) as f:
        return f.read().splitlines()


@pytest.mark.parametrize("deployed", [HOOKS], indirect=True)
def test_hooks_run_in_order_and_a_failing_before_switch_switches_nothing(deployed):
    s = deployed
    write_hooked_app(s.app, "v1")
    r = s.vc("deploy", "deploy", s.app, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    first = release_of(r.stdout)
    # build: streamed, and its product is in the release (not in the tree given).
    assert "building the assets" in r.stdout
    assert get(s, "/build/app.js") == (200, "built\n")
    assert not os.path.exists(os.path.join(s.app, "public", "build"))
    # before_switch then after_switch, in the new release, as the PHP CLI.
    log = hooks_log(s)
    assert len(log) == 2 and log[1] == "warm v1", log
    assert log[0].startswith(f"migrate v1 {s.srv}/releases/{first} cli ") and '"--force"' in log[0], log
    # Their output: on vc deploy's terminal, and kept with the release.
    assert "migrating to v1" in r.stdout and "cache warmed" in r.stdout, r.stdout
    kept = s.vc("releases", "deploy", "--log", check=True).stdout
    for line in ("building the assets", "$ php bin/migrate.php --force", "migrating to v1", "[exit 0]",
                 "$ php bin/warm.php", "cache warmed"):
        assert line in kept, kept
    assert kept.index("building") < kept.index("migrating") < kept.index("cache warmed")

    # A migration that fails: no switch, and why is said and kept.
    write_hooked_app(s.app, "v2", fail=True)
    r = s.vc("deploy", "deploy", s.app, timeout=120)
    assert r.returncode != 0
    second = release_of(r.stdout)
    assert 'before_switch "php bin/migrate.php --force" failed (exit 3)' in r.stderr, r.stderr
    assert os.readlink(os.path.join(s.srv, "current")) == "releases/" + first
    assert get(s, "/")[1].startswith("v1 v1")
    assert hooks_log(s)[2].startswith(f"migrate v2 {s.srv}/releases/{second} cli "), hooks_log(s)
    assert len(hooks_log(s)) == 3  # no after_switch
    kept = s.vc("releases", "deploy", "--log", second, check=True).stdout
    assert "SQLSTATE[42S01]: table exists" in kept and "[exit 3]" in kept, kept

    # A slow migration's output reaches the terminal while it runs, not
    # once the switch is over.
    write_hooked_app(s.app, "v3", slow=True)
    p = subprocess.Popen([VC, "--data", s.data, "--conf", s.conf, "deploy", "deploy", s.app], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=s.env, cwd=s.dir)
    try:
        seen, live = [], False
        for line in p.stdout:
            seen.append(line)
            if line.startswith("  | migrating to v3"):
                live = p.poll() is None  # the hook still sleeps
                break
        assert live, seen
        assert p.wait(timeout=60) == 0, seen + [p.stdout.read()]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize("deployed", ['deploy_hooks: { build = ["exit 7"]; };'], indirect=True)
def test_a_failing_build_deploys_nothing(deployed):
    s = deployed
    write_app(s.app, "v1")
    r = s.vc("deploy", "deploy", s.app, timeout=60)
    assert r.returncode != 0 and 'build "exit 7" failed (exit 7): nothing was deployed' in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(s.srv, "current"))
    assert "has no release yet" in s.vc("releases", "deploy").stdout
