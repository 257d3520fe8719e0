"""A site's background processes and schedule (docs/background.md), with
a real queue: jobs in SQLite pushed by web requests, consumed by workers
the pool keeps running (integration/fixtures/queue_app), a process the
supervisor must back off, one that ignores SIGTERM, and scheduled
commands on a clock sped up for the test (VC_SCHEDULE_MINUTE_MS)."""
import calendar
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request

from conftest import FIXTURES, VC, Suite
from mesh import wait_until as wait_for

APP = os.path.join(FIXTURES, "queue_app")


def app_copy(tmp_path, release=None):
    app = tmp_path / "app"
    shutil.copytree(APP, app)
    if release:
        (app / "RELEASE").write_text(release + "\n")
    return app


def suite_with(tmp_path, app, site_body, env=None, pool=""):
    """A suite whose one site is app, with site_body in its site block."""
    etc = tmp_path / "etc"
    (etc / "sites-enabled").mkdir(parents=True, exist_ok=True)
    (etc / "vc.conf").write_text(f"php: {{ workers = 2; {pool} }};\n")
    (etc / "sites-enabled" / "app.conf").write_text(
        'site: {\n  root = "%s/public";\n  default = true;\n  %s\n};\n' % (app, site_body))
    return Suite(root="", conf=str(etc), env=env)


def get(s, path):
    with urllib.request.urlopen(s.url(path), timeout=10) as r:
        return r.read()


def jobs(s):
    return json.loads(get(s, "/jobs.php"))


def processes(s, site=None):
    r = s.vc("bg", "--json", *([site] if site else []), check=True)
    return json.loads(r.stdout)


def schedule(s):
    return json.loads(s.vc("schedule", "--json", check=True).stdout)


def work_metric(s, name, labels):
    """A counter of site app's background work on the front's /metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{s.admin}/metrics", timeout=5).read().decode()
    m = re.search(r'^%s\{site="app",%s\} (\d+)$' % (name, re.escape(labels)), text, re.M)
    return int(m.group(1)) if m else None


def pool_generation(s):
    # vc status exits 1 while a reloaded pool has no worker yet (unhealthy),
    # and prints its JSON all the same: the generation is read either way.
    r = s.vc("status", "--json")
    return [d for d in json.loads(r.stdout)["daemons"] if d["daemon"] == "vc-php"][0]["status"]["generation"]


def running_pids(s, name):
    return sorted(int(p["pid"]) for p in processes(s) if p["name"] == name and p["state"] in ("running", "starting"))


def test_a_queue_workers_jobs_are_each_run_once_and_the_workers_run_as_the_php_cli(tmp_path):
    app = app_copy(tmp_path, "r1")
    s = suite_with(tmp_path, app, 'background: { queue: { command = "php worker.php --queue=default"; processes = 2; }; };')
    try:
        s.start()
        assert wait_for(lambda: len(running_pids(s, "queue")) == 2), processes(s)
        for _ in range(5):
            get(s, "/push.php?n=8&slow=30")
        assert wait_for(lambda: all(j["state"] == "done" for j in jobs(s)["jobs"])), jobs(s)
        j = jobs(s)
        assert len(j["jobs"]) == 40
        runs = [r["job_id"] for r in j["runs"]]
        assert sorted(runs) == sorted(set(runs)) and len(runs) == 40, "each job ran once"
        # The pool's PHP CLI: PHP_SAPI "cli", $argv, the application's
        # directory as cwd; both processes took jobs.
        logs = s.logs()
        assert re.search(r'app/queue\[\d+\]: worker of r1 ready: sapi cli, argv \["worker.php","--queue=default"\], '
                         r'in ' + re.escape(os.path.realpath(app)), logs), logs
        assert len({r["pid"] for r in j["runs"]}) == 2, j["runs"]
        # vc-php is their parent: they are inside the pool, not beside it.
        php = s.daemon_pid("vc-php")
        for pid in running_pids(s, "queue"):
            with open(f"/proc/{pid}/stat") as f:
                assert int(f.read().rsplit(")", 1)[1].split()[1]) == php
    finally:
        s.stop()
        s.cleanup()


def test_a_worker_killed_mid_job_is_restarted_and_its_job_runs_again_once(tmp_path):
    app = app_copy(tmp_path, "r1")
    s = suite_with(tmp_path, app, 'background: { queue: { command = "php worker.php"; }; };')
    try:
        s.start()
        assert wait_for(lambda: running_pids(s, "queue")), processes(s)
        get(s, "/push.php?n=1&slow=3000")
        held = wait_for(lambda: [j for j in jobs(s)["jobs"] if j["state"] == "reserved"])
        assert held, jobs(s)
        victim = held[0]["reserved_by"]
        os.kill(victim, signal.SIGKILL)
        # Restarted (a new pid), and the job it held runs again, once.
        assert wait_for(lambda: running_pids(s, "queue") and running_pids(s, "queue")[0] != victim)
        assert wait_for(lambda: jobs(s)["jobs"][0]["state"] == "done", timeout=20), jobs(s)
        j = jobs(s)
        assert j["jobs"][0]["attempts"] == 2 and len(j["runs"]) == 2, j
        assert j["runs"][0]["pid"] == victim and j["runs"][1]["pid"] != victim
        p = processes(s)[0]
        assert int(p["restarts"]) == 1 and int(p["starts"]) == 2, p
        assert "app/queue: process exited (killed by signal 9)" in s.logs()
        restarted = s.events_of("php.background.restarted", lambda e: len(e) >= 1)
        assert restarted and restarted[0]["fields"]["status"] == "killed by signal 9", restarted
    finally:
        s.stop()
        s.cleanup()


def test_a_command_that_exits_at_once_is_backed_off_then_left_failed(tmp_path):
    """No fork storm: start_retries = 2 means three starts, 1 s then 2 s
    apart, then failed until `vc bg start`."""
    app = app_copy(tmp_path)
    s = suite_with(tmp_path, app, 'background: { broken: { command = "php exits.php"; start_retries = 2; }; };')
    try:
        s.start()
        failed = s.events_of("php.background.failed", lambda e: len(e) >= 1, timeout=15)
        assert failed, s.logs()
        starts = s.events_of("php.background.started", lambda e: len(e) >= 3)
        assert len(starts) == 3, starts
        at = [calendar.timegm(time.strptime(e["time"][:19], "%Y-%m-%dT%H:%M:%S")) + int(e["time"][20:23]) / 1000
              for e in starts]
        assert 0.8 <= at[1] - at[0] <= 2.5 and 1.8 <= at[2] - at[1] <= 3.5, at
        p = processes(s)[0]
        assert p["state"] == "failed" and p["pid"] == "0", p
        assert "cannot connect to the queue" in s.logs()
        # Failed (no pid, no backoff pending) is what keeps it from starting
        # again; `vc bg start` tries it again.
        assert s.vc("bg", "start", "app", "broken").returncode == 0
        assert wait_for(lambda: len(s.events_of("php.background.started", lambda e: False, timeout=0)) == 4)
        # The front's /metrics counts them, by site and entry.
        assert wait_for(lambda: work_metric(s, "vc_background_events_total", 'name="broken",event="started"') == 4)
        assert work_metric(s, "vc_background_events_total", 'name="broken",event="failed"') == 1
    finally:
        s.stop()
        s.cleanup()


def test_a_process_that_ignores_its_stop_signal_is_killed_at_stop_wait(tmp_path):
    app = app_copy(tmp_path)
    s = suite_with(tmp_path, app, 'background: { stubborn: { command = "php stubborn.php"; stop_wait = "1s"; }; };')
    try:
        s.start()
        first = wait_for(lambda: running_pids(s, "stubborn"))
        assert first, processes(s)
        assert wait_for(lambda: "stubborn up" in s.logs())
        t0 = time.monotonic()
        assert s.vc("bg", "restart", "app", "stubborn").returncode == 0
        assert wait_for(lambda: running_pids(s, "stubborn") and running_pids(s, "stubborn") != first)
        took = time.monotonic() - t0
        assert 0.9 <= took <= 4, took
        logs = s.logs()
        assert "TERM ignored" in logs and "did not stop within 1000 ms: killed" in logs, logs
    finally:
        s.stop()
        s.cleanup()


def test_max_runtime_and_stop_hold_and_start(tmp_path):
    app = app_copy(tmp_path)
    s = suite_with(tmp_path, app, 'background: { queue: { command = "php worker.php"; max_runtime = "1500ms"; }; };')
    try:
        s.start()
        first = wait_for(lambda: running_pids(s, "queue"))
        assert wait_for(lambda: running_pids(s, "queue") and running_pids(s, "queue") != first, timeout=6)
        assert "(max_runtime): SIGTERM" in s.logs()
        # Stopped: held, through a reload too, until started.
        assert s.vc("bg", "stop", "app", "queue").returncode == 0
        assert wait_for(lambda: processes(s)[0]["state"] == "held"), processes(s)
        generation = pool_generation(s)
        assert s.vc("reload").returncode == 0
        # The new generation's configuration reached the background table.
        assert wait_for(lambda: pool_generation(s) != generation)
        assert [p["state"] for p in processes(s)] == ["held"], processes(s)
        assert s.vc("bg", "start", "app", "queue").returncode == 0
        assert wait_for(lambda: running_pids(s, "queue"))
        assert s.vc("bg", "start", "app", "nothing").returncode == 1
    finally:
        s.stop()
        s.cleanup()


def deployer_layout(tmp_path):
    """Deployer's: releases/1 and releases/2, shared/storage linked from
    each, and `current` a link to the first."""
    base = tmp_path / "site"
    (base / "releases").mkdir(parents=True)
    (base / "shared" / "storage").mkdir(parents=True)
    for r in ("1", "2"):
        rel = base / "releases" / r
        shutil.copytree(APP, rel)
        shutil.rmtree(rel / "storage")
        os.symlink("../../shared/storage", rel / "storage")
        (rel / "RELEASE").write_text(f"r{r}\n")
    os.symlink("releases/1", base / "current")
    return base


def flip(base, release):
    tmp = base / "current.tmp"
    os.symlink(f"releases/{release}", tmp)
    os.rename(tmp, base / "current")  # as `ln -sfn` with mv -T: atomic


def test_a_flip_of_current_and_a_reload_move_the_workers_with_no_job_run_twice_or_lost(tmp_path):
    base = deployer_layout(tmp_path)
    etc = tmp_path / "etc"
    (etc / "sites-enabled").mkdir(parents=True)
    (etc / "vc.conf").write_text('php: { workers = 2; writable_dirs = ["%s"]; };\n' % base)
    (etc / "sites-enabled" / "app.conf").write_text(
        'site: {\n  root = "%s/current/public";\n  default = true;\n'
        '  background: { queue: { command = "php worker.php"; processes = 2; }; };\n};\n' % base)
    s = Suite(root="", conf=str(etc))
    stop = threading.Event()
    pushed, errors = [], []

    def producer():
        while not stop.is_set():
            try:
                pushed.extend(json.loads(get(s, "/push.php?n=2&slow=150"))["ids"])
            except Exception as e:  # noqa: BLE001 (every failure is counted)
                errors.append(repr(e))
            time.sleep(0.02)

    try:
        s.start()
        assert wait_for(lambda: len(running_pids(s, "queue")) == 2)
        t = threading.Thread(target=producer)
        t.start()
        time.sleep(1.5)
        old = running_pids(s, "queue")
        flip(base, "2")
        assert s.vc("reload").returncode == 0
        assert wait_for(lambda: running_pids(s, "queue") and not set(running_pids(s, "queue")) & set(old))
        time.sleep(1.5)
        stop.set()
        t.join()
        assert not errors, errors[:5]
        assert wait_for(lambda: all(j["state"] == "done" for j in jobs(s)["jobs"]), timeout=30), jobs(s)
        j = jobs(s)
        runs = [r["job_id"] for r in j["runs"]]
        assert len(runs) == len(set(runs)) == len(pushed) == len(j["jobs"]), "no job run twice, none lost"
        releases = [r["release"] for r in j["runs"]]
        assert releases[0] == "r1" and releases[-1] == "r2", releases
        # Never both at once: every run of r1 ended before any run of r2
        # started (the old workers finished their job, then the new came).
        last_old = max(r["ended"] for r in j["runs"] if r["release"] == "r1")
        first_new = min(r["started"] for r in j["runs"] if r["release"] == "r2")
        assert last_old <= first_new, (last_old, first_new)
        assert processes(s)[0]["dir"].endswith("/releases/2")
    finally:
        stop.set()
        s.stop()
        s.cleanup()


def test_a_schedule_runs_each_minute_and_never_overlaps_a_slow_run(tmp_path):
    """A minute is 400 ms here. The fast entry runs each minute; the slow
    one takes two and a half minutes, so it skips the minutes in between
    and never runs twice at once."""
    app = app_copy(tmp_path)
    (app / "storage" / "fast").mkdir()
    s = suite_with(tmp_path, app, 'schedule = [ "* * * * * php tick.php 1000", "*/1 * * * * touch storage/fast/x" ];',
                   env={"VC_SCHEDULE_MINUTE_MS": "400"})
    try:
        s.start()
        assert wait_for(lambda: [e for e in schedule(s) if e["line"].startswith("* * * * * php")
                                 and int(e["runs"]) >= 3 and int(e["skipped"]) >= 3], timeout=20), schedule(s)
        ticks = (app / "storage" / "ticks").read_text().split("\n")
        assert not [t for t in ticks if t.startswith("overlap")], ticks
        spans = [tuple(map(float, t.split()[1:])) for t in ticks if t.startswith("run")]
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:])), spans
        fast = [e for e in schedule(s) if "touch" in e["line"]][0]
        assert int(fast["runs"]) >= 5 and fast["last_status"] == "exit 0" and fast["skipped"] == "0", fast
        assert s.events_of("php.schedule.skipped", lambda e: len(e) >= 1)
        assert s.events_of("php.schedule.finished", lambda e: len(e) >= 3)
        slow = [e for e in schedule(s) if e["line"].startswith("* * * * * php")][0]
        assert wait_for(lambda: work_metric(s, "vc_schedule_runs_total", f'name="{slow["name"]}",outcome="skipped"')
                        >= int(slow["skipped"]))
    finally:
        s.stop()
        s.cleanup()


def laravel_jobs(app):
    """{n: [(kind, attempt, pid)]} from the Illuminate app's storage/jobs.log."""
    out = {}
    try:
        with open(app / "storage" / "jobs.log") as f:
            for kind, n, attempt, pid in (line.split() for line in f if line.strip()):
                out.setdefault(int(n), []).append((kind, int(attempt), int(pid)))
    except FileNotFoundError:
        pass
    return out


def test_an_illuminate_queue_worker_runs_each_job_once_stops_after_its_job_and_retries_a_killed_one(tmp_path):
    """Debian's php-illuminate-queue (Laravel 8's Worker, its database
    driver on SQLite) as two background processes: jobs pushed by web
    requests each run once, by both workers; `vc bg restart` (SIGTERM)
    lets a running job finish, and it is not run again; a worker killed
    mid-job is started again, and its job runs again once, after
    retry_after (6 s here: a 1.5 s job on a loaded machine must not outlast
    it, or another worker takes it too), as its second attempt."""
    app = tmp_path / "app"
    shutil.copytree(os.path.join(FIXTURES, "laravel_queue"), app)
    s = suite_with(tmp_path, app, 'background: { laravel: { command = "php worker.php"; processes = 2; }; };')
    try:
        s.start()
        # Both workers polling before the jobs come: one started late on a
        # loaded machine could otherwise find every job already taken.
        assert wait_for(lambda: len(set(re.findall(r"worker (\d+) ready", s.logs()))) == 2, timeout=30), s.logs()
        assert get(s, "/push.php?from=1&count=30&ms=100") == b"pushed 30\n"
        assert wait_for(lambda: len([n for n, r in laravel_jobs(app).items() if ("done", 1) in
                                     [(k, a) for k, a, _ in r]]) == 30, timeout=30), laravel_jobs(app)
        done = laravel_jobs(app)
        assert all(len(r) == 2 for r in done.values()), done  # one start, one done: each job once
        assert len({pid for r in done.values() for _, _, pid in r}) == 2, done  # both workers took jobs
        # SIGTERM mid-job: the job finishes, the worker stops, a new one starts.
        assert get(s, "/push.php?from=100&count=1&ms=1500") == b"pushed 1\n"
        assert wait_for(lambda: 100 in laravel_jobs(app))
        runner = laravel_jobs(app)[100][0][2]
        assert s.vc("bg", "restart", "app", "laravel").returncode == 0
        assert wait_for(lambda: laravel_jobs(app)[100][-1][0] == "done", timeout=10)
        assert wait_for(lambda: runner not in [int(p["pid"]) for p in processes(s)] and
                        all(p["state"] in ("starting", "running") for p in processes(s)), timeout=15)
        assert json.loads(get(s, "/jobs.php")) == 0  # deleted: it cannot run again
        assert f"worker {runner} stopped" in s.logs()
        # kill -9 mid-job: started again by the pool, and the job runs
        # again once, as attempt 2, once retry_after has passed.
        assert get(s, "/push.php?from=200&count=1&ms=1500") == b"pushed 1\n"
        assert wait_for(lambda: 200 in laravel_jobs(app))
        victim = laravel_jobs(app)[200][0][2]
        os.kill(victim, signal.SIGKILL)
        assert wait_for(lambda: [k for k, _, _ in laravel_jobs(app)[200]].count("done") == 1, timeout=30), \
            laravel_jobs(app)[200]
        runs = laravel_jobs(app)[200]
        assert [(k, a) for k, a, _ in runs] == [("start", 1), ("start", 2), ("done", 2)], runs
        assert wait_for(lambda: json.loads(get(s, "/jobs.php")) == 0)
    finally:
        s.stop()
        s.cleanup()


def test_vc_bg_logs_shows_one_entrys_lines_and_follows_them(tmp_path):
    """A suite started with `vc up -d` logs to DATA's log directory: `vc bg
    logs SITE NAME` prints that entry's lines (not another's), and with
    --follow the lines still to come, until Ctrl-C."""
    app = app_copy(tmp_path)
    s = suite_with(tmp_path, app, 'background: { ticker: { command = "php ticker.php tick"; };'
                                  ' other: { command = "php ticker.php other"; }; };')
    r = subprocess.run([VC, "--data", s.data, "--conf", s.conf, "up", "-d", "--listen", f"127.0.0.1:{s.http}",
                        "--tls-listen", f"127.0.0.1:{s.https}"], capture_output=True, text=True, timeout=60,
                       env=s.env, cwd=s.dir)
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        def ticks():
            out = s.vc("bg", "logs", "app", "ticker", check=True).stdout
            return [int(m) for m in re.findall(r"background: app/ticker\[\d+\]: tick (\d+)$", out, re.M)]
        assert wait_for(lambda: len(ticks()) >= 2), s.vc("bg", "logs", "app", "ticker").stdout
        assert "other" not in s.vc("bg", "logs", "app", "ticker", check=True).stdout
        last = max(ticks())
        follow = subprocess.Popen([VC, "--data", s.data, "--conf", s.conf, "bg", "logs", "app", "ticker", "--follow"],
                                  stdout=subprocess.PIPE, text=True, env=s.env, cwd=s.dir)
        try:
            newer = None
            for line in follow.stdout:
                m = re.search(r"tick (\d+)$", line)
                if m and int(m.group(1)) > last + 2:
                    newer = int(m.group(1))
                    break
            assert newer, "no line came after the log's end"
        finally:
            follow.send_signal(signal.SIGINT)
            assert follow.wait(timeout=10) == 0
        assert s.vc("bg", "logs", "app", "nothing", check=True).stdout == ""
    finally:
        s.vc("stop", timeout=60)


def test_bad_background_and_schedule_settings_are_refused_with_their_line(make_suite, tmp_path):
    app = app_copy(tmp_path)
    cases = [
        ('background: { q: { command = "php nothere.php"; }; };', r'background\.q\.command: "nothere\.php" is no PHP'),
        ('background: { q: { command = "nosuchprogram --x"; }; };', r'"nosuchprogram" is no program on the PATH'),
        ('background: { q: { command = "php worker.php"; processes = 0; }; };', r"processes: 0 is out of range"),
        ('background: { q: { command = "php worker.php"; processes = 10000; }; };', r"processes: 10000 is out of"),
        ('background: { q: { command = "php worker.php"; stop_signal = "KILL"; }; };', r'stop_signal "KILL" is not'),
        ('background: { Q: { command = "php worker.php"; }; };', r"a name is 1 to 32 of a-z"),
        ('schedule = [ "* * * * * * php tick.php" ];', r"six time fields"),
        ('schedule = [ "61 * * * * php tick.php" ];', r'"61" is not a valid minute'),
        ('schedule = [ "0 0 31 feb * php tick.php" ];', r"names no day that exists"),
        ('schedule = [ "@reboot php tick.php" ];', r'"@reboot" is not one of'),
        ('schedule = [ "* * * * * php tick.php" ]; timezone = "Nowhere/Land";', r"is not a time zone"),
    ]
    for body, why in cases:
        etc = tmp_path / "etc"
        shutil.rmtree(etc, ignore_errors=True)
        (etc / "sites-enabled").mkdir(parents=True)
        (etc / "vc.conf").write_text("\n")
        (etc / "sites-enabled" / "x.conf").write_text(
            'site: {\n  root = "%s/public";\n  default = true;\n  %s\n};\n' % (app, body))
        r = make_suite(root="", conf=str(etc)).vc("configtest")
        assert r.returncode != 0, body
        assert re.search(r"sites-enabled/x\.conf:[1-4]: .*" + why, r.stderr), (body, r.stderr)


PROBE = r"""<?php
// What a background process may touch, printed once as JSON, then it
// stays (the test reads its /proc).
function can_read($p) { return @file_get_contents($p) !== false; }
$data = $argv[1];
echo json_encode([
    'euid' => posix_geteuid(),
    'sapi' => PHP_SAPI,
    'read_other' => can_read($argv[2] . '/walk.php'),
    'read_tls_key' => can_read("$data/tls/selfsigned.key"),
    'read_lmdb' => can_read("$data/state/data.mdb"),
    'read_shadow' => can_read('/etc/shadow'),
    'write_other' => @file_put_contents($argv[2] . '/evil.php', 'x') !== false,
]), "\n";
while (true) {
    sleep(1);
}
"""


def test_a_background_process_is_its_pools_user_inside_its_wall():
    """Under the privilege model (started as root): site B's background
    process runs as pool shop's user (nobody), with no capabilities, in
    the pool's mount namespace, and cannot read site A's files, the
    suite's TLS key or its store."""
    from test_12_privileges import Hosting, need_root, proc_status

    need_root()
    h = Hosting("vc", "www-data", "nobody", "nogroup")
    b = h.roots["b"]
    with open(os.path.join(b, "probe.php"), "w") as f:
        f.write(PROBE)
    os.chown(os.path.join(b, "probe.php"), 65534, 65534)
    conf = os.path.join(h.conf, "sites-enabled", "b.conf")
    text = open(conf).read().rstrip().rstrip(";").rstrip().rstrip("}")
    s = Suite(root="", conf=h.conf, as_root=False)
    with open(conf, "w") as f:
        f.write(text + 'background: { probe: { command = "php probe.php %s %s"; }; }; };\n' % (s.data, h.roots["a"]))
    try:
        s.start()
        line = wait_for(lambda: re.search(r"b/probe\[(\d+)\]: (\{.*\})", s.logs()))
        assert line, s.logs()[-3000:]
        pid, seen = int(line.group(1)), json.loads(line.group(2))
        assert seen == {"euid": 65534, "sapi": "cli", "read_other": False, "read_tls_key": False, "read_lmdb": False,
                        "read_shadow": False, "write_other": False}, seen
        st = proc_status(pid)
        assert st["Uid"].split()[1] == "65534" and int(st["CapEff"], 16) == 0, st
        shop = [d for d in s.status()["daemons"] if d["daemon"] == "vc-php.shop"][0]
        assert os.readlink(f"/proc/{pid}/ns/mnt") == os.readlink(f"/proc/{shop['pid']}/ns/mnt")
        assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        # Its events are the pool's, which the bus takes from the pool's
        # user ("php." topics only): they reach it.
        started = s.events_of("php.background.started", lambda e: len(e) >= 1)
        assert started and started[0]["fields"]["site"] == "b" and started[0]["fields"]["pid"] == str(pid), started
    finally:
        s.stop()
        s.cleanup()
        h.cleanup()
