"""Deploys on one machine (docs/deploys.md): `vc key new`, `vc trust`,
`vc deploy`, `vc rollback` and `vc releases` against a running suite and
its vc-fed. The app reports its release twice, from its VERSION file and
from an included library, so an answer that mixed two releases shows; a
shared directory keeps what PHP wrote across releases."""
import http.client
import json
import os
import re
import shlex
import subprocess
import threading

import pytest

from conftest import FIXTURES, REPO, VC, curl

SITE = """site: {
  hosts = ["deploy.test"];
  default = true;
  root = "%(dir)s/current/public";
  deploy_to = "%(dir)s";
  shared = ["storage"];
  keep_releases = %(keep)d;
  %(extra)s
};
"""

INDEX = """<?php
$lib = require __DIR__ . '/../lib/version.php';
$file = trim(file_get_contents(__DIR__ . '/../VERSION'));
$n = (int)@file_get_contents(__DIR__ . '/../storage/count') + 1;
file_put_contents(__DIR__ . '/../storage/count', $n);
echo "$file $lib $n ", $_SERVER['DOCUMENT_ROOT'], "\\n";
"""


def write_app(app, version, extra_files=0):
    os.makedirs(os.path.join(app, "public"), exist_ok=True)
    os.makedirs(os.path.join(app, "lib"), exist_ok=True)
    os.makedirs(os.path.join(app, "storage"), exist_ok=True)
    with open(os.path.join(app, "public", "index.php"), "w") as f:
        f.write(INDEX)
    with open(os.path.join(app, "lib", "version.php"), "w") as f:
        f.write("<?php return '%s';\n" % version)
    with open(os.path.join(app, "VERSION"), "w") as f:
        f.write(version + "\n")
    with open(os.path.join(app, "public", "app.css"), "w") as f:
        f.write("body { color: black }\n")
    # The deployer's own scratch: never shipped (shared on the node).
    with open(os.path.join(app, "storage", "count"), "w") as f:
        f.write("1000\n")
    for i in range(extra_files):
        with open(os.path.join(app, "lib", "f%03d.php" % i), "w") as f:
            f.write("<?php // %d\n" % i + "x" * 2000 + "\n")


@pytest.fixture
def deployed(make_suite, tmp_path, request):
    os.chmod(tmp_path, 0o755)
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    # The test's own directory is where its sites may be deployed.
    (conf / "vc.conf").write_text('php: { workers = 2; };\ndeploy: { allowed_bases = ["%s"]; };\n' % tmp_path)
    srv = str(tmp_path / "srv")
    extra = getattr(request, "param", "")
    (conf / "sites-enabled" / "deploy.conf").write_text(SITE % {"dir": srv, "keep": 3, "extra": extra})
    keys = str(tmp_path / "keys")
    s = make_suite(root="", conf=str(conf), env={"VC_KEYS": keys})
    s.start()
    s.srv, s.keys, s.app = srv, keys, str(tmp_path / "app")
    r = s.vc("key", "new", "alice", check=True)
    s.vc("trust", "add", "alice", r.stdout.strip(), check=True)
    yield s
    s.stop()


def release_of(out):
    m = re.search(r"^release (\S+) of site", out, re.M)
    assert m, out
    return m.group(1)


def read_releases(connect, stop, seen, errors, headers=None):
    """GET / on one keep-alive connection (connect() makes it) until stop
    is set: each answer's release number goes to seen; a failure, or an
    answer that names two releases, to errors."""
    conn = connect()
    while not stop.is_set():
        try:
            conn.request("GET", "/", headers=headers or {})
            resp = conn.getresponse()
            body = resp.read().decode()
            if resp.status != 200:
                errors.append((resp.status, body))
                continue
            file_v, lib_v = body.split()[:2]
            if file_v != lib_v:
                errors.append(("mixed", body))
            seen.append(int(file_v[1:]))
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            errors.append(("exception", repr(e)))
            conn = connect()


def get(s, path="/"):
    code, _, body = curl(s.url(path))
    return code, body.decode()


def test_deploy_sends_only_what_changed_and_switches(deployed):
    s = deployed
    code, _ = get(s)
    assert code == 404  # no release yet
    write_app(s.app, "v1", extra_files=40)
    r = s.vc("deploy", "deploy", s.app, "--message", "first release", check=True)
    first = release_of(r.stdout)
    assert os.readlink(os.path.join(s.srv, "current")) == "releases/" + first
    code, body = get(s)
    assert code == 200
    assert body.startswith("v1 v1 1 " + s.srv + "/releases/" + first + "/public"), body
    assert get(s, "/app.css") == (200, "body { color: black }\n")

    # One file changed among 45: only it is sent; the rest are linked.
    with open(os.path.join(s.app, "lib", "version.php"), "w") as f:
        f.write("<?php return 'v2';\n")
    with open(os.path.join(s.app, "VERSION"), "w") as f:
        f.write("v2\n")
    r = s.vc("deploy", "deploy", s.app, "--message", "second", check=True)
    second = release_of(r.stdout)
    m = re.search(r"staging: (\d+) files to send \((\d+) bytes\), (\d+) linked", r.stdout)
    assert m and int(m.group(1)) == 2 and int(m.group(2)) == len("<?php return 'v2';\n") + 3, r.stdout
    assert int(m.group(3)) == 42, r.stdout  # 40, index.php, app.css (storage/ is shared)
    code, body = get(s)
    # The shared storage/ kept the count PHP wrote; the deployer's is not shipped.
    assert body.startswith("v2 v2 2 " + s.srv + "/releases/" + second), body
    inode = os.stat(os.path.join(s.srv, "releases", first, "public", "app.css")).st_ino
    assert os.stat(os.path.join(s.srv, "releases", second, "public", "app.css")).st_ino == inode

    listed = json.loads(s.vc("releases", "deploy", "--json", check=True).stdout)
    assert [(x["id"], x["state"], x["message"]) for x in listed] == [
        (first, "staged", "first release"), (second, "current", "second")]
    staged = s.events_of("fed.release.staged", lambda e: len(e) >= 2)
    assert [e["fields"]["release"] for e in staged] == [first, second], staged

    # Rollback: the first again; the second is bad and never gone back to.
    r = s.vc("rollback", "deploy", check=True)
    assert first in r.stdout
    code, body = get(s)
    assert body.startswith("v1 v1 3 "), body
    r = s.vc("rollback", "deploy")
    assert r.returncode == 1 and "no earlier good release" in r.stderr, r.stderr
    listed = {x["id"]: x for x in json.loads(s.vc("releases", "deploy", "--json", check=True).stdout)}
    assert listed[second]["bad"] == "yes" and listed[first]["state"] == "current"
    assert s.events_of("fed.release.rolled_back", lambda e: len(e) >= 1)[0]["fields"]["from"] == second


def test_releases_beyond_keep_are_pruned(deployed):
    s = deployed
    ids = []
    for v in range(5):
        write_app(s.app, "v%d" % v)
        ids.append(release_of(s.vc("deploy", "deploy", s.app, check=True).stdout))
    left = sorted(os.listdir(os.path.join(s.srv, "releases")))
    assert left == ids[-3:], left
    listed = [x["id"] for x in json.loads(s.vc("releases", "deploy", "--json", check=True).stdout)]
    assert listed == ids[-3:]


def test_an_untrusted_key_or_a_bad_file_switches_nothing(deployed):
    s = deployed
    write_app(s.app, "v1")
    first = release_of(s.vc("deploy", "deploy", s.app, check=True).stdout)
    # A key the node does not trust.
    s.vc("key", "new", "mallory", check=True)
    write_app(s.app, "evil")
    r = s.vc("deploy", "deploy", s.app, "--key", "mallory")
    assert r.returncode == 1 and "not signed by a key this node trusts" in r.stderr, r.stderr
    assert os.readlink(os.path.join(s.srv, "current")) == "releases/" + first
    assert get(s)[1].startswith("v1 v1 "), get(s)
    failed = s.events_of("fed.release.failed", lambda e: len(e) >= 1)
    assert "trusts" in failed[0]["fields"]["error"], failed
    # Removed from the trusted keys: refused the same way.
    s.vc("trust", "remove", "alice", check=True)
    r = s.vc("deploy", "deploy", s.app, "--key", "alice")
    assert r.returncode == 1 and "not signed by a key this node trusts" in r.stderr, r.stderr
    s.vc("trust", "add", "alice", os.path.join(s.keys, "alice.pub"), check=True)
    # A file on this node no longer what its release signed: a new release
    # that would link it is refused at the check, and nothing switches.
    with open(os.path.join(s.srv, "releases", first, "public", "app.css"), "r+") as f:
        f.write("body { color: white }\n")  # the same size
    write_app(s.app, "v2")
    r = s.vc("deploy", "deploy", s.app, "--key", "alice")
    assert r.returncode == 1 and 'file "public/app.css" does not match the manifest' in r.stderr, r.stderr
    assert os.readlink(os.path.join(s.srv, "current")) == "releases/" + first
    assert not [d for d in os.listdir(os.path.join(s.srv, "releases")) if d.startswith(".")]


def test_no_request_fails_or_goes_back_during_switches(deployed):
    """Four clients on keep-alive connections while three releases are
    switched to: every answer is 200, names one release in both places,
    and no client sees a release older than one it has seen."""
    s = deployed
    write_app(s.app, "v0")
    s.vc("deploy", "deploy", s.app, check=True)
    stop = threading.Event()
    seen, errors = [[] for _ in range(4)], []

    def client(i):
        read_releases(lambda: http.client.HTTPConnection("127.0.0.1", s.http, timeout=10), stop, seen[i], errors)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    try:
        for v in (1, 2, 3):
            write_app(s.app, "v%d" % v)
            s.vc("deploy", "deploy", s.app, check=True, timeout=90)
            # The deploy returns once the new release serves.
            assert get(s)[1].startswith("v%d v%d " % (v, v))
    finally:
        stop.set()
        for t in threads:
            t.join(20)
    assert not errors, errors[:5]
    for got in seen:
        assert got and got == sorted(got), got
        assert got[-1] == 3


def test_deploy_refuses_what_a_release_cannot_hold(deployed):
    s = deployed
    write_app(s.app, "v1")
    os.symlink("/etc/passwd", os.path.join(s.app, "public", "passwd"))
    r = s.vc("deploy", "deploy", s.app)
    assert r.returncode == 1 and "leaves the application" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(s.srv, "current"))
    r = s.vc("deploy", "nosuch", s.app)
    assert r.returncode == 1


def test_deploy_refuses_links_that_leave_as_the_kernel_resolves_them(deployed):
    """Two links, each inside the release as text: a/b/c/r is the app's top
    (three levels up), and public/x goes through r and one level up. The
    kernel takes r first, so public/x is the directory above the release
    (the review's way to serve the suite's keys); `vc deploy` refuses it and
    nothing reaches the node."""
    s = deployed
    write_app(s.app, "v1")
    os.makedirs(os.path.join(s.app, "a", "b", "c"))
    os.symlink("../../..", os.path.join(s.app, "a", "b", "c", "r"))
    os.symlink("../a/b/c/r/..", os.path.join(s.app, "public", "x"))
    assert os.path.realpath(os.path.join(s.app, "public", "x")) == os.path.dirname(s.app)
    r = s.vc("deploy", "deploy", s.app)
    assert r.returncode == 1, r.stderr
    assert 'the link "public/x" -> "../a/b/c/r/.." leaves the release as it resolves' in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(s.srv, "current"))
    # The same tree without the second link deploys: r alone stays inside.
    os.unlink(os.path.join(s.app, "public", "x"))
    s.vc("deploy", "deploy", s.app, check=True)
    assert get(s)[1].startswith("v1 v1 "), get(s)


def stage_raw(s, manifest):
    """What a node's vc-fed answers a signed manifest sent to it as it is,
    past vc deploy's own checks (as a cluster peer or a hand-made client
    would send it): (ok, message)."""
    import base64

    import zmq
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from trust_peer import field
    with open(os.path.join(s.keys, "alice.key")) as f:
        secret = base64.b64decode(f.read().strip())
    sig = Ed25519PrivateKey.from_private_bytes(secret[:32]).sign(manifest.encode()).hex()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.linger = 0
    sock.connect(f"ipc://{s.data}/run/ctl-vc-fed.sock")
    sock.send(field(1, "stage") + field(2, "deploy") + field(2, sig) + field(3, manifest.encode()))
    assert sock.poll(10000), "vc-fed did not answer"
    reply = sock.recv()
    sock.close()
    ctx.term()
    ok = reply[:2] == b"\x08\x01"  # Reply.ok = true, first when set
    return ok, reply.decode(errors="replace")


def test_vc_fed_refuses_a_raw_manifest_whose_link_leaves_through_another(deployed):
    """The two-link release sent straight to vc-fed, signed by a trusted
    key: refused there too; the same manifest without the second link is
    staged."""
    s = deployed
    head = "velocity-release 1\nsite deploy\nid %s\ncreated 1764897300\nsigner alice\nmessage raw\n"
    tree = "d 755 a\nd 755 a/b\nd 755 a/b/c\nl a/b/c/r ../../..\n"
    ok, msg = stage_raw(s, head % "raw-1" + tree + "l public a/b/c/r/..\n")
    assert not ok and "leaves the release as it resolves" in msg, msg
    ok, msg = stage_raw(s, head % "raw-2" + tree + "d 755 public\n")
    assert ok, msg


def test_the_front_serves_a_deployed_root_only_below_deploy_to(deployed):
    """Whatever is on disk (vc-fed refuses a release whose root leads out):
    a deployed site's root that resolves outside DEPLOY_TO serves nothing."""
    s = deployed
    write_app(s.app, "v1")
    first = release_of(s.vc("deploy", "deploy", s.app, check=True).stdout)
    assert get(s, "/app.css")[0] == 200
    public = os.path.join(s.srv, "releases", first, "public")
    os.rename(public, public + ".real")
    os.symlink("/etc", public)
    try:
        # A new front: no real path it kept from before (it keeps them a second).
        s.vc("restart", "front", check=True)
        for path in ("/hostname", "/passwd"):
            code, body = get(s, path)
            assert code == 404, (path, code, body)
    finally:
        os.unlink(public)
        os.rename(public + ".real", public)


@pytest.mark.parametrize("deployed", ['deploy_exclude = ["*.log", "tests"];'], indirect=True)
def test_the_site_excludes_its_own_patterns(deployed):
    """The site's deploy_exclude and the command's --exclude both leave
    paths out of the release."""
    s = deployed
    write_app(s.app, "v1")
    os.makedirs(os.path.join(s.app, "tests"), exist_ok=True)
    for rel in ("public/debug.log", "tests/CartTest.php", "public/tests.txt", ".env.local"):
        with open(os.path.join(s.app, rel), "w") as f:
            f.write("x\n")
    one = release_of(s.vc("deploy", "deploy", s.app, "--exclude", ".env*", check=True).stdout)
    tree = os.path.join(s.srv, "releases", one)
    assert not os.path.exists(os.path.join(tree, "public", "debug.log"))
    assert not os.path.exists(os.path.join(tree, "tests"))
    assert not os.path.exists(os.path.join(tree, ".env.local"))
    assert os.path.exists(os.path.join(tree, "public", "tests.txt"))
    assert get(s)[1].startswith("v1 v1 ")


@pytest.mark.parametrize("body,error", [
    ('hosts = ["a.test"]; root = "/srv/a/public"; deploy_to = "/srv/a";',
     'with deploy_to "/srv/a", root is in the current release'),
    ('hosts = ["a.test"]; root = "/srv/a/current"; deploy_to = "/srv/a"; shared = ["../etc"];',
     'shared "../etc" is not a path inside a release'),
    ('hosts = ["a.test"]; root = "/tmp"; shared = ["storage"];', "shared needs deploy_to"),
    ('hosts = ["a.test"]; root = "/tmp"; deploy_exclude = ["*.log"];', "deploy_exclude needs deploy_to"),
    ('hosts = ["a.test"]; root = "/tmp"; deploy_quorum = 2;', "deploy_quorum needs deploy_to"),
    ('hosts = ["a.test"]; root = "/srv/a/current"; deploy_to = "/srv/a"; deploy_quorum = -1;', "deploy_quorum"),
    ('hosts = ["a.test"]; root = "/srv/a/current"; deploy_to = "/srv/a"; deploy_exclude = ["/etc"];',
     'deploy_exclude "/etc" is a pattern relative to the application'),
])
def test_deploy_settings_are_checked(make_suite, tmp_path, body, error):
    from conftest import configtest_site
    r = configtest_site(make_suite, tmp_path, body)
    assert r.returncode != 0 and error in r.stderr and "x.conf:2" in r.stderr, r.stderr


def test_deploy_under_the_privilege_model(make_suite):
    """Started as root: vc-fed runs as the suite's user and writes the
    releases, which the pool's user reads but cannot change; the pool's
    user writes the shared directory vc up gave it."""
    if os.geteuid() != 0:
        pytest.skip("the privilege model applies when the suite is started as root")
    s = make_suite(root="", as_root=False)
    srv = os.path.join(s.dir, "srv")
    conf = os.path.join(s.dir, "etc")
    os.makedirs(os.path.join(conf, "sites-enabled"))
    with open(os.path.join(conf, "vc.conf"), "w") as f:
        f.write('php: { workers = 2; };\ndeploy: { allowed_bases = ["%s"]; };\n' % s.dir)
    with open(os.path.join(conf, "sites-enabled", "deploy.conf"), "w") as f:
        f.write(SITE % {"dir": srv, "keep": 3, "extra": ""})
    s.conf = conf
    s.env["VC_KEYS"] = os.path.join(s.dir, "keys")
    s.start()
    r = s.vc("key", "new", "alice", check=True)
    s.vc("trust", "add", "alice", r.stdout.strip(), check=True)
    app = os.path.join(s.dir, "app")
    write_app(app, "v1")
    first = release_of(s.vc("deploy", "deploy", app, check=True).stdout)
    assert get(s)[1].startswith("v1 v1 1 "), get(s)
    assert get(s)[1].startswith("v1 v1 2 "), get(s)
    release = os.path.join(srv, "releases", first)
    assert os.stat(release).st_uid == os.stat(srv).st_uid != 0
    assert os.stat(os.path.join(srv, "shared", "storage", "count")).st_uid == 33  # www-data's PHP wrote it
    # The release is not the pool's to change.
    st = os.stat(os.path.join(release, "public", "index.php"))
    assert st.st_uid != 33 and not st.st_mode & 0o022


@pytest.mark.parametrize("deployed", ['health_check = "/health.php";'], indirect=True)
def test_a_release_that_fails_its_health_check_is_rolled_back(deployed):
    s = deployed
    write_app(s.app, "v1")
    with open(os.path.join(s.app, "public", "health.php"), "w") as f:
        f.write("<?php echo 'ok';\n")
    first = release_of(s.vc("deploy", "deploy", s.app, check=True).stdout)
    write_app(s.app, "v2")
    with open(os.path.join(s.app, "public", "health.php"), "w") as f:
        f.write("<?php http_response_code(500); echo 'the database is gone';\n")
    r = s.vc("deploy", "deploy", s.app, timeout=60)
    second = release_of(r.stdout)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "health_check /health.php answered 500" in r.stderr and "rolled back to release " + first in r.stderr
    assert os.readlink(os.path.join(s.srv, "current")) == "releases/" + first
    assert get(s)[1].startswith("v1 v1 "), get(s)
    listed = {x["id"]: x for x in json.loads(s.vc("releases", "deploy", "--json", check=True).stdout)}
    assert listed[second]["bad"] == "yes" and listed[first]["state"] == "current"
    back = s.events_of("fed.release.rolled_back", lambda e: len(e) >= 1)
    assert back[0]["fields"] == {"site": "deploy", "release": first, "from": second}, back


def test_a_changed_file_and_the_manifest_travel_as_deltas(deployed):
    """A 200 KB file in which 50 bytes changed, in an app of 60 files:
    the manifest goes as a delta against the current release's, the file
    as a delta against the node's copy, and what they rebuild is what the
    deployer has."""
    s = deployed
    write_app(s.app, "v1", extra_files=60)
    data = "".join("line %06d of the catalogue\n" % i for i in range(7300)).encode()
    with open(os.path.join(s.app, "lib", "catalogue.txt"), "wb") as f:
        f.write(data)
    r = s.vc("deploy", "deploy", s.app, check=True)
    assert "a delta" not in r.stdout, r.stdout  # the first release: nothing to make one against
    changed = data[:100000] + b"x" * 50 + data[100050:]
    with open(os.path.join(s.app, "lib", "catalogue.txt"), "wb") as f:
        f.write(changed)
    r = s.vc("deploy", "deploy", s.app, check=True)
    second = release_of(r.stdout)
    manifest = int(re.search(r"^manifest: (\d+) bytes \(a delta against release", r.stdout, re.M).group(1))
    sent = int(re.search(r"^staged: (\d+) bytes sent", r.stdout, re.M).group(1))
    assert manifest < 3000 and sent < 8000, r.stdout
    with open(os.path.join(s.srv, "releases", second, "lib", "catalogue.txt"), "rb") as f:
        assert f.read() == changed
    listed = {x["id"]: x for x in json.loads(s.vc("releases", "deploy", "--json", check=True).stdout)}
    assert int(listed[second]["bytes_received"]) < 8000


def test_a_reload_adds_a_deployed_site_but_never_stops_vc_fed(deployed, tmp_path):
    """A second deployed site comes with a reload: its directory is made
    and vc-fed takes it. A reload that would leave no site deployed (and
    so no vc-fed) is refused: the set of daemons changes only with a
    restart of the suite."""
    s = deployed
    sites = os.path.join(s.conf, "sites-enabled")
    blog = str(tmp_path / "blog")
    with open(os.path.join(sites, "blog.conf"), "w") as f:
        f.write('site: { hosts = ["blog.test"]; root = "%s/current"; deploy_to = "%s"; };\n' % (blog, blog))
    r = s.vc("reload")
    assert r.returncode == 0, r.stderr
    assert os.path.isdir(blog)
    write_app(s.app, "b1")
    r = s.vc("deploy", "blog", s.app, check=True)
    assert os.path.islink(os.path.join(blog, "current")), r.stdout
    for name in ("blog.conf", "deploy.conf"):
        os.rename(os.path.join(sites, name), os.path.join(str(tmp_path), name))
    with open(os.path.join(sites, "plain.conf"), "w") as f:
        f.write('site: { default = true; root = "%s"; };\n' % str(tmp_path))
    r = s.vc("reload")
    assert r.returncode != 0 and "vc-fed would run 0 times instead of 1: restart the suite" in r.stderr, r.stderr


DEPLOY_PHP = """<?php
namespace Deployer;

require %(recipe)s;
set('velocity_vc', %(vc)s);
set('velocity_site', 'deploy');
set('velocity_source', %(app)s);
set('target', 'main');
"""


def dep(s, tmp_path, task, site=True, extra=""):
    """Runs a task of deploy/deployer/velocity.php, from a deploy.php as a
    team would write it, under integration/fixtures/deployer/run.php (a
    stand-in for Deployer, which neither Debian nor npm has)."""
    vc = " ".join(shlex.quote(x) for x in [VC, "--data", s.data, "--conf", s.conf])
    text = DEPLOY_PHP % {"recipe": json.dumps(os.path.join(REPO, "deploy", "deployer", "velocity.php")),
                         "vc": json.dumps(vc), "app": json.dumps(s.app)}
    if not site:
        text = text.replace("set('velocity_site', 'deploy');\n", "")
    (tmp_path / "deploy.php").write_text(text + extra)
    return subprocess.run(["php", os.path.join(FIXTURES, "deployer", "run.php"), str(tmp_path / "deploy.php"), task],
                          capture_output=True, text=True, env=s.env, timeout=120)


def test_the_deployer_recipe_deploys_lists_and_rolls_back(deployed, tmp_path):
    s = deployed
    write_app(s.app, "v1")
    r = dep(s, tmp_path, "velocity:deploy")
    assert r.returncode == 0, r.stdout + r.stderr
    first = release_of(r.stdout)
    write_app(s.app, "v2")
    second = release_of(dep(s, tmp_path, "velocity:deploy").stdout)
    assert get(s)[1].startswith("v2 v2 ")
    listed = dep(s, tmp_path, "velocity:releases")
    assert first in listed.stdout and second in listed.stdout and "Deployer: main" in listed.stdout, listed.stdout
    r = dep(s, tmp_path, "velocity:rollback")
    assert r.returncode == 0, r.stdout + r.stderr
    assert get(s)[1].startswith("v1 v1 ")
    # A failure fails the task, with vc's reason.
    r = dep(s, tmp_path, "velocity:deploy", site=False)
    assert r.returncode == 1 and "set velocity_site" in r.stderr, r.stderr
    r = dep(s, tmp_path, "velocity:deploy", extra="set('velocity_key', 'mallory');\n")
    assert r.returncode == 1 and "mallory" in r.stderr, r.stdout + r.stderr
    assert get(s)[1].startswith("v1 v1 ")
