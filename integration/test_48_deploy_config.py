"""Configuration releases (docs/deploys.md, "Configuration and
certificates"): site files and their certificates deployed as signed
releases of `@config` to a node that follows them (config_releases). The
node applies one as `vc reload` does, and refuses one that configtest
refuses there, with the file and line, leaving the running configuration."""
import json
import os
import re
import subprocess

import pytest

from conftest import curl

LOCAL = """site: {
  default = true;
  root = "%s";
};
"""

SHOP = """site: {
  hosts = [%s];
  root = "%s";
  tls_cert = "%s/current/certs/shop.test.crt";
  tls_key = "%s/current/certs/shop.test.key";
};
"""


def make_cert(dir, name):
    os.makedirs(dir, exist_ok=True)
    key, crt = os.path.join(dir, name + ".key"), os.path.join(dir, name + ".crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=" + name,
                    "-addext", "subjectAltName=DNS:" + name], check=True, capture_output=True)


def write_release(s, hosts, body=None):
    """The primary's configuration: shop's site file, and its certificate."""
    d = os.path.join(s.tmp, "primary")
    os.makedirs(os.path.join(d, "sites-enabled"), exist_ok=True)
    if not os.path.exists(os.path.join(d, "certs", "shop.test.crt")):
        make_cert(os.path.join(d, "certs"), "shop.test")
    text = body or SHOP % (", ".join('"%s"' % h for h in hosts), s.shop, s.releases, s.releases)
    with open(os.path.join(d, "sites-enabled", "shop.conf"), "w") as f:
        f.write(text)
    return d


def release_of(out):
    m = re.search(r"^release (\S+) of site", out, re.M)
    assert m, out
    return m.group(1)


def page(s, host):
    code, _, body = curl(s.url("/"), "-H", "Host: " + host)
    return code, body.decode().strip()


def certificate_name(s, host):
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % s.https, "-servername", host],
                       input=b"", capture_output=True, timeout=10)
    m = re.search(r"subject=CN\s*=\s*(\S+)", r.stdout.decode(errors="replace"))
    return m.group(1) if m else None


@pytest.fixture
def node(make_suite, tmp_path):
    os.chmod(tmp_path, 0o755)
    for name in ("local", "shop"):
        os.makedirs(tmp_path / name)
        (tmp_path / name / "index.php").write_text("<?php echo '%s';\n" % name)
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    releases = str(tmp_path / "config-releases")
    (conf / "vc.conf").write_text('config_releases = "%s";\nphp: { workers = 1; };\n' % releases)
    (conf / "sites-enabled" / "local.conf").write_text(LOCAL % (tmp_path / "local"))
    keys = str(tmp_path / "keys")
    s = make_suite(root="", conf=str(conf), env={"VC_KEYS": keys})
    s.start()
    s.tmp, s.releases, s.shop = str(tmp_path), releases, str(tmp_path / "shop")
    r = s.vc("key", "new", "ops", check=True)
    s.vc("trust", "add", "ops", r.stdout.strip(), check=True)
    yield s
    s.stop()


def test_site_files_and_certificates_arrive_as_a_release(node):
    s = node
    assert page(s, "shop.test") == (200, "local")
    r = s.vc("deploy", "@config", write_release(s, ["shop.test"]), "--message", "shop", check=True)
    first = release_of(r.stdout)
    assert os.readlink(os.path.join(s.releases, "current")) == "releases/" + first
    assert page(s, "shop.test") == (200, "shop")
    assert certificate_name(s, "shop.test") == "shop.test"
    # What `vc reload` and configtest read from now on, too.
    s.vc("reload", check=True)
    assert page(s, "shop.test") == (200, "shop")
    assert ", 2 sites" in s.vc("configtest", check=True).stdout  # local, and shop from the release

    # A second release serves one more host; a rollback takes it away.
    s.vc("deploy", "@config", write_release(s, ["shop.test", "shop2.test"]), check=True)
    assert page(s, "shop2.test") == (200, "shop")
    s.vc("rollback", "@config", check=True)
    assert os.readlink(os.path.join(s.releases, "current")) == "releases/" + first
    assert page(s, "shop2.test") == (200, "local")
    assert page(s, "shop.test") == (200, "shop")
    switched = s.events_of("fed.release.rolled_back", lambda e: e)
    assert switched and switched[-1]["fields"]["site"] == "@config", switched


def test_a_configuration_configtest_refuses_is_not_applied(node):
    s = node
    good = release_of(s.vc("deploy", "@config", write_release(s, ["shop.test"]), check=True).stdout)
    bad_text = 'site: {\n  hosts = ["shop.test"];\n  root = "%s";\n  workers = 3;\n};\n' % s.shop
    r = s.vc("deploy", "@config", write_release(s, [], body=bad_text))
    assert r.returncode != 0, r.stdout
    bad = release_of(r.stdout)
    out = r.stdout + r.stderr
    # The release's own file and line, as configtest says them.
    assert "releases/%s/sites-enabled/shop.conf:4:" % bad in out, out
    assert 'unknown setting "site.workers"' in out or "workers" in out, out
    assert os.readlink(os.path.join(s.releases, "current")) == "releases/" + good
    assert page(s, "shop.test") == (200, "shop")
    s.vc("reload", check=True)  # the running configuration still loads
    failed = s.events_of("fed.release.failed", lambda e: any(x["fields"].get("release") == bad for x in e))
    assert any(x["fields"].get("release") == bad for x in failed), failed


def test_the_first_refused_configuration_leaves_none_current(node):
    s = node
    r = s.vc("deploy", "@config", write_release(s, [], body="site: { hosts = [\"x.test\"]; root = 1; };\n"))
    assert r.returncode != 0, r.stdout
    assert not os.path.lexists(os.path.join(s.releases, "current"))
    s.vc("reload", check=True)
    assert page(s, "shop.test") == (200, "local")


def test_site_names_starting_with_at_are_refused(tmp_path, make_suite):
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "sites-enabled" / "@config.conf").write_text(LOCAL % tmp_path)
    s = make_suite(root="", conf=str(conf))
    r = s.vc("configtest")
    assert r.returncode != 0
    assert 'sites-enabled/@config.conf:1: site "@config": a site\'s name' in r.stderr, r.stderr


def test_config_releases_is_an_absolute_path(tmp_path, make_suite):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text('config_releases = "relative/dir";\n')
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode != 0 and 'config_releases "relative/dir" is not an absolute path' in r.stderr, r.stderr


def test_a_node_that_follows_none_says_so(make_suite, tmp_path):
    s = make_suite(root="", env={"VC_KEYS": str(tmp_path / "keys")})
    app = tmp_path / "app"
    app.mkdir()
    (app / "x.conf").write_text("")
    s.vc("key", "new", "ops", check=True)
    s.start()
    r = s.vc("deploy", "@config", str(app))
    assert r.returncode != 0
    assert "config_releases" in r.stdout + r.stderr, r.stdout + r.stderr


def test_under_the_privilege_model_php_cannot_read_the_releases(make_suite):
    """Started as root: the releases are the suite's user's, vc-fed asks
    the supervisor (root) to reload, and a site's PHP (www-data) cannot
    read the certificate keys the releases hold."""
    if os.geteuid() != 0:
        pytest.skip("the privilege model applies when the suite is started as root")
    s = make_suite(root="", as_root=False)
    os.chmod(s.dir, 0o755)
    for name in ("local", "shop"):
        os.makedirs(os.path.join(s.dir, name))
    releases = os.path.join(s.dir, "config-releases")
    key = os.path.join(releases, "current", "certs", "shop.test.key")
    with open(os.path.join(s.dir, "local", "index.php"), "w") as f:
        f.write("<?php echo @file_get_contents(%s) === false ? 'unreadable' : 'READ';\n" % json.dumps(key))
    with open(os.path.join(s.dir, "shop", "index.php"), "w") as f:
        f.write("<?php echo 'shop';\n")
    conf = os.path.join(s.dir, "etc")
    os.makedirs(os.path.join(conf, "sites-enabled"))
    with open(os.path.join(conf, "vc.conf"), "w") as f:
        f.write('config_releases = "%s";\nphp: { workers = 1; };\n' % releases)
    with open(os.path.join(conf, "sites-enabled", "local.conf"), "w") as f:
        f.write(LOCAL % os.path.join(s.dir, "local"))
    s.conf = conf
    s.env["VC_KEYS"] = os.path.join(s.dir, "keys")
    s.start()
    s.tmp, s.releases, s.shop = s.dir, releases, os.path.join(s.dir, "shop")
    r = s.vc("key", "new", "ops", check=True)
    s.vc("trust", "add", "ops", r.stdout.strip(), check=True)
    s.vc("deploy", "@config", write_release(s, ["shop.test"]), check=True)
    assert page(s, "shop.test") == (200, "shop")
    st = os.stat(releases)
    assert st.st_uid != 0 and st.st_mode & 0o777 == 0o750, oct(st.st_mode)
    assert page(s, "local.test") == (200, "unreadable")
