"""A schedule in a cluster (docs/background.md, "In a cluster"): three
nodes, each in its own network namespace with its own NATS member, serve
one site whose schedule has a quick entry and a slow one. Each minute of
the quick entry runs on one node, never two; the slow one's run is not
overlapped by another node's; and when the node running it is killed
(every process of it, its NATS member too), another node notices and runs
the entry's next minute. A minute is 2 s here (VC_SCHEDULE_MINUTE_MS),
counted from one instant on every node. Root only: the unprivileged run
skips this file."""
import collections
import json
import math
import os
import shutil
import signal
import tempfile

import pytest

from conftest import FIXTURES, descendants
from mesh import NetnsCluster, wait_until
from netns import Lab, can_make

pytestmark = pytest.mark.skipif(not can_make(), reason="network namespaces need root")

NAMES = ["web1", "web2", "web3"]
MINUTE_S = 2.0


@pytest.fixture(scope="module")
def sched_cluster():
    base = tempfile.mkdtemp(prefix="vc-sched-", dir="/tmp")
    os.chmod(base, 0o755)
    for name in NAMES:
        shutil.copytree(os.path.join(FIXTURES, "queue_app"), os.path.join(base, name))
        with open(os.path.join(base, name, "NODE"), "w") as f:
            f.write(name + "\n")
    # The same lines on every node (an entry is its site and its line):
    # only the directory they run in differs, by node (each run writes to
    # its node's storage/, as a pool's wall lets it).
    site = (f'hosts = ["app.test"]; root = "{base}/{{node}}/public";'
            f' schedule = [ "* * * * * php mark.php storage/quick 100", "* * * * * php mark.php storage/slow 600000" ];')
    lab = Lab(3)
    try:
        c = NetnsCluster(lab, sites={"app": site}, env={"VC_SCHEDULE_MINUTE_MS": str(int(MINUTE_S * 1000))})
        c.base_app = base
        try:
            c.start()
            assert wait_until(lambda: all(c.all_up(i, NAMES) for i in range(3)), timeout=40), \
                [c.roster(i) for i in range(3)]
            yield c
        finally:
            c.stop()
    finally:
        lab.close()
        shutil.rmtree(base, ignore_errors=True)


def runs(c, which):
    """[(node, start, end or None)] of an entry's runs, from the nodes'
    files, by start."""
    lines = []
    for name in NAMES:
        try:
            with open(os.path.join(c.base_app, name, "storage", which)) as f:
                lines += [line.split() for line in f if line.strip()]
        except FileNotFoundError:
            pass
    lines.sort(key=lambda x: float(x[2]))
    out, open_runs = [], {}
    for kind, node, t in lines:
        if kind == "start":
            open_runs[node] = len(out)
            out.append([node, float(t), None])
        elif node in open_runs:
            out[open_runs.pop(node)][2] = float(t)
    return out


def by_minute(rs):
    return collections.Counter(math.floor(start / MINUTE_S) for _, start, _ in rs)


def kill_node(node):
    """Every process of the node at once, as a machine that dies."""
    pids = [node.proc.pid] + descendants(node.proc.pid)
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    node.proc.wait()
    node.proc = None


def mesh_status(node):
    return next(d for d in node.status()["daemons"] if d["daemon"] == "vc-mesh").get("status", {})


def events(node, topic):
    r = node.vc("events", "--json", "--since", "5m")
    return [e for e in (json.loads(line) for line in r.stdout.splitlines() if line.strip()) if e["topic"] == topic]


def test_each_minute_runs_on_one_node_and_goes_on_when_the_runner_dies(sched_cluster):
    c = sched_cluster
    # Eight minutes of the quick entry: each minute once, on one node.
    assert wait_until(lambda: len(runs(c, "quick")) >= 9, timeout=40), (runs(c, "quick"), [
        [line for line in n.logs().splitlines() if "schedule" in line][-4:] for n in c.nodes])
    quick = runs(c, "quick")[1:]  # the first minute may have begun before a node's pool was up
    minutes = by_minute(quick)
    assert set(minutes.values()) == {1}, minutes
    assert max(minutes) - min(minutes) + 1 == len(minutes), f"a minute with no run: {sorted(minutes)}"
    # The slow entry began once, and its minutes since were skipped while
    # it ran, on no node started beside it.
    slow = runs(c, "slow")
    assert len(slow) == 1 and slow[0][2] is None, slow
    runner = NAMES.index(slow[0][0])
    entry = [e for e in json.loads(c.nodes[runner].vc("schedule", "--json", check=True).stdout) if "slow" in e["line"]]
    assert int(entry[0]["skipped"]) >= 3, entry

    kill_node(c.nodes[runner])
    killed_at = runs(c, "quick")[-1][1]
    alive = [i for i in range(3) if i != runner]
    # Another node notices the run was lost with its node, and runs the
    # slow entry's next minute itself.
    assert wait_until(lambda: len(runs(c, "slow")) == 2, timeout=30), runs(c, "slow")
    slow = runs(c, "slow")
    assert slow[1][0] != NAMES[runner] and slow[1][1] > slow[0][1], slow
    lost = wait_until(lambda: [e for i in alive for e in events(c.nodes[i], "mesh.schedule.lost")], timeout=10)
    assert lost and lost[0]["fields"]["node"] == NAMES[runner], lost
    assert sum(int(mesh_status(c.nodes[i])["schedule_lost"]) for i in alive) >= 1
    # The quick entry goes on, each minute once (five minutes in a row,
    # once the cluster has moved the lock's copies off the dead member).
    def five_in_a_row():
        after = by_minute([r for r in runs(c, "quick") if r[1] > killed_at])
        ms = sorted(after)
        return any(all(after.get(m + k) == 1 for k in range(5)) for m in ms)
    assert wait_until(five_in_a_row, timeout=40), by_minute(runs(c, "quick"))
    assert set(by_minute(runs(c, "quick")).values()) == {1}, by_minute(runs(c, "quick"))
    assert {r[0] for r in runs(c, "quick") if r[1] > killed_at + MINUTE_S} <= {NAMES[i] for i in alive}
