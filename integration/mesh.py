"""A cluster on this machine for the mesh tests: a NATS server cluster of
real nats-server members (Debian's, JetStream on), and a full suite for
each node, on loopback ports. Every process and directory it starts it
stops and removes."""
import json
import os
import shutil
import subprocess
import tempfile
import time

from conftest import Suite, free_port


def wait_until(what, timeout=15.0, every=0.05):
    """what() until it is true; its last value (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(every)


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


class Cluster:
    """n nodes; node i talks to NATS member i. Timings are short so that
    the tests wait little: heartbeat 200 ms, suspect 600 ms, gone 1.5 s."""

    def __init__(self, n=3, cache=True):
        self.base = tempfile.mkdtemp(prefix="vc-mesh-", dir="/tmp")
        cports = [free_port() for _ in range(n)]
        self.nats = [NatsMember(self.base, f"n{i + 1}", cports, free_port(), cports[i]) for i in range(n)]
        self.nodes = []
        self.confs = []
        for i in range(n):
            conf = os.path.join(self.base, f"etc{i + 1}")
            os.makedirs(conf)
            with open(os.path.join(conf, "vc.conf"), "w") as f:
                f.write(f'cluster: {{ node = "web{i + 1}"; nats = ["nats://127.0.0.1:{self.nats[i].port}"];\n'
                        f'  heartbeat = "200ms"; suspect_after = "600ms"; gone_after = "1500ms";\n'
                        f'  replicas = {min(n, 3)}; }};\n'
                        'cache: { max_object = "64k"; };\n')
            self.confs.append(conf)
            self.nodes.append(Suite(conf=conf, args=["--workers", "2"]))

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
