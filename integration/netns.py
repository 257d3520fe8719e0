"""Network namespaces for the cluster tests that need a real network
between nodes (root only): n namespaces on one bridge, each with a veth
pair, a node at 10.A.B.i and the host at 10.A.B.254 (on the bridge), so
that a link can be cut and a capture taken on the bridge. Every
namespace and link it makes, it removes."""
import os
import random
import subprocess
import uuid


def can_make():
    """Root, and `ip netns` works here (a container may forbid it)."""
    if os.geteuid() != 0:
        return False
    name = "vc-probe-" + uuid.uuid4().hex[:6]
    ok = subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return ok


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


class Lab:
    def __init__(self, n):
        tag = uuid.uuid4().hex[:5]
        self.net = f"10.{random.randrange(100, 250)}.{random.randrange(1, 250)}"
        self.bridge = f"vcb{tag}"
        self.ns = [f"vc-{tag}-{i + 1}" for i in range(n)]
        self.veths = [f"vcv{tag}{i + 1}" for i in range(n)]
        self.made = []
        try:
            ip("link", "add", self.bridge, "type", "bridge")
            self.made.append(("link", self.bridge))
            ip("addr", "add", f"{self.host_ip}/24", "dev", self.bridge)
            ip("link", "set", self.bridge, "up")
            for i, (ns, veth) in enumerate(zip(self.ns, self.veths)):
                ip("netns", "add", ns)
                self.made.append(("netns", ns))
                ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
                ip("link", "set", veth, "master", self.bridge, "up")
                ip("-n", ns, "addr", "add", f"{self.addr(i)}/24", "dev", "eth0")
                ip("-n", ns, "link", "set", "eth0", "up")
                ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise

    @property
    def host_ip(self):
        return f"{self.net}.254"

    def addr(self, i):
        return f"{self.net}.{i + 1}"

    def inside(self, i):
        """The prefix that runs a command in node i's namespace."""
        return ["ip", "netns", "exec", self.ns[i]]

    def cut(self, i):
        ip("link", "set", self.veths[i], "down")

    def heal(self, i):
        ip("link", "set", self.veths[i], "up")

    def close(self):
        # A namespace takes its end of the veth with it; then the bridge.
        for kind, name in reversed(self.made):
            cmd = ["netns", "del", name] if kind == "netns" else ["link", "del", name]
            subprocess.run(["ip", *cmd], capture_output=True, timeout=20)
        self.made = []
