"""Walls around a pool (docs/SECURITY.md, "The pool's wall"): two sites on
two pools, the same user for both (as a normal user's start, or root with
allow_root, has it), so only the walls can tell them apart. Pool "shop"
has php.private_mounts and php.syscall_filter; the default pool turns its
namespace off. Then both pools with nothing configured: the default wall.
Runs started as root and as a normal user alike."""
import json
import os
import pathlib
import shutil
import tempfile

import pytest
import requests

from conftest import Suite
from test_12_privileges import make_cert

PROBE = r"""<?php
header('Content-Type: application/json');
$q = $_GET;
$status = file_get_contents('/proc/self/status');
preg_match('/^Seccomp:\s+(\d+)/m', $status, $m);
session_start();
$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
echo json_encode([
    'euid' => posix_geteuid(),
    'seccomp' => (int)($m[1] ?? -1),
    'write_shared' => @file_put_contents($q['shared'] . '/from-' . $q['me'], 'x') !== false,
    'read_other_site' => @file_get_contents($q['other'] . '/public.txt') !== false,
    'see_state' => count(@scandir($q['data'] . '/state') ?: []) > 2,
    'see_state_file' => @file_get_contents($q['data'] . '/state/data.mdb', false, null, 0, 1) !== false,
    'read_key' => (string)@file_get_contents($q['key']) !== '',
    'write_tmp' => @file_put_contents(sys_get_temp_dir() . '/upload', 'x') !== false,
    'write_own_root' => @file_put_contents(__DIR__ . '/cache.txt', 'x') !== false,
    'session' => $_SESSION['n'],
    'mnt_ns' => @readlink('/proc/self/ns/mnt'),
    'peek' => isset($q['peek']) ? @file_get_contents($q['peek']) : null,
    'basedir' => ini_get('open_basedir'),
]);
"""


@pytest.fixture(scope="module")
def walled():
    d = tempfile.mkdtemp(prefix="vc-walls-")
    os.chmod(d, 0o755)
    roots = {}
    for name in ("a", "b"):
        root = os.path.join(d, name)
        os.mkdir(root)
        os.chmod(root, 0o777)  # each pool may write its own root: the walls must not stop that
        with open(os.path.join(root, "probe.php"), "w") as f:
            f.write(PROBE)
        with open(os.path.join(root, "public.txt"), "w") as f:
            f.write(f"world-readable file of {name}\n")
        roots[name] = root
    # A world-writable directory on the root file system, as /var/tmp is.
    shared = tempfile.mkdtemp(prefix="vc-walls-shared-", dir="/var/tmp")
    os.chmod(shared, 0o1777)
    # Site a's key, carelessly world-readable: the walled pool reads it empty.
    crt, key = make_cert(d, "a.test")
    os.chmod(key, 0o644)
    conf = os.path.join(d, "etc")
    os.makedirs(os.path.join(conf, "sites-enabled"))
    with open(os.path.join(conf, "vc.conf"), "w") as f:
        f.write("php: { workers = 1; private_mounts = false; open_basedir = false; syscall_filter = false; };\n"
                "pools: { shop: { workers = 1; private_mounts = true; syscall_filter = true; }; };\n")
    for name in ("a", "b"):
        with open(os.path.join(conf, "sites-enabled", f"{name}.conf"), "w") as f:
            f.write(f'site: {{ hosts = ["{name}.test"]; root = "{roots[name]}"; '
                    + (f'default = true; tls_cert = "{crt}"; tls_key = "{key}"; ' if name == "a" else
                       'pool = "shop"; ') + "};\n")
    s = Suite(root="", conf=conf)
    s.start()
    s.key = key
    yield s, roots, shared
    s.stop()
    s.cleanup()
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(shared, ignore_errors=True)


def probe(s, host, roots, shared, other):
    r = requests.get(s.url("/probe.php"), params={"shared": shared, "me": host, "other": roots[other],
                                                  "data": s.data, "key": s.key},
                     headers={"Host": f"{host}.test"}, timeout=10)
    assert r.status_code == 200, (r.status_code, r.text, s.logs()[-3000:])
    return r.json(), r


def test_the_walled_pool_sees_only_its_own(walled):
    s, roots, shared = walled
    open_, _ = probe(s, "a", roots, shared, "b")
    shut, _ = probe(s, "b", roots, shared, "a")
    # Without walls (the default pool) each of these works...
    assert open_["seccomp"] == 0 and open_["write_shared"] and open_["read_other_site"], open_
    assert open_["see_state"] and open_["read_key"], open_
    # ...and with them none does: a filter is on, the root file system is
    # read-only, the other pool's site and the suite's state are hidden.
    assert shut["seccomp"] == 2, shut
    assert not shut["write_shared"] and not os.path.exists(os.path.join(shared, "from-b")), shut
    assert not shut["read_other_site"] and not shut["see_state"] and not shut["see_state_file"], shut
    assert not shut["read_key"], shut  # an empty file no one may read over it
    # The same user runs both: the walls are what differs.
    assert shut["euid"] == open_["euid"] == os.geteuid()


def test_the_walled_pool_still_does_its_work(walled):
    """Sessions, uploads to its temporary directory and writes into its own
    root go on as before."""
    s, roots, shared = walled
    jar = requests.Session()
    for n in (1, 2):
        r = jar.get(s.url("/probe.php"), params={"shared": shared, "me": "b", "other": roots["a"], "data": s.data,
                                                 "key": s.key},
                    headers={"Host": "b.test"}, timeout=10)
        got = r.json()
        assert got["session"] == n and got["write_tmp"] and got["write_own_root"], got
    assert os.path.exists(os.path.join(roots["b"], "cache.txt"))


def test_a_pool_without_walls_has_none(walled):
    s, roots, shared = walled
    got, _ = probe(s, "a", roots, shared, "b")
    assert got["write_tmp"] and got["write_own_root"] and got["session"] >= 1, got
    walled_ns = probe(s, "b", roots, shared, "a")[0]["mnt_ns"]
    # The walled pool has a mount namespace of its own; the other shares ours.
    assert got["mnt_ns"] == os.readlink("/proc/self/ns/mnt")
    assert walled_ns and walled_ns != got["mnt_ns"], (walled_ns, got["mnt_ns"])


@pytest.fixture(scope="module")
def defaulted():
    """Two pools with nothing said about walls, started as a host starts
    it (as root: the daemons as vc, both pools as www-data), or as a
    normal user: both pools one user, so the default wall alone keeps
    them apart."""
    d = tempfile.mkdtemp(prefix="vc-walls-default-")
    os.chmod(d, 0o755)
    # a is a framework's public/, so its pool may write www/ beside it;
    # b lives in www/ too, and stays hidden all the same.
    roots = {"a": os.path.join(d, "www", "public"), "b": os.path.join(d, "www", "b")}
    for name in ("a", "b"):
        os.makedirs(roots[name])
        os.chmod(os.path.dirname(roots[name]), 0o755)
        os.chmod(roots[name], 0o755)
        for f, text in (("probe.php", PROBE), ("public.txt", f"secret source of {name}\n")):
            with open(os.path.join(roots[name], f), "w") as out:
                out.write(text)
    crt, key = make_cert(d, "b.test")
    os.chmod(key, 0o644)  # carelessly readable by every user
    conf = os.path.join(d, "etc")
    os.makedirs(os.path.join(conf, "sites-enabled"))
    with open(os.path.join(conf, "vc.conf"), "w") as f:
        f.write("php: { workers = 1; };\npools: { shop: { workers = 1; }; };\n")
    with open(os.path.join(conf, "sites-enabled", "a.conf"), "w") as f:
        f.write(f'site: {{ hosts = ["a.test"]; root = "{roots["a"]}"; default = true; }};\n')
    with open(os.path.join(conf, "sites-enabled", "b.conf"), "w") as f:
        f.write(f'site: {{ hosts = ["b.test"]; root = "{roots["b"]}"; pool = "shop"; '
                f'tls_cert = "{crt}"; tls_key = "{key}"; }};\n')
    s = Suite(root="", conf=conf, as_root=False)
    s.key = key
    s.start()
    yield s, roots
    s.stop()
    s.cleanup()
    shutil.rmtree(d, ignore_errors=True)


def test_the_default_wall_hides_another_pools_root_sessions_and_secrets_and_the_suites_state(defaulted):
    s, roots = defaulted
    jar = requests.Session()
    r = jar.get(s.url("/probe.php"), params={"shared": "/nonexistent", "me": "b", "other": roots["a"],
                                             "data": s.data, "key": s.key}, headers={"Host": "b.test"}, timeout=10)
    assert r.status_code == 200, (r.text, s.logs()[-3000:])
    b = r.json()
    session = os.path.join(s.data, "pools", "shop", "sessions", "sess_" + jar.cookies["PHPSESSID"])
    assert os.path.exists(session) and b["peek"] is None
    for target in (session, os.path.join(roots["b"], "public.txt"), s.key):
        r = requests.get(s.url("/probe.php"), params={"shared": "/nonexistent", "me": "a", "other": roots["b"],
                                                      "data": s.data, "key": s.key, "peek": target},
                         headers={"Host": "a.test"}, timeout=10)
        a = r.json()
        assert a["peek"] is False, f"the default pool read {target}: {a}"
    assert not a["read_other_site"] and not a["see_state"] and not a["see_state_file"] and not a["read_key"], a
    # B's own work goes on.
    assert b["session"] == 1 and b["write_tmp"], b
    # No check on each file a script opens: no open_basedir, a namespace
    # of its own, as `vc status` says.
    assert a["basedir"] == "" and b["basedir"] == "", (a, b)
    assert a["mnt_ns"] != b["mnt_ns"] != os.readlink("/proc/self/ns/mnt"), (a, b)
    # The system call filter is on by default (as root, or in the pool's
    # user namespace: no no_new_privs is needed either way).
    assert a["seccomp"] == 2 and b["seccomp"] == 2, (a, b)
    pools = json.loads(s.vc("workers", "--json", check=True).stdout)["pools"]
    walls = {p["pool"]["pool"]: p["pool"]["wall"] for p in pools}
    assert walls == {"default": "namespace", "shop": "namespace"}, walls


def test_without_a_namespace_open_basedir_stands_in_where_nothing_else_walls_a_pool():
    """open_basedir = "auto": a pool with no namespace of its own (here
    turned off, as a container without CAP_SYS_ADMIN has it) gets
    open_basedir when it shares its user with the suite or another pool,
    and none when a user of its own walls it (started as root)."""
    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="vc-walls-fallback-"))  # the suite's users cross it
    root = tmp_path / "site"
    root.mkdir()
    (root / "probe.php").write_text("<?php echo ini_get('open_basedir') === '' ? 'none' : 'basedir';")
    for p in (tmp_path, root):
        os.chmod(p, 0o755)
    os.chmod(root / "probe.php", 0o644)
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    own = 'user = "nobody"; group = "nogroup"; ' if os.geteuid() == 0 else ""
    (conf / "vc.conf").write_text("php: { workers = 1; private_mounts = false; };\n"
                                  f"pools: {{ shop: {{ {own}workers = 1; private_mounts = false; }}; "
                                  "mall: { workers = 1; private_mounts = false; }; };\n")
    for name, pool in (("a", None), ("b", "shop"), ("c", "mall")):
        (conf / "sites-enabled" / f"{name}.conf").write_text(
            f'site: {{ hosts = ["{name}.test"]; root = "{root}"; '
            + (f'pool = "{pool}"; ' if pool else "default = true; ") + "};\n")
    s = Suite(root="", conf=str(conf), as_root=False)
    try:
        s.start()
        pools = json.loads(s.vc("workers", "--json", check=True).stdout)["pools"]
        walls = {p["pool"]["pool"]: p["pool"]["wall"] for p in pools}
        # Root: default and mall share www-data; shop has nobody. A normal
        # user's start: every pool is that user, as the suite is.
        shop = "user" if os.geteuid() == 0 else "none"
        assert walls == {"default": "none", "shop": shop, "mall": "none"}, walls
        for host, want in (("a", "basedir"), ("b", "none" if shop == "user" else "basedir"), ("c", "basedir")):
            r = requests.get(s.url("/probe.php"), headers={"Host": f"{host}.test"}, timeout=10)
            assert (r.status_code, r.text) == (200, want), (host, r.status_code, r.text, s.logs()[-2000:])
    finally:
        s.stop()
        s.cleanup()
        shutil.rmtree(tmp_path, ignore_errors=True)
