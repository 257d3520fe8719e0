"""Debian's packaged PHP applications run with no configuration beyond a
site pointed at where Debian put them (docs/SECURITY.md, "The pool's
wall"): MediaWiki, WordPress, DokuWiki, phpMyAdmin and Adminer, each
installed with apt (ops/install-deps.sh) and set up as its README.Debian
says, on the default pool of a suite started as root (PHP as www-data,
its own mount namespace, no open_basedir). Each one's first page, sign-in
and one write come out as under nginx + php-fpm's default pool (www-data,
nothing else configured), in the same test.

The set-up writes into the packages' own directories (/etc/APP,
/var/lib/APP), which are put back as they were afterwards. Root only:
those directories belong to root and www-data."""
import os
import shutil
import tempfile

import pytest

from conftest import Suite
from debian_apps import APPS, TOUCHED, WALKS, Snapshot, Walk, set_up
from mariadb import MariaDB
from reference import Reference


@pytest.fixture(scope="module")
def stacks():
    if os.geteuid() != 0:
        pytest.skip("Debian's application directories belong to root and www-data; this run is not root")
    tmp = tempfile.mkdtemp(prefix="vc-debian-apps-")
    os.chmod(tmp, 0o711)
    snapshot = Snapshot(TOUCHED)
    db = MariaDB(tmp)
    ours = None
    try:
        set_up(db)
        conf = os.path.join(tmp, "etc")
        os.makedirs(os.path.join(conf, "sites-enabled"))
        with open(os.path.join(conf, "vc.conf"), "w") as f:
            f.write("php: { workers = 2; };\n")  # nothing about walls or directories
        for host, root in APPS.items():
            with open(os.path.join(conf, "sites-enabled", host.split(".")[0] + ".conf"), "w") as f:
                f.write(f'site: {{ hosts = ["{host}"]; root = "{root}"; }};\n')
        ours = Suite(root="", conf=conf, as_root=False).start()
        yield ours, db, tmp
    finally:
        if ours:
            ours.stop()
            ours.cleanup()
        db.stop()
        snapshot.restore()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("host", list(APPS))
def test_a_debian_app_works_with_the_default_pool_as_under_php_fpm(stacks, host):
    ours, db, tmp = stacks
    walks = {}
    ref = Reference(2, "classic", tmp, APPS[host], server_name=host, user="www-data")
    try:
        for name, port in (("php-fpm", ref.http), ("velocity", ours.http)):
            db.reset("wp", "wp", "wp")  # WordPress installs itself on each
            w = Walk(port, host)
            w.db_server = f"127.0.0.1:{db.port}"
            WALKS[host](w, name.replace("-", "_"))
            walks[name] = w.steps
    finally:
        ref.stop()
    assert all(shows for _, _, shows in walks["php-fpm"]), walks["php-fpm"]
    assert walks["velocity"] == walks["php-fpm"], (walks, ours.logs()[-3000:])
