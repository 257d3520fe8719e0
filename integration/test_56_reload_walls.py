"""Walls follow reloads (docs/SECURITY.md, "The pool's wall"): a site
added by `vc reload` (what the panel's Sites page does) is hidden from
every other pool at once, and writable by its own, with no request lost
while the pools whose walls changed are replaced; a pool whose wall did
not change is not."""
import json
import os
import threading

import requests

from conftest import Suite

PROBE = r"""<?php
header('Content-Type: application/json');
$out = ['pid' => getmypid()];
if (isset($_GET['read'])) $out['read'] = @file_get_contents($_GET['read']);
if (isset($_GET['write'])) $out['wrote'] = @file_put_contents($_GET['write'], 'x') !== false;
echo json_encode($out);
"""


def site(name, root, pool=None, default=False):
    return (f'site: {{ hosts = ["{name}.test"]; root = "{root}";' + (f' pool = "{pool}";' if pool else "") +
            (" default = true;" if default else "") + " };\n")


def ask(s, host, **q):
    r = requests.get(s.url("/probe.php"), params=q, headers={"Host": host + ".test"}, timeout=10)
    assert r.status_code == 200, r.text
    return json.loads(r.text)


def test_a_site_added_by_reload_is_walled_at_once():
    s = Suite(root="")
    try:
        www = os.path.join(s.dir, "www")
        for name in ("a", "b", "c", "d"):
            os.makedirs(os.path.join(www, name))
            with open(os.path.join(www, name, "probe.php"), "w") as f:
                f.write(PROBE)
            with open(os.path.join(www, name, "secret.txt"), "w") as f:
                f.write(f"secret of {name}\n")
        os.chmod(s.dir, 0o755)
        conf = os.path.join(s.dir, "etc")
        os.makedirs(os.path.join(conf, "sites-enabled"))
        with open(os.path.join(conf, "vc.conf"), "w") as f:
            f.write('php: { workers = 2; };\npools: { shop: { workers = 2; }; other: { workers = 1; }; };\n')
        enabled = os.path.join(conf, "sites-enabled")
        with open(os.path.join(enabled, "a.conf"), "w") as f:
            f.write(site("a", os.path.join(www, "a"), default=True))
        with open(os.path.join(enabled, "b.conf"), "w") as f:
            f.write(site("b", os.path.join(www, "b"), pool="shop"))
        with open(os.path.join(enabled, "d.conf"), "w") as f:
            f.write(site("d", os.path.join(www, "d"), pool="other"))
        s.conf = conf
        s.start()
        c_secret, c_upload = os.path.join(www, "c", "secret.txt"), os.path.join(www, "c", "upload.txt")
        # Before c is a site, nothing hides it from either pool: the test's own check.
        assert ask(s, "a", read=c_secret)["read"] == "secret of c\n"
        # Load on the pools while the reload replaces them: nothing may fail.
        stop, errors, served = threading.Event(), [], [0]

        def load():
            while not stop.is_set():
                for host in ("a", "b"):
                    try:
                        r = requests.get(s.url("/probe.php"), headers={"Host": host + ".test"}, timeout=10)
                        if r.status_code != 200:
                            errors.append((host, r.status_code))
                        served[0] += 1
                    except requests.RequestException as e:
                        errors.append((host, repr(e)))

        t = threading.Thread(target=load)
        t.start()
        try:
            with open(os.path.join(enabled, "c.conf"), "w") as f:
                f.write(site("c", os.path.join(www, "c"), pool="shop"))
            r = s.vc("reload", timeout=60)
            assert r.returncode == 0, r.stdout + r.stderr
        finally:
            stop.set()
            t.join(20)
        assert not errors and served[0] > 0, errors[:5]
        # Another pool's PHP: c is hidden. Its own pool's: c is writable.
        assert ask(s, "a", read=c_secret)["read"] is False
        assert ask(s, "c", write=c_upload)["wrote"] is True and os.path.exists(c_upload)
        assert ask(s, "b", read=c_secret)["read"] == "secret of c\n"
        # "other" hides c now too: its wall changed, and it was replaced as well.
        assert ask(s, "d", read=c_secret)["read"] is False
        assert "its wall changed with the configuration" in s.logs()
        # A reload that changes no wall replaces no pool.
        brokers = {d["daemon"]: d["pid"] for d in s.status()["daemons"] if d["daemon"].startswith("vc-php")}
        r = s.vc("reload", timeout=60)
        assert r.returncode == 0
        after = {d["daemon"]: d["pid"] for d in s.status()["daemons"] if d["daemon"].startswith("vc-php")}
        assert after == brokers and len(brokers) == 3, (brokers, after)
    finally:
        s.stop()
        s.cleanup()


def test_a_write_the_wall_refuses_is_logged_with_the_fix():
    """An application that keeps its data beside its tree (MediaWiki's
    SQLite directory): the wall makes it read-only, the log says where and
    what to write, and php.writable_dirs opens it."""
    s = Suite(root="")
    try:
        www, data = os.path.join(s.dir, "www"), os.path.join(s.dir, "app-data")
        os.makedirs(www)
        os.makedirs(data)
        os.chmod(data, 0o755)
        os.chmod(s.dir, 0o755)
        with open(os.path.join(www, "probe.php"), "w") as f:
            f.write(PROBE)
        conf = os.path.join(s.dir, "etc")
        os.makedirs(os.path.join(conf, "sites-enabled"))
        with open(os.path.join(conf, "sites-enabled", "w.conf"), "w") as f:
            f.write(site("w", www, default=True))
        with open(os.path.join(conf, "vc.conf"), "w") as f:
            f.write("php: { workers = 1; };\n")
        s.conf = conf
        s.start()
        db = os.path.join(data, "wiki.sqlite")
        assert ask(s, "w", write=db)["wrote"] is False
        logs = s.logs()
        assert f'a write in "{data}" was refused' in logs and f'php.writable_dirs = ["{data}"]' in logs, logs
        assert os.path.join(www, "probe.php") + ":" in logs  # the script and line that wrote
        # Once a worker: the second refusal is not logged again, but counted.
        assert ask(s, "w", write=db)["wrote"] is False
        assert s.logs().count(f'a write in "{data}" was refused') == 1
        php = [d for d in s.status()["daemons"] if d["daemon"] == "vc-php"][0]
        assert php["status"]["wall_refused_writes"] == "2", php["status"]
        assert "2 writes refused by its wall" in s.vc("workers", check=True).stdout
        s.stop()
        with open(os.path.join(conf, "vc.conf"), "w") as f:
            f.write('php: { workers = 1; writable_dirs = ["%s"]; };\n' % data)
        s.start()
        assert ask(s, "w", write=db)["wrote"] is True and os.path.exists(db)
    finally:
        s.stop()
        s.cleanup()
