"""Deploys across a cluster (docs/deploys.md): three nodes on one NATS
cluster (mesh.Cluster), one site deployed to each node's own directory.
`vc deploy` on the first node stages the release there, hands it on to
the other two, and switches all three through one pointer. The app
reports its release twice (its VERSION file and an included library), so
an answer that mixed two releases shows. Every node follows the
configuration releases too (`vc deploy @config`)."""
import contextlib
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading

import pytest

from conftest import VC
from mesh import Cluster, fed_linked, wait_until
from test_45_deploy import read_releases, release_of, write_app

HOST = "app.test"


@pytest.fixture(scope="module")
def cluster():
    base = tempfile.mkdtemp(prefix="vc-deploys-", dir="/tmp")
    os.chmod(base, 0o755)
    site = (f'hosts = ["{HOST}"]; root = "{base}/{{node}}/current/public"; deploy_to = "{base}/{{node}}";'
            ' shared = ["storage"]; health_check = "/health.php";')
    # "quick" switches once two of its three nodes hold a release.
    quick = (f'hosts = ["quick.test"]; root = "{base}/{{node}}-quick/current/public";'
             f' deploy_to = "{base}/{{node}}-quick"; shared = ["storage"]; deploy_quorum = 2;')
    # "hooked" runs release hooks (docs/deploys.md, "Hooks").
    hooked = (f'hosts = ["hooked.test"]; root = "{base}/{{node}}-hooked/current/public";'
              f' deploy_to = "{base}/{{node}}-hooked"; shared = ["storage"];'
              ' deploy_hooks: { before_switch = ["php bin/mark.php before"]; after_switch = ["php bin/mark.php after"]; };')
    c = Cluster(3, more_sites={"app": site, "quick": quick, "hooked": hooked},
                env={"VC_KEYS": os.path.join(base, "keys")},
                extra_conf=f'config_releases = "{base}/config-{{node}}";\n'
                           f'deploy: {{ allowed_bases = ["{base}"]; }};\n'
                           'fed: { peer_timeout = "3s"; };\n')  # a silent node costs a test 3 s, not 10
    c.base_srv, c.app = base, os.path.join(base, "app")
    c.start()
    try:
        assert wait_until(lambda: c.all_up(0, ["web1", "web2", "web3"]), 20), c.roster(0)
        assert wait_until(lambda: all(fed_linked(s) for s in c.nodes), 20)
        first = c.nodes[0]
        alice = first.vc("key", "new", "alice", check=True).stdout.strip()
        for s in c.nodes:
            s.vc("trust", "add", "alice", alice, check=True)
        yield c
    finally:
        c.stop()
        shutil.rmtree(base, ignore_errors=True)


def get(s, path="/"):
    conn = http.client.HTTPConnection("127.0.0.1", s.http, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": HOST})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def write_health(app):
    """Fails on a node whose shared storage holds "fail". With "hold"
    there, it says it was asked ("asked") and waits for "go" (5 s at most)."""
    with open(os.path.join(app, "public", "health.php"), "w") as f:
        f.write("<?php $st = __DIR__ . '/../storage/';\n"
                "if (file_exists($st . 'hold')) { touch($st . 'asked');\n"
                "  for ($i = 0; $i < 250 && !file_exists($st . 'go'); $i++) usleep(20000); }\n"
                "if (file_exists($st . 'fail')) { http_response_code(503); echo 'sick'; } else { echo 'ok'; }\n")


def deploy(c, version, *more, check=True):
    # A vc-fed a test killed is linked again first (a stopped node is not waited for).
    running = [s for s in c.nodes if s.proc and s.proc.poll() is None]
    assert wait_until(lambda: all(fed_linked(s) for s in running), 30)
    write_app(c.app, version, extra_files=20)
    write_health(c.app)
    more = more if "--key" in more else more + ("--key", "alice")
    r = c.nodes[0].vc("deploy", "app", c.app, *more, timeout=120)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def releases(s):
    return {x["id"]: x for x in json.loads(s.vc("releases", "app", "--json", check=True).stdout)}


def serves(c, version):
    return all(get(s)[1].startswith(f"{version} {version} ") for s in c.nodes)


def test_a_deploy_is_staged_on_every_node_and_switched_together(cluster):
    c = cluster
    r = deploy(c, "v1")
    one = release_of(r.stdout)
    for node in ("web2", "web3"):
        assert re.search(rf"^node {node}: staged, \d+ bytes sent", r.stdout, re.M), r.stdout
    assert "runs release %s on all 3 nodes" % one in r.stdout, r.stdout
    for i, s in enumerate(c.nodes):
        code, body = get(s)
        assert code == 200 and body.startswith(f"v1 v1 1 {c.base_srv}/web{i + 1}/releases/{one}/public"), body

    # v2 under load on every node: no failure, no mixed answer, and no
    # client sees v1 once it has seen v2 on its node.
    stop = threading.Event()
    seen, errors = [[] for _ in range(6)], []

    def client(k):
        s = c.nodes[k % 3]
        read_releases(lambda: http.client.HTTPConnection("127.0.0.1", s.http, timeout=10), stop, seen[k], errors,
                      {"Host": HOST})

    threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    try:
        r = deploy(c, "v2")
    finally:
        stop.set()
        for t in threads:
            t.join(20)
    two = release_of(r.stdout)
    assert not errors, errors[:5]
    for got in seen:
        assert got and got == sorted(got) and got[-1] == 2, got
    # Only what changed travelled to each other node (VERSION and the library).
    for node in ("web2", "web3"):
        m = re.search(rf"^node {node}: staged, (\d+) bytes sent", r.stdout, re.M)
        assert m and int(m.group(1)) < 4000, r.stdout
    switched = [int(releases(s)[two]["switched_ms"]) for s in c.nodes]
    assert max(switched) - min(switched) < 1000, switched
    # vc releases on any node says where each release is staged.
    for s in c.nodes:
        assert set(releases(s)[two]["nodes"].split(",")) == {"web1", "web2", "web3"}, releases(s)[two]
    assert serves(c, "v2")


def test_nothing_switches_anywhere_when_one_node_refuses(cluster):
    """A key that the third node does not trust: it refuses the release,
    so no node switches, though two have it staged."""
    c = cluster
    deploy(c, "v3")
    bob = c.nodes[0].vc("key", "new", "bob", check=True).stdout.strip()
    for s in c.nodes[:2]:
        s.vc("trust", "add", "bob", bob, check=True)
    r = deploy(c, "v4", "--key", "bob", check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    four = release_of(r.stdout)
    assert re.search(r"^node web2: staged", r.stdout, re.M), r.stdout
    assert re.search(r"^node web3: failed.*not signed by a key this node trusts", r.stdout, re.M), r.stdout
    assert four in releases(c.nodes[1]) and four not in releases(c.nodes[2])
    assert set(releases(c.nodes[0])[four]["nodes"].split(",")) == {"web1", "web2"}
    assert serves(c, "v3")
    # Asked to switch to it anyway, the first node refuses.
    r = c.nodes[0].vc("rollback", "app", four)
    assert r.returncode == 1 and "not staged on node web3" in r.stderr, r.stderr
    assert serves(c, "v3")


def test_a_tampered_file_on_one_node_switches_nothing(cluster):
    """A file on the third node is no longer what its release signed: the
    next release, which links it there, fails that node's check, and no
    node switches."""
    c = cluster
    good = release_of(deploy(c, "v11").stdout)
    victim = os.path.join(c.base_srv, "web3", "releases", good, "public", "app.css")
    with open(victim) as f:
        was = f.read()
    with open(victim, "r+") as f:
        f.write("body { color: white }\n")  # the same size
    try:
        r = deploy(c, "v12", check=False)
    finally:
        with open(victim, "w") as f:
            f.write(was)
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r'^node web3: failed.*file "public/app.css" does not match the manifest', r.stdout, re.M), \
        r.stdout
    assert serves(c, "v11")
    assert all(releases(s)[good]["state"] == "current" for s in c.nodes)


def test_a_node_that_dies_mid_stage_switches_nothing(cluster):
    """The third node's vc-fed is killed while the release is being
    staged there (it has answered the manifest, files are coming): the
    deploy fails and no node switches."""
    c = cluster
    good = release_of(deploy(c, "v13").stdout)
    big = os.path.join(c.app, "big")
    os.makedirs(big, exist_ok=True)
    for i in range(120):  # 12 MB the nodes have never seen: the staging takes a while
        with open(os.path.join(big, f"b{i:03d}.bin"), "wb") as f:
            f.write(os.urandom(100 * 1024))
    third = c.nodes[2]
    pid = third.daemon_pid("vc-fed")
    result, before = {}, len(third.logs())
    t = threading.Thread(target=lambda: result.update(r=deploy(c, "v14", check=False)))
    t.start()
    try:
        began = wait_until(lambda: re.search(r'vc-fed\[%d\] stage: site "app" release (\S+) signed by' % pid,
                                             third.logs()[before:]), 60, every=0.002)
        assert began, third.logs()[-2000:]
        os.kill(pid, signal.SIGKILL)
    finally:
        t.join(120)
        shutil.rmtree(big)
    r = result["r"]
    assert r.returncode == 1, r.stdout + r.stderr
    assert "release %s is staged" % began.group(1) not in third.logs(), "staged before it was killed"
    assert re.search(r"^node web3: (failed|unreachable)", r.stdout, re.M), r.stdout  # the restarted vc-fed said no, or none answered
    assert "nothing switched" in r.stderr or "not staged on node web3" in r.stderr, r.stderr
    assert serves(c, "v13")
    assert all(releases(s)[good]["state"] == "current" for s in c.nodes[:2])


def test_on_a_terminal_each_node_gets_a_bar(cluster):
    """Through a pseudo-terminal (script(1)), vc deploy draws a bar a node
    while the release is handed on, then says each node's outcome."""
    c = cluster
    big = os.path.join(c.app, "big")
    os.makedirs(big, exist_ok=True)
    try:
        for i in range(80):  # 8 MB the nodes lack: the handing on takes a few turns of the bars
            with open(os.path.join(big, f"b{i:03d}.bin"), "wb") as f:
                f.write(os.urandom(100 * 1024))
        write_app(c.app, "v18", extra_files=20)
        write_health(c.app)
        first = c.nodes[0]
        cmd = [VC, "--data", first.data, "--conf", first.conf, "deploy", "app", c.app, "--key", "alice"]
        r = subprocess.run(["script", "-qec", shlex.join(cmd), "/dev/null"], env=first.env, cwd=first.dir,
                           capture_output=True, timeout=120)
    finally:
        shutil.rmtree(big)
    out = r.stdout.decode(errors="replace")
    assert r.returncode == 0, out
    for node in ("web2", "web3"):
        assert re.search(r"\[[#.]{30}\] %s: (sending|staged), \d+ of \d+ files, \d+ bytes" % node, out), out
        assert re.search(r"^node %s: staged" % node, out, re.M), out
    assert serves(c, "v18")


def test_a_failed_health_check_on_one_node_rolls_every_node_back(cluster):
    c = cluster
    good = release_of(deploy(c, "v5").stdout)
    sick = os.path.join(c.base_srv, "web2", "shared", "storage", "fail")
    open(sick, "w").close()
    try:
        r = deploy(c, "v6", check=False)
    finally:
        os.unlink(sick)
    bad = release_of(r.stdout)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "failed on node web2" in r.stderr and "health_check /health.php answered 503" in r.stderr, r.stderr
    assert wait_until(lambda: serves(c, "v5"), 20), [get(s) for s in c.nodes]
    for s in c.nodes:
        assert wait_until(lambda: releases(s)[bad]["bad"] == "yes", 10), releases(s)
        assert releases(s)[good]["state"] == "current"


@contextlib.contextmanager
def third_health_held(c, version):
    """Deploys version from the first node, with the third node's health
    check failing and held ("hold", "fail"): yields, once that check runs,
    the flags' paths and the thread and result of the deploy. Lets the
    check go ("go") and cleans up after."""
    storage = os.path.join(c.base_srv, "web3", "shared", "storage")
    flags = {n: os.path.join(storage, n) for n in ("hold", "fail", "asked", "go")}
    for n in ("hold", "fail"):
        open(flags[n], "w").close()
    result = {}
    t = threading.Thread(target=lambda: result.update(r=deploy(c, version, check=False)))
    t.start()
    try:
        assert wait_until(lambda: os.path.exists(flags["asked"]), 60), "the third node never checked its health"
        yield flags, t, result
    finally:
        open(flags["go"], "w").close()
        t.join(120)
        for path in flags.values():
            if os.path.exists(path):
                os.unlink(path)


def test_the_origin_killed_while_a_node_fails_still_leaves_one_release(cluster):
    """The first node's vc-fed moves the pointer and is killed with -9
    while the third node's health check runs; that check fails. The third
    node moves the pointer back itself, so every node ends on the release
    before, and the next deploy works."""
    c = cluster
    good = release_of(deploy(c, "v15").stdout)
    with third_health_held(c, "v16") as (flags, t, result):
        os.kill(c.nodes[0].daemon_pid("vc-fed"), signal.SIGKILL)
        open(flags["go"], "w").close()
        t.join(120)
        assert result["r"].returncode == 1, result["r"].stdout
        bad = release_of(result["r"].stdout)
        assert wait_until(lambda: serves(c, "v15"), 30), [get(s) for s in c.nodes]
        for s in c.nodes:
            assert wait_until(lambda: releases(s)[good]["state"] == "current", 10), releases(s)
        assert releases(c.nodes[2])[bad]["bad"] == "yes"
    assert c.nodes[0].vc("status", "--wait", "30", timeout=40).returncode == 0
    deploy(c, "v17")
    assert serves(c, "v17")


def test_a_node_killed_in_its_health_check_checks_again(cluster):
    """The third node's vc-fed is killed with -9 after it renamed its link,
    while its health check runs (and would fail). The vc-fed started in
    its place sees that it never said ok, checks again, fails, and the
    cluster goes back to the release before."""
    c = cluster
    good = release_of(deploy(c, "v19").stdout)
    with third_health_held(c, "v20") as (flags, t, result):
        # Busy in the check, vc-fed does not answer status: the supervisor's record says its pid.
        status = json.loads(c.nodes[2].vc("status", "--json").stdout)
        os.kill(int(next(d["pid"] for d in status["daemons"] if d["daemon"] == "vc-fed")), signal.SIGKILL)
        os.unlink(flags["asked"])
        # The new vc-fed's own check waits for "go" too: it ran if it asked.
        assert wait_until(lambda: os.path.exists(flags["asked"]), 60), "the new vc-fed did not check again"
        open(flags["go"], "w").close()
        t.join(120)
        r = result["r"]
        assert r.returncode == 1 and "failed on node web3" in r.stderr, r.stdout + r.stderr
        assert wait_until(lambda: serves(c, "v19"), 30), [get(s) for s in c.nodes]
        for s in c.nodes:
            assert wait_until(lambda: releases(s)[good]["state"] == "current", 10), releases(s)
    deploy(c, "v21")
    assert serves(c, "v21")


def test_a_node_that_was_away_catches_up(cluster):
    """The third node stops; a release goes to the other two; when it
    starts again it finds the pointer names a release it lacks, asks for
    it, and switches to it."""
    c = cluster
    deploy(c, "v7")
    c.nodes[2].stop()
    try:
        assert wait_until(lambda: (c.roster(0) or {}).get("web3", {}).get("state") == "gone", 20), c.roster(0)
        r = deploy(c, "v8")
        eight = release_of(r.stdout)
        assert "runs release %s on all 2 nodes" % eight in r.stdout, r.stdout
    finally:
        c.nodes[2].start(wait=40)
    assert wait_until(lambda: get(c.nodes[2])[1].startswith("v8 v8 "), 30), get(c.nodes[2])
    assert releases(c.nodes[2])[eight]["state"] == "current"


def trusted(s):
    return {k["name"]: k for k in json.loads(s.vc("trust", "list", "--json", check=True).stdout)}


def test_a_trust_change_signed_by_a_trusted_key_reaches_every_node(cluster):
    """Root on a node changes that node only; a change signed by a key the
    nodes trust reaches all of them, and one signed by a key they do not
    trust reaches none."""
    c = cluster
    first = c.nodes[0]
    carol = first.vc("key", "new", "carol", check=True).stdout.strip()
    r = first.vc("trust", "add", "carol", carol, "--key", "alice", check=True)
    assert "on every node that trusts the signer" in r.stdout, r.stdout
    for s in c.nodes:
        assert wait_until(lambda: "carol" in trusted(s), 10), trusted(s)
        assert trusted(s)["carol"]["added_by"] == "key alice"
    # carol may now sign releases on every node.
    deploy(c, "v9", "--key", "carol")
    assert serves(c, "v9")
    # A key no node trusts changes nothing.
    dave = first.vc("key", "new", "dave", check=True).stdout.strip()
    r = first.vc("trust", "add", "dave", dave, "--key", "dave")
    assert r.returncode == 1 and "not signed by a key this node trusts" in r.stderr, r.stderr
    assert all("dave" not in trusted(s) for s in c.nodes)
    # Removed the same way, everywhere.
    first.vc("trust", "remove", "carol", "--key", "alice", check=True)
    for s in c.nodes:
        assert wait_until(lambda: "carol" not in trusted(s), 10), trusted(s)
    r = deploy(c, "v10", "--key", "carol", check=False)
    assert r.returncode == 1 and serves(c, "v9")


def write_config(c, hosts):
    """The primary's site files: one site, "extra", served from one
    directory every node has."""
    d = os.path.join(c.base_srv, "primary")
    os.makedirs(os.path.join(d, "sites-enabled"), exist_ok=True)
    os.makedirs(os.path.join(c.base_srv, "extra"), exist_ok=True)
    with open(os.path.join(c.base_srv, "extra", "index.php"), "w") as f:
        f.write("<?php echo 'extra';\n")
    with open(os.path.join(d, "sites-enabled", "extra.conf"), "w") as f:
        f.write('site: { hosts = %s; root = "%s/extra"; };\n' % (json.dumps(hosts), c.base_srv))
    return d


def test_a_configuration_release_reaches_every_node_or_none(cluster):
    """Site files deployed as @config are applied on every node. One that
    the third node's configtest refuses (a host one of its own sites
    serves) switches nowhere, and says the file and line."""
    c = cluster
    listed = int(c.roster(0)["web2"]["sites"])
    r = c.nodes[0].vc("deploy", "@config", write_config(c, ["extra.test"]), "--key", "alice", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    first = release_of(r.stdout)
    for s in c.nodes:
        assert get(s, "/")[1] != "extra"
        code, body = get_host(s, "extra.test")
        assert (code, body) == (200, "extra"), (code, body)
    # Each node's roster entry lists the new site: a deploy to it reaches them.
    assert wait_until(lambda: int(c.roster(0)["web2"]["sites"]) == listed + 1, 10), c.roster(0)
    own = os.path.join(c.nodes[2].conf, "sites-enabled", "own.conf")
    with open(own, "w") as f:
        f.write('site: { hosts = ["clash.test"]; root = "%s/extra"; };\n' % c.base_srv)
    try:
        c.nodes[2].vc("reload", check=True)
        r = c.nodes[0].vc("deploy", "@config", write_config(c, ["extra.test", "clash.test"]), "--key", "alice",
                          timeout=120)
        assert r.returncode == 1, r.stdout + r.stderr
        second = release_of(r.stdout)
        assert re.search(r"web3.*releases/%s/sites-enabled/extra.conf:1:.*clash.test" % second,
                         r.stdout + r.stderr), r.stdout + r.stderr
        for s in c.nodes:
            assert releases_of(s, "@config")[first]["state"] == "current"
            assert get_host(s, "clash.test")[1] != "extra" or s is c.nodes[2]
    finally:
        os.unlink(own)
        c.nodes[2].vc("reload", check=True)


def get_host(s, host):
    conn = http.client.HTTPConnection("127.0.0.1", s.http, timeout=10)
    try:
        conn.request("GET", "/", headers={"Host": host})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def releases_of(s, site):
    return {x["id"]: x for x in json.loads(s.vc("releases", site, "--json", check=True).stdout)}


def test_a_quorum_switches_without_a_node_that_does_not_answer(cluster):
    """Site "quick" has deploy_quorum = 2. The third node's vc-fed is
    stopped (SIGSTOP: in the roster, but silent): the release switches on
    the two others, and the third catches up once it runs again."""
    c = cluster
    app = os.path.join(c.base_srv, "quick-app")

    def quick(version):
        write_app(app, version)
        return c.nodes[0].vc("deploy", "quick", app, "--key", "alice", timeout=120)

    def serves_quick(s, version):
        return get_host(s, "quick.test")[1].startswith(f"{version} {version} ")

    r = quick("q1")
    assert r.returncode == 0, r.stdout + r.stderr
    pid = c.nodes[2].daemon_pid("vc-fed")
    os.kill(pid, signal.SIGSTOP)
    try:
        r = quick("q2")
        assert r.returncode == 0, r.stdout + r.stderr
        assert re.search(r"^node web3: unreachable", r.stdout, re.M), r.stdout
        assert "quorum of 2" in r.stdout + r.stderr or "on all 2 nodes" in r.stdout, r.stdout
        assert all(serves_quick(s, "q2") for s in c.nodes[:2]), [get_host(s, "quick.test") for s in c.nodes]
        assert serves_quick(c.nodes[2], "q1")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert wait_until(lambda: serves_quick(c.nodes[2], "q2"), 40), get_host(c.nodes[2], "quick.test")
    # A node that refuses still stops the switch, quorum or not.
    bob = c.nodes[0].vc("key", "new", "bob2", check=True).stdout.strip()
    for s in c.nodes[:2]:
        s.vc("trust", "add", "bob2", bob, check=True)
    write_app(app, "q3")
    r = c.nodes[0].vc("deploy", "quick", app, "--key", "bob2", timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"^node web3: failed.*not signed by a key this node trusts", r.stdout, re.M), r.stdout
    assert all(serves_quick(s, "q2") for s in c.nodes)


MARK = """<?php
file_put_contents('storage/marks', $argv[1] . ' ' . trim(file_get_contents('VERSION')) . "\\n", FILE_APPEND);
echo "marked ", $argv[1], "\\n";
if (file_exists('FAIL')) {
    exit(4);
}
"""


def test_before_switch_runs_once_and_after_switch_on_every_node(cluster):
    """The migration runs once, on the node vc deploy asked, before any
    node switches; the cache warm-up runs on each node after its own."""
    c = cluster
    app = os.path.join(c.base_srv, "hooked-app")
    write_app(app, "h1")
    os.makedirs(os.path.join(app, "bin"), exist_ok=True)
    with open(os.path.join(app, "bin", "mark.php"), "w") as f:
        f.write(MARK)
    assert wait_until(lambda: all(fed_linked(s) for s in c.nodes if s.proc and s.proc.poll() is None), 30)
    r = c.nodes[0].vc("deploy", "hooked", app, "--key", "alice", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr

    def marks(node):
        path = os.path.join(c.base_srv, f"{node}-hooked", "shared", "storage", "marks")
        return open(path).read().split("\n")[:-1] if os.path.exists(path) else []

    assert marks("web1") == ["before h1", "after h1"], marks("web1")
    assert marks("web2") == ["after h1"] and marks("web3") == ["after h1"], (marks("web2"), marks("web3"))
    # Each node keeps its own hooks' output with the release.
    assert "marked before" in c.nodes[0].vc("releases", "hooked", "--log", check=True).stdout
    for s in c.nodes[1:]:
        log = s.vc("releases", "hooked", "--log", check=True).stdout
        assert "marked after" in log and "marked before" not in log, log
    # A failing migration: no node switches, none runs its after_switch.
    write_app(app, "h2")
    open(os.path.join(app, "FAIL"), "w").close()
    r = c.nodes[0].vc("deploy", "hooked", app, "--key", "alice", timeout=120)
    assert r.returncode != 0 and "before_switch" in r.stderr and "exit 4" in r.stderr, r.stdout + r.stderr
    assert all(get_host(s, "hooked.test")[1].startswith("h1 h1") for s in c.nodes), \
        [get_host(s, "hooked.test") for s in c.nodes]
    assert marks("web1") == ["before h1", "after h1", "before h2"], marks("web1")
    assert marks("web2") == ["after h1"] and marks("web3") == ["after h1"], (marks("web2"), marks("web3"))
