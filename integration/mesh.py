"""A cluster on this machine for the mesh tests: a NATS server cluster of
real nats-server members (Debian's, JetStream on), and a full suite for
each node, on loopback ports. Every process and directory it starts it
stops and removes."""
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time

from conftest import FIXTURES, Suite, free_port

# The realtime app every node of a test cluster shares: id, key, secret.
APP = ("1001", "meshkey", "meshsecret0123456789")


def wait_until(what, timeout=15.0, every=0.05):
    """what() until it is true; its last value (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(every)


def nats_hello(port, tls_ca=None, connect=None, host="127.0.0.1"):
    """Talks NATS's own protocol to a member: its INFO, then (with
    connect) what it answers a CONNECT and a PING, over TLS if tls_ca."""
    raw = socket.create_connection((host, port), timeout=5)
    f = raw.makefile("rb")
    info = json.loads(f.readline().split(b" ", 1)[1])
    if connect is None:
        raw.close()
        return info, None
    sock = raw
    if tls_ca:
        ctx = ssl.create_default_context(cafile=tls_ca)
        sock = ctx.wrap_socket(raw, server_hostname=host)
    try:
        sock.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        answer = b""
        while b"\r\n" not in answer:
            got = sock.recv(4096)
            if not got:
                break
            answer += got
        return info, answer.decode(errors="replace")
    except (OSError, ssl.SSLError) as e:
        return info, f"closed: {e}"
    finally:
        sock.close()


class NatsMember:
    def __init__(self, base, name, peers_cluster_ports, client_port, cluster_port):
        self.name, self.port, self.cport = name, client_port, cluster_port
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir)
        routes = ", ".join(f"nats-route://127.0.0.1:{p}" for p in peers_cluster_ports if p != cluster_port)
        self.conf = os.path.join(self.dir, "nats.conf")
        with open(self.conf, "w") as f:
            f.write(f'server_name: {name}\nlisten: 127.0.0.1:{client_port}\n'
                    f'jetstream {{ store_dir: "{self.dir}/js" }}\n'
                    f'cluster {{ name: vc; listen: 127.0.0.1:{cluster_port}; routes: [{routes}] }}\n')
        self.proc = None

    def start(self):
        self.log = open(os.path.join(self.dir, "nats.log"), "w")
        self.proc = subprocess.Popen(["nats-server", "-c", self.conf], stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def make_tls(base, n, addresses=None):
    """A CA and a certificate for each of n members (openssl), for
    127.0.0.1 or for member i's address."""
    d = os.path.join(base, "tls")
    os.makedirs(d)
    def openssl(*a):
        subprocess.run(["openssl", *a], check=True, capture_output=True, cwd=d)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
        "-subj", "/CN=vc test CA", "-keyout", "ca.key", "-out", "ca.crt")
    for i in range(n):
        with open(os.path.join(d, "san.ext"), "w") as f:
            f.write(f"subjectAltName=IP:{addresses[i] if addresses else '127.0.0.1'},DNS:localhost\n")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN=web{i + 1}",
            "-keyout", f"web{i + 1}.key", "-out", f"web{i + 1}.csr")
        openssl("x509", "-req", "-in", f"web{i + 1}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "san.ext", "-out", f"web{i + 1}.crt")
    # The suite's user reads them (the keys too: these suites run as root
    # with allow_root, or as the user who made them).
    for name in os.listdir(d):
        os.chmod(os.path.join(d, name), 0o644)
    return d


def fed_linked(s):
    """Whether node s's vc-fed has its own link to the cluster (a deploy
    reaches the other nodes only then; vc-mesh's roster may be up first)."""
    r = s.vc("status", "--json")
    try:
        daemons = json.loads(r.stdout)["daemons"]
    except ValueError:
        return False
    return any(d["daemon"] == "vc-fed" and d.get("status", {}).get("cluster") == "linked" for d in daemons)


def write_sites(conf, i, sites):
    """sites: name -> the site's settings, for node i; "{node}" in them is
    the node's name (each node's own directories on one machine)."""
    os.makedirs(os.path.join(conf, "sites-enabled"), exist_ok=True)
    for name, body in (sites or {}).items():
        with open(os.path.join(conf, "sites-enabled", f"{name}.conf"), "w") as f:
            f.write("site: { %s };\n" % body.replace("{node}", f"web{i + 1}"))


class MemberCluster:
    """n nodes, each running its own NATS member under `vc up`
    (cluster.nats_server, vc-nats), routed to the others, with TLS for
    clients and routes and a user every client and member must give."""

    def __init__(self, n=3, extra=""):
        self.base = tempfile.mkdtemp(prefix="vc-members-", dir="/tmp")
        os.chmod(self.base, 0o711)
        tls = make_tls(self.base, n)
        self.password = os.path.join(self.base, "nats.password")
        with open(self.password, "w") as f:
            f.write("s3cret:with@odd/chars\n")
        os.chmod(self.password, 0o600)  # no other user may read it (configtest refuses that)
        self.client_ports = [free_port() for _ in range(n)]
        self.route_ports = [free_port() for _ in range(n)]
        self.nodes = []
        for i in range(n):
            conf = os.path.join(self.base, f"etc{i + 1}")
            os.makedirs(conf)
            routes = ", ".join(f'"127.0.0.1:{p}"' for j, p in enumerate(self.route_ports) if j != i)
            with open(os.path.join(conf, "vc.conf"), "w") as f:
                f.write(f'cluster: {{ node = "web{i + 1}"; nats = ["tls://127.0.0.1:{self.client_ports[i]}"];\n'
                        f'  user = "vc"; password_file = "{self.password}"; ca = "{tls}/ca.crt";\n'
                        f'  nats_server = true; nats_listen = "127.0.0.1:{self.client_ports[i]}";\n'
                        f'  nats_cluster_listen = "127.0.0.1:{self.route_ports[i]}"; nats_routes = [{routes}];\n'
                        f'  tls_cert = "{tls}/web{i + 1}.crt"; tls_key = "{tls}/web{i + 1}.key";\n'
                        f'  heartbeat = "200ms"; suspect_after = "600ms"; gone_after = "1500ms"; replicas = {min(n, 3)}; }};\n'
                        + extra)
            self.nodes.append(Suite(conf=conf, args=["--workers", "1"]))

    def start(self):
        for s in self.nodes:
            s.start(wait=40)
        return self

    roster = None  # set below

    def stop(self):
        for s in self.nodes:
            s.stop(check=False)
            s.cleanup()
        shutil.rmtree(self.base, ignore_errors=True)


class Cluster:
    """n nodes; node i talks to NATS member i. Timings are short so that
    the tests wait little: heartbeat 200 ms, suspect 600 ms, gone 1.5 s."""

    def __init__(self, n=3, extra_cluster="", extra_site="", extra_conf="", hosts=("shop.test",), more_sites=None,
                 env=None, panel_on=None):
        """more_sites: as write_sites's; env: each node's suite's; "{node}"
        in extra_conf is the node's name, as in more_sites; panel_on: the
        node (an index) that runs vc-panel too (its .panel, .panel_port)."""
        self.base = tempfile.mkdtemp(prefix="vc-mesh-", dir="/tmp")
        # The test's own NATS members, on loopback, with no users: the
        # nodes say so (cluster.insecure); MemberCluster has credentials.
        cports = [free_port() for _ in range(n)]
        self.nats = [NatsMember(self.base, f"n{i + 1}", cports, free_port(), cports[i]) for i in range(n)]
        self.nodes = []
        self.confs = []
        for i in range(n):
            conf = os.path.join(self.base, f"etc{i + 1}")
            os.makedirs(conf)
            panel_port = free_port() if i == panel_on else None
            with open(os.path.join(conf, "vc.conf"), "w") as f:
                f.write(f'cluster: {{ node = "web{i + 1}"; nats = ["nats://127.0.0.1:{self.nats[i].port}"];\n'
                        f'  heartbeat = "200ms"; suspect_after = "600ms"; gone_after = "1500ms";\n'
                        f'  replicas = {min(n, 3)}; insecure = true; {extra_cluster} }};\n'
                        'cache: { max_object = "64k"; };\n' + extra_conf.replace("{node}", f"web{i + 1}"))
                if panel_port:
                    f.write(f'panel: {{ enable = true; listen = "127.0.0.1:{panel_port}"; }};\n')
            # One site on every node, with the same realtime app: a room
            # is "APP_ID:CHANNEL" on every node.
            os.makedirs(os.path.join(conf, "sites-enabled"))
            with open(os.path.join(conf, "sites-enabled", "shop.conf"), "w") as f:
                f.write(f'site: {{ default = true; hosts = {json.dumps(list(hosts))}; root = "{FIXTURES}/docroot";\n'
                        f'  realtime_apps = ["{APP[0]} {APP[1]} {APP[2]}"]; {extra_site} }};\n')
            write_sites(conf, i, more_sites)
            self.confs.append(conf)
            self.nodes.append(Suite(conf=conf, root="", args=["--workers", "2"], env=env))
            if panel_port:
                self.nodes[-1].panel, self.nodes[-1].panel_port = f"https://127.0.0.1:{panel_port}", panel_port

    def start(self):
        for m in self.nats:
            m.start()
        for s in self.nodes:
            s.start(wait=40)
        return self

    def roster(self, i):
        r = self.nodes[i].vc("nodes", "--json")
        if r.returncode != 0:
            return None
        return {n["node"]: n for n in json.loads(r.stdout)["nodes"]}

    def all_up(self, i, names):
        ros = self.roster(i)
        return ros is not None and all(ros.get(n, {}).get("state") == "up" for n in names)

    def stop(self):
        for s in self.nodes:
            s.stop(check=False)
            s.cleanup()
        for m in self.nats:
            m.stop()
        shutil.rmtree(self.base, ignore_errors=True)


class NodeSuite(Suite):
    """A node's suite in its own network namespace (netns.Lab), listening
    on the namespace's address."""

    def __init__(self, address, **kw):
        super().__init__(**kw)
        self.address = address

    def up_command(self):
        return [a.replace("127.0.0.1:", f"{self.address}:") if a.startswith("127.0.0.1:") else a
                for a in super().up_command()]

    def url(self, path="/"):
        return f"http://{self.address}:{self.http}{path}"


class NetnsCluster:
    """A node in each of lab's namespaces, each running its NATS member
    (vc-nats) on the namespace's address, with TLS and a user for clients
    and routes, as on separate machines."""

    def __init__(self, lab, sites=None, env=None, extra_conf=""):
        """sites: as write_sites's; env: each node's suite's."""
        self.lab = lab
        n = len(lab.ns)
        self.base = tempfile.mkdtemp(prefix="vc-netns-", dir="/tmp")
        os.chmod(self.base, 0o711)
        self.tls = make_tls(self.base, n, [lab.addr(i) for i in range(n)])
        self.password = os.path.join(self.base, "nats.password")
        with open(self.password, "w") as f:
            f.write("netns-s3cret\n")
        os.chmod(self.password, 0o600)  # no other user may read it (configtest refuses that)
        self.nodes = []
        for i in range(n):
            conf = os.path.join(self.base, f"etc{i + 1}")
            os.makedirs(conf)
            a = lab.addr(i)
            routes = ", ".join(f'"{lab.addr(j)}:6222"' for j in range(n) if j != i)
            with open(os.path.join(conf, "vc.conf"), "w") as f:
                f.write(f'cluster: {{ node = "web{i + 1}"; nats = ["tls://{a}:4222"];\n'
                        f'  user = "vc"; password_file = "{self.password}"; ca = "{self.tls}/ca.crt";\n'
                        f'  nats_server = true; nats_listen = "{a}:4222"; nats_cluster_listen = "{a}:6222";\n'
                        f'  nats_routes = [{routes}]; tls_cert = "{self.tls}/web{i + 1}.crt";\n'
                        f'  tls_key = "{self.tls}/web{i + 1}.key";\n'
                        f'  heartbeat = "200ms"; suspect_after = "600ms"; gone_after = "1500ms"; replicas = 3; }};\n'
                        'cache: { max_object = "64k"; };\n' + extra_conf)
            write_sites(conf, i, sites)
            # With sites of its own, a node serves them, not --root's.
            self.nodes.append(NodeSuite(a, conf=conf, root="" if sites else None, args=["--workers", "1"],
                                        prefix=lab.inside(i), env=env))

    def start(self):
        for s in self.nodes:
            s.start(wait=40)
        return self

    def stop(self):
        for s in self.nodes:
            s.stop(check=False)
            s.cleanup()
        shutil.rmtree(self.base, ignore_errors=True)


MemberCluster.roster = NetnsCluster.roster = Cluster.roster
MemberCluster.all_up = NetnsCluster.all_up = Cluster.all_up
