"""Certificates across the cluster (docs/cluster.md, "Certificates across
nodes"): three nodes behind a load balancer share sites with tls = "acme"
against a real CA (Pebble, -strict). The load balancer, a TCP relay this
test runs on the ports Pebble checks, hands each of the CA's checks to the
next node in turn, whichever node ordered. Exactly one node orders each
site, every node answers the CA's checks, and every node serves the
certificate, its key written 0600 and never in clear on NATS."""
import os
import socket
import threading

import pytest

from acme_ca import Pebble, served_cert
from mesh import Cluster, wait_until

NAMES = ["web1", "web2", "web3"]
HTTP_HOSTS = ["shop.test", "www.shop.test", "api.shop.test"]


class RoundRobin:
    """A TCP load balancer: each connection to port goes to the next of
    targets (set once the nodes' ports are known), relayed both ways. It
    records which target took each connection."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.targets, self.taken, self.next = [], [], 0
        self.closed = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            i = self.next % len(self.targets)
            self.next += 1
            self.taken.append(i)
            try:
                upstream = socket.create_connection(("127.0.0.1", self.targets[i]), timeout=10)
            except OSError:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.relay, args=(a, b), daemon=True).start()

    @staticmethod
    def relay(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.closed = True
        self.sock.close()


@pytest.fixture(scope="module")
def acme_cluster(tmp_path_factory):
    work = tmp_path_factory.mktemp("mesh-acme")
    http_lb, tls_lb = RoundRobin(), RoundRobin()
    ca = Pebble(work / "ca", http_lb.port, tls_lb.port, nosleep=True).start()
    secret = work / "cluster.secret"
    secret.write_bytes(os.urandom(24).hex().encode() + b"\n")
    os.chmod(secret, 0o600)
    os.chmod(work, 0o755)
    acme = (f'acme: {{ directory = "{ca.directory}"; ca_bundle = "{ca.tls_cert}"; '
            'email = "ops@example.test"; };\n')
    c = Cluster(3, extra_cluster=f'secret_file = "{secret}";', extra_site='tls = "acme";', extra_conf=acme,
                hosts=HTTP_HOSTS, more_sites={"alpn": f'hosts = ["alpn.test"]; root = "{work}"; tls = "acme"; '
                                                      'acme_challenge = "tls-alpn-01";'})
    http_lb.targets = [s.http for s in c.nodes]
    tls_lb.targets = [s.https for s in c.nodes]
    try:
        c.start()
        yield c, ca, http_lb, tls_lb, work
    finally:
        c.stop()
        ca.stop()
        http_lb.close()
        tls_lb.close()


def issued_on(c, site):
    """The nodes whose vc-acme issued site's certificate itself."""
    return [i for i, s in enumerate(c.nodes)
            if any(e["fields"]["site"] == site for e in s.events_of("acme.cert.issued", timeout=0))]


def test_one_node_orders_each_site_any_node_answers_the_ca_and_all_serve_it(acme_cluster):
    c, ca, http_lb, tls_lb, work = acme_cluster
    root = ca.root_file(work)
    # Every node serves a certificate from the CA for every host: the one
    # node that ordered it, and the two it reached through the cluster.
    for i, s in enumerate(c.nodes):
        for host in HTTP_HOSTS + ["alpn.test"]:
            cert = wait_until(lambda: serves(s, host, root), timeout=90)
            assert cert, f"node {i + 1} serves no certificate from the CA for {host}: " + s.logs()[-3000:]
            assert host in {v for k, v in cert["subjectAltName"] if k == "DNS"}
    for site in ("shop", "alpn"):
        # An event reaches the journal a moment after the files the front serves.
        orderers = wait_until(lambda: issued_on(c, site), timeout=10)
        assert len(orderers) == 1, (site, orderers)
        others = [s for i, s in enumerate(c.nodes) if i not in orderers]
        for s in others:
            shared = s.events_of("acme.cert.shared", lambda e: any(x["fields"]["site"] == site for x in e))
            assert shared, s.logs()[-3000:]
    # The CA's checks went round the nodes: some reached a node that did
    # not order (and it answered, or no certificate would have come).
    shop_orderer = issued_on(c, "shop")[0]
    assert len(http_lb.taken) >= len(HTTP_HOSTS)
    assert any(t != shop_orderer for t in http_lb.taken), http_lb.taken
    assert tls_lb.taken, "the CA checked no TLS-ALPN-01 answer"
    # Each answer reached every other node before the CA was told to look.
    said = [line for s in c.nodes for line in s.logs().splitlines()
            if "other nodes up" in line or "was not taken" in line or "answer could not" in line]
    assert not said, "\n".join(said) + "\n" + "\n".join(s.logs()[-2000:] for s in c.nodes)
    # Exactly one order a site reached the CA.
    assert ca.log().count("Issued certificate serial") == 2, ca.log()[-3000:]
    # Each node's key is its own file, 0600, and the same pair everywhere.
    keys = []
    for s in c.nodes:
        path = os.path.join(s.data, "tls", "acme", "shop.key")
        assert os.stat(path).st_mode & 0o777 == 0o600
        with open(path) as f:
            keys.append(f.read())
    assert keys[0] == keys[1] == keys[2]


def serves(s, host, root):
    try:
        cert, _ = served_cert(s, host, root)
        return cert
    except (OSError, ValueError):
        return None


def test_the_key_is_sealed_on_the_nats_servers(acme_cluster):
    """The bucket's files on every NATS member hold the pair sealed: not
    the key's PEM, nor a line of it."""
    c, ca, http_lb, tls_lb, work = acme_cluster
    keys = [os.path.join(s.data, "tls", "acme", "shop.key") for s in c.nodes]
    assert wait_until(lambda: all(map(os.path.exists, keys)), timeout=90), c.nodes[0].logs()[-3000:]
    with open(keys[0]) as f:
        line = f.read().splitlines()[1]
    found = 0
    for m in c.nats:
        for top, _, files in os.walk(os.path.join(m.dir, "js")):
            for name in files:
                with open(os.path.join(top, name), "rb") as f:
                    data = f.read()
                assert b"PRIVATE KEY" not in data and line.encode() not in data, os.path.join(top, name)
                found += b"cert." in data
    assert found, "no member stores the certificates' bucket"


def test_a_forced_renewal_on_one_node_reaches_the_others(acme_cluster):
    """`vc cert renew --force` on node 3: one new order, and the other two
    nodes serve the new pair."""
    c, ca, http_lb, tls_lb, work = acme_cluster
    before = [int(x["not_after"]) for x in map(cert_of, c.nodes)]
    renewer = c.nodes[2]
    assert renewer.vc("cert", "renew", "--force", "shop").returncode == 0
    def renewed():
        now = [cert_of(s) for s in c.nodes]
        return all(int(x["renew_at"]) > 0 and x["serial"] != "" for x in now) and \
            len({x["serial"] for x in now}) == 1 and now[0]["serial"] != first_serial
    first_serial = cert_of(c.nodes[0])["serial"]
    assert wait_until(renewed, timeout=60), [cert_of(s) for s in c.nodes]
    after = [int(x["not_after"]) for x in map(cert_of, c.nodes)]
    assert all(a >= b for a, b in zip(after, before)), (before, after)


def cert_of(s):
    """The site's schedule in vc cert list, and the serial of the file."""
    import json
    import subprocess
    r = s.vc("cert", "list", "--json", check=True)
    row = next(x for x in map(json.loads, r.stdout.splitlines()) if x["site"] == "shop")
    out = subprocess.run(["openssl", "x509", "-noout", "-serial", "-in",
                          os.path.join(s.data, "tls", "acme", "shop.crt")], capture_output=True, text=True)
    row["serial"] = out.stdout.strip()
    return row


def test_configtest_asks_for_the_clusters_secret_when_a_site_has_acme(tmp_path):
    """A site with tls = "acme" in a cluster needs cluster.secret_file (its
    key travels sealed with it): configtest names the file and line."""
    import uuid

    from conftest import Suite
    short = tmp_path / "short.secret"
    short.write_text("too short\n")
    for extra, why in [("", "cluster.secret_file is not set"),
                       (f'secret_file = "{short}";', "holds 10 bytes: 32 or more"),
                       (f'secret_file = "{tmp_path}/none";', "cannot be read")]:
        conf = tmp_path / uuid.uuid4().hex
        (conf / "sites-enabled").mkdir(parents=True)
        (conf / "vc.conf").write_text('\ncluster: { node = "a"; nats = ["tls://h:4222"]; ' + extra + ' };\n')
        (conf / "sites-enabled" / "shop.conf").write_text(
            f'site: {{ hosts = ["shop.test"]; root = "{tmp_path}"; tls = "acme"; }};\n')
        s = Suite(conf=str(conf))
        try:
            r = s.vc("configtest")
            out = r.stderr + r.stdout
            assert r.returncode != 0 and why in out and "vc.conf:2: cluster." in out and '"shop"' in out, (extra, out)
        finally:
            s.cleanup()
