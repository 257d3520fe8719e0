"""Paths judged where they are used (docs/SECURITY.md, "Paths"): no panel
admin, daemon of the suite's user or site's PHP gets root to make or give
away a directory outside the places for sites, and no site is served from
the suite's own data or configuration. Each test names the role that
tried it."""
import os

import pytest

from conftest import configtest_site, curl
from panel import admin, panel_suite


@pytest.mark.parametrize("body,error", [
    # A panel admin's way to root: vc (the suite's user) writing a unit override.
    ('hosts = ["a.test"]; root = "/etc/systemd/system/ssh.service.d/current";'
     ' deploy_to = "/etc/systemd/system/ssh.service.d";',
     'deploy_to "/etc/systemd/system/ssh.service.d": it is in /etc, the system\'s'),
    ('hosts = ["a.test"]; root = "/opt/app/current"; deploy_to = "/opt/app";',
     'deploy_to "/opt/app" is not below one of deploy.allowed_bases (/srv, /var/www, /home, '),
    ('hosts = ["a.test"]; root = "/srv/current"; deploy_to = "/srv";',
     'deploy_to "/srv" is not below one of deploy.allowed_bases'),
    ('hosts = ["a.test"]; root = "/etc";', 'root "/etc": it is in /etc'),
    ('hosts = ["a.test"]; root = "/boot";', 'root "/boot": it is in /boot'),
])
def test_configtest_refuses_sites_in_the_systems_trees(make_suite, tmp_path, body, error):
    r = configtest_site(make_suite, tmp_path, body)
    assert r.returncode != 0 and error in r.stderr and "x.conf:2" in r.stderr, r.stderr


def test_a_deploy_to_through_a_link_is_judged_where_it_resolves(make_suite, tmp_path):
    """Written below an allowed base, resolved into /etc: refused."""
    base = tmp_path / "base"
    base.mkdir()
    os.symlink("/etc", base / "evil")
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text('deploy: { allowed_bases = ["%s"]; };\n' % base)
    (conf / "sites-enabled" / "x.conf").write_text(
        '\nsite: { hosts = ["a.test"]; root = "%s/evil/app/current"; deploy_to = "%s/evil/app"; };\n' % (base, base))
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode != 0 and "x.conf:2" in r.stderr and '("/etc/app"): it is in /etc' in r.stderr, r.stderr
    # The same below the base, without the link: accepted.
    (conf / "sites-enabled" / "x.conf").write_text(
        '\nsite: { hosts = ["a.test"]; root = "%s/app/current"; deploy_to = "%s/app"; };\n' % (base, base))
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode == 0, r.stderr


def test_an_allowed_base_in_the_systems_trees_is_refused(make_suite, tmp_path):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text('\n\ndeploy: { allowed_bases = ["/srv", "/etc/systemd"]; };\n')
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode != 0 and 'vc.conf:3: deploy.allowed_bases: "/etc/systemd" is in the system' in r.stderr, \
        r.stderr


@pytest.mark.parametrize("inside", ["tls", "state", ""])
def test_a_root_in_the_data_directory_is_refused(make_suite, tmp_path, inside):
    """The suite's TLS keys, its state store: never a site's root (a root
    there served the key to anyone). DATA/sites/NAME is the one place."""
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text("\n")
    s = make_suite(root="", conf=str(conf))
    root = os.path.join(s.data, inside) if inside else s.data
    os.makedirs(root, exist_ok=True)
    (conf / "sites-enabled" / "x.conf").write_text('\nsite: { hosts = ["a.test"]; root = "%s"; };\n' % root)
    r = s.vc("configtest")
    assert r.returncode != 0 and "x.conf:2" in r.stderr and "it is in the data directory" in r.stderr, r.stderr
    ok = os.path.join(s.data, "sites", "a", "current")
    os.makedirs(ok)
    (conf / "sites-enabled" / "x.conf").write_text(
        '\nsite: { hosts = ["a.test"]; root = "%s"; deploy_to = "%s"; };\n' % (ok, os.path.dirname(ok)))
    r = s.vc("configtest")
    assert r.returncode == 0, r.stderr


def test_a_root_in_the_configuration_directory_is_refused(make_suite, tmp_path):
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text("\n")
    (conf / "sites-enabled" / "x.conf").write_text('site: { hosts = ["a.test"]; root = "%s"; };\n' % conf)
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode != 0 and "it is in the configuration directory" in r.stderr, r.stderr


def test_a_panel_admin_cannot_enable_a_site_deployed_under_etc():
    """The review's way to root, through the panel: saved, then enabled,
    which runs configtest: refused with the file and line, and nothing made
    under /etc."""
    target = "/etc/systemd/system/vc-test-never.service.d"
    s = panel_suite().start()
    try:
        c = admin(s)
        text = 'site: {\n  hosts = ["evil.test"];\n  root = "%s/current";\n  deploy_to = "%s";\n};\n' % (target, target)
        r = c.post("/api/sites/save", {"name": "evil", "text": text})
        assert r.status_code == 200, r.text
        r = c.post("/api/sites/enable", {"name": "evil", "enabled": True})
        assert r.status_code != 200 and "evil.conf:1" in r.text and "it is in /etc" in r.text, r.text
        assert not os.path.exists(target)
    finally:
        s.stop()
        s.cleanup()


def test_a_shared_path_swapped_for_a_link_makes_nothing_outside(make_suite, tmp_path):
    """A site's PHP owns its shared directories. It swaps the outer one
    for a link elsewhere; at the next reload the supervisor must not make
    (nor give the pool) the inner one through that link."""
    os.chmod(tmp_path, 0o755)
    srv, outside = tmp_path / "srv", tmp_path / "outside"
    outside.mkdir()
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text('deploy: { allowed_bases = ["%s"]; };\n' % tmp_path)
    site = ('site: { hosts = ["d.test"]; default = true; root = "%s/current/public"; deploy_to = "%s";'
            ' shared = ["uploads", "uploads/inner"]; };\n' % (srv, srv))
    (conf / "sites-enabled" / "d.conf").write_text(site)
    s = make_suite(root="", conf=str(conf)).start()
    assert (srv / "shared" / "uploads" / "inner").is_dir()
    # What the site's PHP may do to a directory it owns.
    os.rename(srv / "shared" / "uploads", srv / "shared" / "uploads.old")
    os.symlink(str(outside), srv / "shared" / "uploads")
    r = s.vc("reload")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (outside / "inner").exists()
    logs = s.logs()
    assert 'shared path "uploads": a symbolic link (never followed here): not made' in logs, logs


def test_a_root_above_the_data_and_configuration_directories_never_serves_them(make_suite):
    """`vc up --root .` with the default ./var: the root holds the data
    directory (the TLS key, the state store) and here the configuration
    directory too. Neither is ever served (the key was, with 200)."""
    s = make_suite(root="")
    os.chmod(s.dir, 0o755)
    with open(os.path.join(s.dir, "index.html"), "w") as f:
        f.write("the app\n")
    conf = os.path.join(s.dir, "etc")
    os.makedirs(conf)
    with open(os.path.join(conf, "vc.conf"), "w") as f:
        f.write('link_key = "a-link-key-no-client-may-ever-read-0123456789";\n')
    s.root, s.conf = s.dir, conf
    s.start()
    code, _, body = curl(s.url("/index.html"))
    assert code == 200 and body == b"the app\n"
    for path in ("/var/tls/selfsigned.key", "/var/state/data.mdb", "/etc/vc.conf", "/var/", "/etc/"):
        code, _, body = curl(s.url(path))
        assert code in (403, 404) and b"PRIVATE KEY" not in body and b"link-key" not in body, (path, code, body[:80])
