"""A deploy across three nodes over a real network (docs/deploys.md): each
node a full suite with its NATS member in a network namespace of its own
(mesh.NetnsCluster, TLS and a user between nodes), each under load from
wrk while a changed app is deployed from the first, then rolled back.
Every node switches within a second of the others, wrk sees no failed
request through either, and a client
on each node never sees an answer that mixes two releases, nor an old
release after a new one. Root only: the unprivileged run skips this file."""
import http.client
import json
import os
import re
import shutil
import tempfile
import threading

import pytest

from conftest import wrk
from mesh import NetnsCluster, fed_linked, wait_until
from netns import Lab, can_make
from test_45_deploy import read_releases, release_of, write_app

pytestmark = pytest.mark.skipif(not can_make(), reason="network namespaces need root")

NAMES = ["web1", "web2", "web3"]


@pytest.fixture(scope="module")
def lab_cluster():
    base = tempfile.mkdtemp(prefix="vc-deploys-", dir="/tmp")
    os.chmod(base, 0o755)
    site = (f'hosts = ["app.test"]; root = "{base}/{{node}}/current/public";'
            f' deploy_to = "{base}/{{node}}"; shared = ["storage"];')
    lab = Lab(3)
    try:
        c = NetnsCluster(lab, sites={"app": site}, env={"VC_KEYS": os.path.join(base, "keys")},
                         extra_conf=f'deploy: {{ allowed_bases = ["{base}"]; }};\n')
        c.app = os.path.join(base, "app")
        try:
            c.start()
            assert wait_until(lambda: all(c.all_up(i, NAMES) for i in range(3)), timeout=40), \
                [c.roster(i) for i in range(3)]
            assert wait_until(lambda: all(fed_linked(s) for s in c.nodes), timeout=40)
            alice = c.nodes[0].vc("key", "new", "alice", check=True).stdout.strip()
            for s in c.nodes:
                s.vc("trust", "add", "alice", alice, check=True)
            yield c
        finally:
            c.stop()
    finally:
        lab.close()
        shutil.rmtree(base, ignore_errors=True)


def deploy(c, version):
    write_app(c.app, version, extra_files=20)
    r = c.nodes[0].vc("deploy", "app", c.app, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_three_nodes_under_wrk_switch_together(lab_cluster, tmp_path):
    c = lab_cluster
    deploy(c, "v1")
    host = tmp_path / "host.lua"
    host.write_text('wrk.headers["Host"] = "app.test"\n')
    stop = threading.Event()
    loads, seen, errors = {}, [[] for _ in c.nodes], []

    def load(i):
        loads[i] = wrk(c.nodes[i].url("/"), seconds=60, conns=8, script=str(host), until=stop)

    def client(i):
        node = c.nodes[i]
        read_releases(lambda: http.client.HTTPConnection(node.address, node.http, timeout=10), stop, seen[i], errors,
                      {"Host": "app.test"})

    threads = [threading.Thread(target=f, args=(i,)) for i in range(3) for f in (load, client)]
    for t in threads:
        t.start()
    try:
        # Load first, then the deploy, then load again on the new release.
        assert wait_until(lambda: all(seen), 20), seen
        r = deploy(c, "v2")
        assert wait_until(lambda: all(got and got[-1] == 2 and got.count(2) > 20 for got in seen), 30), \
            [got[-3:] for got in seen]
        # Then a rollback, under the same load.
        marks = [len(got) for got in seen]
        back = c.nodes[0].vc("rollback", "app", timeout=120)
        assert back.returncode == 0, back.stdout + back.stderr
        assert wait_until(lambda: all(got[-1] == 1 and got[m:].count(1) > 20 for got, m in zip(seen, marks)), 30), \
            [got[-3:] for got in seen]
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    two = release_of(r.stdout)
    assert "runs release %s on all 3 nodes" % two in r.stdout, r.stdout
    assert not errors, errors[:5]
    for got, m in zip(seen, marks):
        # v1 then v2 up to the rollback, then v2 then v1: never back and forth.
        assert got[:m] == sorted(got[:m]) and got[0] == 1, got[:3]
        assert got[m:] == sorted(got[m:], reverse=True), got[m:]
    for i, (total, socket_errors, non2xx) in sorted(loads.items()):
        assert total > 0 and socket_errors == [0, 0, 0, 0] and non2xx == 0, (i, loads[i])
    switched = [int({x["id"]: x for x in json.loads(s.vc("releases", "app", "--json", check=True).stdout)}
                    [two]["switched_ms"]) for s in c.nodes]
    assert max(switched) - min(switched) < 1000, switched
    for node in ("web2", "web3"):
        assert re.search(rf"^node {node}: staged, \d+ bytes sent", r.stdout, re.M), r.stdout
