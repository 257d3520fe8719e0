"""Hostile clients and careless operators (docs/SECURITY.md): what one
client asks must not cost the suite more than it is owed, and a mistake
of the operator's is refused with its reason, never acted on silently."""
import os
import re
import socket
import subprocess

import pytest
import requests

from conftest import VC, Suite, alive, curl, free_port, site_symlink
from test_04_php_pool import wait_for

SIZE = 20 * 1024 * 1024


@pytest.fixture(scope="module")
def big():
    s = Suite(root=None)
    root = os.path.join(s.dir, "root")
    os.mkdir(root)
    os.chmod(root, 0o755)
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.truncate(SIZE)  # sparse: reading it costs no disk
    with open(os.path.join(root, "small.txt"), "wb") as f:
        f.write(bytes(range(256)) * 4)  # 1,024 bytes, each offset tells its position
    s.root = root
    s.start()
    yield s
    s.stop()
    s.cleanup()


def head_of(port, path, rng, read_body=False):
    """Sends one GET with the Range header; returns (status, headers, body
    if asked): only the head of a huge answer is ever read."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nRange: {rng}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
        if read_body:
            want = int(hdrs.get("content-length", "0"))
            while len(body) < want:
                chunk = c.recv(65536)
                if not chunk:
                    break
                body += chunk
        return status, hdrs, body


def test_overlapping_ranges_get_the_whole_file_once(big):
    """CVE-2011-3192's shape: 1,000 times "0-" was one 206 of 1,000 copies."""
    status, hdrs, _ = head_of(big.http, "/big.bin", "bytes=" + ",".join(["0-"] * 1000))
    assert status == 200 and int(hdrs["content-length"]) == SIZE, (status, hdrs)
    status, hdrs, _ = head_of(big.http, "/big.bin", "bytes=0-,0-")
    assert status == 200 and int(hdrs["content-length"]) == SIZE, (status, hdrs)


def test_too_many_ranges_get_the_whole_file(big):
    rng = "bytes=" + ",".join(f"{i * 60}-{i * 60 + 9}" for i in range(17))
    status, hdrs, _ = head_of(big.http, "/small.txt", rng, read_body=True)
    assert status == 200 and int(hdrs["content-length"]) == 1024, (status, hdrs)
    # Sixteen apart are served as asked.
    rng = "bytes=" + ",".join(f"{i * 60}-{i * 60 + 9}" for i in range(16))
    status, hdrs, _ = head_of(big.http, "/small.txt", rng)
    assert status == 206 and hdrs["content-type"].startswith("multipart/byteranges"), (status, hdrs)


@pytest.mark.parametrize("rng,first,last", [
    ("bytes=0-9,5-19", 0, 19),      # overlapping
    ("bytes=10-19,0-9", 0, 19),     # touching, out of order
    ("bytes=100-199,150-", 100, 1023),
    ("bytes=-24,1000-1010", 1000, 1023),
])
def test_overlapping_or_touching_ranges_are_merged(big, rng, first, last):
    status, hdrs, body = head_of(big.http, "/small.txt", rng, read_body=True)
    assert status == 206, (status, hdrs)
    assert hdrs["content-range"] == f"bytes {first}-{last}/1024", hdrs
    assert body == (bytes(range(256)) * 4)[first:last + 1]


def test_ordinary_ranges_are_untouched(big):
    status, hdrs, body = head_of(big.http, "/small.txt", "bytes=-5", read_body=True)
    assert status == 206 and hdrs["content-range"] == "bytes 1019-1023/1024" and len(body) == 5
    status, hdrs, _ = head_of(big.http, "/small.txt", "bytes=2000-3000")
    assert status == 416, (status, hdrs)
    status, hdrs, _ = head_of(big.http, "/small.txt", "bytes=0-1,10-11")
    assert status == 206 and hdrs["content-type"].startswith("multipart/byteranges")


def tamed(s):
    import re
    import requests
    text = requests.get(f"http://127.0.0.1:{s.admin}/metrics", timeout=5).text
    return sum(int(v) for v in re.findall(r"^vc_front_ranges_tamed_total\{[^}]*\} (\d+)$", text, re.M))


def test_tamed_ranges_are_counted(big):
    before = tamed(big)
    head_of(big.http, "/small.txt", "bytes=0-1")  # one range: untouched
    assert tamed(big) == before
    head_of(big.http, "/small.txt", "bytes=0-1,1-2")
    assert tamed(big) == before + 1


# ---- the operator ---------------------------------------------------------


def test_a_port_another_suite_holds_is_refused(make_suite):
    """SO_REUSEPORT let a second suite bind the first one's port, and the
    kernel split the clients between the two."""
    first = make_suite().start()
    second = make_suite()
    r = second.vc("up", "--root", second.root, "--listen", f"127.0.0.1:{first.http}", "--tls-listen",
                  f"127.0.0.1:{second.https}", timeout=30)
    assert r.returncode != 0 and "another suite, holds this port" in r.stdout + r.stderr, (r.stdout, r.stderr)
    for _ in range(20):
        code, _, body = curl(first.url("/hello.php"))
        assert code == 200 and body == b"hello world\n"


def test_one_address_for_two_uses_is_refused(make_suite):
    s = make_suite()
    s.env["VC_ADMIN_LISTEN"] = f"127.0.0.1:{s.http}"
    r = s.vc("up", "--root", s.root, "--listen", f"127.0.0.1:{s.http}", "--tls-listen", f"127.0.0.1:{s.https}",
             timeout=30)
    assert r.returncode != 0 and "are the same address" in r.stderr, r.stderr
    s.env["VC_LISTEN"] = f"127.0.0.1:{s.http}"
    r = s.vc("configtest")
    assert r.returncode != 0 and "are the same address" in r.stderr, r.stderr


def test_two_suites_started_together_on_one_data_directory(make_suite):
    """The loser deleted the winner's pid file: then neither status, reload
    nor stop could reach the winner."""
    s = make_suite()
    procs, logs = [], []
    for i in range(2):
        cmd = [VC, "--data", s.data, "up", "--root", s.root, "--listen", f"127.0.0.1:{free_port()}",
               "--tls-listen", f"127.0.0.1:{free_port()}"]
        logs.append(os.path.join(s.dir, f"up{i}.log"))
        with open(logs[-1], "w") as log:
            procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=s.env, cwd=s.dir))
    try:
        assert s.vc("status", "--wait", "20", timeout=30).returncode == 0
        # Exactly one gave up at once, saying why.
        assert wait_for(lambda: sum(p.poll() is not None for p in procs) == 1, timeout=10)
        loser = [i for i, p in enumerate(procs) if p.poll() is not None][0]
        with open(logs[loser]) as f:
            out = f.read()
            assert "already runs" in out or "is starting under" in out, out
        winner = procs[1 - loser]
        with open(os.path.join(s.data, "run", "vc.pid")) as f:
            assert int(f.read()) == winner.pid
        r = s.vc("stop", timeout=30)
        assert r.returncode == 0, r.stderr
        winner.wait(timeout=10)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_a_stale_pid_file_naming_another_process_is_not_signalled(make_suite):
    s = make_suite()
    os.makedirs(os.path.join(s.data, "run"))
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        with open(os.path.join(s.data, "run", "vc.pid"), "w") as f:
            f.write(str(bystander.pid))
        r = s.vc("stop")
        assert r.returncode != 0 and "not its supervisor: not signalled" in r.stderr, r.stderr
        assert bystander.poll() is None, "vc stop signalled a process that is not its supervisor"
    finally:
        bystander.kill()
        bystander.wait()


# ---- PHP processes ----------------------------------------------------------

DOCROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "docroot")


@pytest.mark.parametrize("mode", ["classic", "fork"])  # a worker lent to the front, and one the broker relays
def test_a_script_after_fastcgi_finish_request_has_the_same_time_limit(make_suite, tmp_path, mode):
    """Only busy workers were killed past max_execution_time + kill_grace:
    four scripts sleeping after fastcgi_finish_request() took the pool
    for good."""
    import time
    import requests
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text('php: { workers = 1; ini = ["max_execution_time=1"]; kill_grace = "300ms"; };\n')
    s = make_suite(root=DOCROOT, conf=str(conf), args=["--mode", mode]).start()
    t0 = time.monotonic()
    r = requests.get(s.url("/finish.php?ms=20000&tag=limit"), timeout=10)
    assert r.text == "answered\n" and time.monotonic() - t0 < 1
    r = requests.get(s.url("/hello.php"), timeout=15)
    assert r.status_code == 200 and time.monotonic() - t0 < 5, time.monotonic() - t0
    assert "killing it" in s.logs()


def test_a_forked_child_never_answers_for_its_worker(make_suite):
    """pcntl_fork() in a script left a child that returned into the worker's
    loop with the worker's link: clients got its answers, bodies were
    split between two readers. It exits at its first touch of the link."""
    import requests
    s = make_suite(root=DOCROOT, args=["--workers", "1"]).start()
    for _ in range(5):
        r = requests.get(s.url("/spawn.php?fork=1"), timeout=10)
        assert r.status_code == 200 and "child" not in r.text, r.text
        child = int(r.text.split()[1])
        assert wait_for(lambda: not alive(child), timeout=5), f"the forked child {child} lives on"
    for _ in range(20):
        r = requests.post(s.url("/echo.php"), data=b"x" * 100000, timeout=10)
        assert r.status_code == 200 and len(r.content) == 100000
    assert "forked by a script, reached the worker's link" in s.logs()


@pytest.mark.parametrize("how", ["recycled", "stopped"])
def test_nothing_a_script_starts_outlives_its_worker(make_suite, how):
    """A command left running with "&" survived `vc stop`; it ends with
    its worker (its process group), recycled or stopped."""
    import requests
    env = {"VC_MAX_REQUESTS": "1"} if how == "recycled" else {}
    s = make_suite(root=DOCROOT, args=["--workers", "1"], env=env).start()
    r = requests.get(s.url("/spawn.php"), timeout=10)
    sleeper = int(r.text.split()[0])
    assert alive(sleeper) or how == "recycled"
    if how == "recycled":
        requests.get(s.url("/hello.php"), timeout=10)  # served by the next worker
    else:
        s.stop()
    assert wait_for(lambda: not alive(sleeper), timeout=5), f"pid {sleeper} outlived its worker"


def test_configtest_tells_the_truth(make_suite, tmp_path):
    """Each of these passed configtest, and the suite then ran without a
    php.ini (display_errors=1), failed at boot, or moved nothing."""
    s = make_suite()
    r = subprocess.run([VC, "--data", s.data, "--conf", str(tmp_path / "nope"), "configtest"], capture_output=True,
                       text=True, env=s.env, timeout=30)
    assert r.returncode != 0 and 'the configuration directory "' in r.stderr and "does not exist" in r.stderr
    cases = [
        ({"VC_PHP_INI_FILE": "/no/such/php.ini"}, 'php.ini_file: "/no/such/php.ini" cannot be read'),
        ({"VC_MODE": "worker", "VC_WORKER_SCRIPT": "/no/such/worker.php"},
         'php.worker_script: "/no/such/worker.php" cannot be read'),
    ]
    for env, message in cases:
        s.env.update(env)
        r = s.vc("configtest")
        assert r.returncode != 0 and message in r.stderr, (env, r.stderr)
        r = s.vc("up", "--root", s.root, "--listen", f"127.0.0.1:{s.http}", "--tls-listen", f"127.0.0.1:{s.https}",
                 timeout=30)
        assert r.returncode != 0 and message in r.stderr, (env, r.stderr)
        for k in env:
            del s.env[k]
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text('endpoints: {\n  phpp = "tcp://127.0.0.1:9";\n};\n')
    r = subprocess.run([VC, "--data", s.data, "--conf", str(conf), "configtest"], capture_output=True, text=True,
                       env=s.env, timeout=30)
    assert r.returncode != 0 and "vc.conf:2: endpoints.phpp: not an endpoint of the suite" in r.stderr, r.stderr


def test_scale_keeps_to_the_configurations_range(make_suite):
    s = make_suite(args=["--workers", "2"]).start()
    r = s.vc("scale", "4096")
    assert r.returncode != 0 and "1 to 1024" in r.stderr, r.stderr
    assert s.vc("scale", "3").returncode == 0


def test_a_data_directory_another_user_made_is_refused(make_suite, tmp_path):
    """Made beforehand by another user, mode 0777, with log/access.log a
    link to a root-only file: the suite appended client-controlled lines to
    that file. Started as root, it refuses such a directory."""
    if os.geteuid() != 0:
        pytest.skip("only a suite started as root follows links it should not; this run is not root")
    import pwd
    s = make_suite()
    nobody = pwd.getpwnam("nobody")
    os.makedirs(os.path.join(s.data, "log"))
    for d in (s.data, os.path.join(s.data, "log")):
        os.chown(d, nobody.pw_uid, nobody.pw_gid)
        os.chmod(d, 0o777)
    victim = tmp_path / "root-only"
    victim.write_text("untouched\n")
    os.chmod(victim, 0o600)
    os.symlink(victim, os.path.join(s.data, "log", "access.log"))
    r = s.vc("up", "--root", s.root, "--listen", f"127.0.0.1:{s.http}", "--tls-listen", f"127.0.0.1:{s.https}",
             timeout=30)
    assert r.returncode != 0 and "is not safe" in r.stderr and "owned by another user" in r.stderr, r.stderr
    assert victim.read_text() == "untouched\n"


def test_the_access_log_is_never_opened_through_a_link(make_suite, tmp_path):
    """A link planted where the access log goes (by whoever could write
    there): the front refuses to start rather than write through it."""
    s = make_suite()
    os.makedirs(os.path.join(s.data, "log"))
    victim = tmp_path / "elsewhere"
    victim.write_text("untouched\n")
    os.symlink(victim, os.path.join(s.data, "log", "access.log"))
    with pytest.raises(AssertionError, match="did not become healthy"):
        s.start(wait=5)
    assert "it is a symlink: remove it" in s.logs()
    assert victim.read_text() == "untouched\n"


@pytest.mark.parametrize("damage", ["cut", "empty", "scribbled"])
def test_a_damaged_state_store_is_refused_with_the_way_out(make_suite, damage):
    """A cut data.mdb killed `vc up` with SIGBUS and nothing logged; an
    empty one was a new store, silently."""
    s = make_suite().start()
    s.stop()
    data = os.path.join(s.data, "state", "data.mdb")
    size = os.path.getsize(data)
    assert size > 4 * 4096, size
    with open(data, "r+b") as f:
        if damage == "cut":
            f.truncate(4 * 4096)
        elif damage == "empty":
            f.truncate(0)
        else:
            f.write(os.urandom(8192))
    r = s.vc("up", "--root", s.root, "--listen", f"127.0.0.1:{s.http}", "--tls-listen", f"127.0.0.1:{s.https}",
             timeout=30)
    assert r.returncode == 1, (r.returncode, r.stderr)  # refused, not a signal
    assert "move the state directory away" in r.stderr, r.stderr
    os.rename(os.path.join(s.data, "state"), os.path.join(s.data, "state.damaged"))
    s.start()  # the way out works
    code, _, body = curl(s.url("/hello.php"))
    assert code == 200


# ---- connection floods --------------------------------------------------------


def flood_suite(make_suite, tmp_path, front):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text(f"front: {{ {front} }};\n")
    return make_suite(conf=str(conf)).start()


def idle_sockets(port, n, source="127.0.0.2"):
    out = []
    for _ in range(n):
        c = socket.socket()
        c.bind((source, 0))
        c.connect(("127.0.0.1", port))
        out.append(c)
    return out


def served(port, source="127.0.0.1", timeout=3):
    try:
        with socket.socket() as c:
            c.settimeout(timeout)
            c.bind((source, 0))
            c.connect(("127.0.0.1", port))
            c.sendall(b"GET /hello.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return c.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def test_one_address_cannot_take_every_connection(make_suite, tmp_path):
    s = flood_suite(make_suite, tmp_path, "max_connections_per_address = 5;")
    held = idle_sockets(s.http, 5)
    try:
        extra = idle_sockets(s.http, 1)[0]
        extra.settimeout(5)
        assert extra.recv(1) == b"", "a sixth connection from one address was kept"
        extra.close()
        assert served(s.http, "127.0.0.1"), "another address was not served"
    finally:
        for c in held:
            c.close()
    # Its count goes down as its connections close: it is served again.
    import test_04_php_pool
    assert test_04_php_pool.wait_for(lambda: served(s.http, "127.0.0.2", timeout=1), timeout=5)


def test_at_the_limit_the_longest_idle_connection_makes_room(make_suite, tmp_path):
    s = flood_suite(make_suite, tmp_path, "max_connections = 5;")
    held = idle_sockets(s.http, 5)
    try:
        # Refused at once while none has been idle a watchdog tick; then
        # the oldest idle one is closed for the new client.
        assert wait_for(lambda: served(s.http, timeout=1), timeout=5), "no room was made for a new client"
        closed = 0
        for c in held:
            c.settimeout(0.5)
            try:
                closed += c.recv(1) == b""
            except socket.timeout:
                pass
        assert closed >= 1
    finally:
        for c in held:
            c.close()


def test_a_connection_that_sends_no_request_is_closed_early(make_suite, tmp_path):
    import time
    s = flood_suite(make_suite, tmp_path, 'header_timeout = "1s"; idle_timeout = "60s";')
    c = idle_sockets(s.http, 1, "127.0.0.1")[0]
    t0 = time.monotonic()
    c.settimeout(8)
    assert c.recv(1) == b""
    assert 0.9 < time.monotonic() - t0 < 4, time.monotonic() - t0
    c.close()
    # A kept-alive connection between requests has the idle timeout.
    with socket.create_connection(("127.0.0.1", s.http)) as k:
        k.sendall(b"GET /hello.php HTTP/1.1\r\nHost: x\r\n\r\n")
        assert k.recv(4096).startswith(b"HTTP/1.1 200")
        k.settimeout(3)
        with pytest.raises(socket.timeout):
            k.recv(1)


def test_a_slow_first_upload_outlives_the_header_timeout(make_suite, tmp_path):
    """A first request whose body arrives at over 500 bytes a second is
    progress: h2o holds the request until its body is whole, so it is not
    yet a request, but it is not idle either."""
    import time
    s = flood_suite(make_suite, tmp_path, 'header_timeout = "1s"; idle_timeout = "60s";')
    body = b"a" * 12000
    with socket.create_connection(("127.0.0.1", s.http), timeout=10) as c:
        c.sendall(b"POST /echo.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        t0 = time.monotonic()
        for i in range(0, len(body), 1000):  # 1,000 bytes every 0.25 s: 3 s in all
            c.sendall(body[i:i + 1000])
            time.sleep(max(0, t0 + (i // 1000 + 1) * 0.25 - time.monotonic()))
        got = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            got += chunk
    assert got.startswith(b"HTTP/1.1 200"), got[:200]


def evicted(s):
    text = requests.get(f"http://127.0.0.1:{s.admin}/metrics").text
    return int(re.search(r'vc_front_connections_evicted_total\{front="vc-front"\} (\d+)', text).group(1))


def test_an_address_at_its_limit_does_not_evict_another_clients_connection(make_suite, tmp_path):
    import time
    s = flood_suite(make_suite, tmp_path, "max_connections = 4; max_connections_per_address = 2;")
    held = idle_sockets(s.http, 2, "127.0.0.3") + idle_sockets(s.http, 2, "127.0.0.2")
    try:
        # 127.0.0.2 is at its own limit: each new connection of its is
        # refused, for long enough that the others are idle (watchdog
        # ticks), and nobody's connection goes for it.
        t0 = time.monotonic()
        while time.monotonic() - t0 < 2.5:
            extra = idle_sockets(s.http, 1, "127.0.0.2")[0]
            extra.settimeout(5)
            assert extra.recv(1) == b""
            extra.close()
        assert evicted(s) == 0
        # Another address is given room: the idle connections could go.
        assert served(s.http, "127.0.0.1")
        assert evicted(s) == 1
    finally:
        for c in held:
            c.close()


# ---- static files: the kernel keeps them beneath the root -----------------


@pytest.fixture
def linked(make_suite, tmp_path):
    """A root with a relative symlink that a site's own code can switch,
    and a secret beside the root, outside it."""
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "inside.txt").write_text("inside\n")
    (root / "sub" / "deep.txt").write_text("deep\n")
    (tmp_path / "secret.txt").write_text("SECRET\n")
    site_symlink("inside.txt", root / "link.txt")
    site_symlink("sub", root / "dirlink")
    for p in (tmp_path, root, root / "sub"):
        os.chmod(p, 0o755)
    s = make_suite(root=str(root)).start()
    return s, root, tmp_path


def switch(link, target):
    """Points link at target in one rename, as an attacker's script would."""
    tmp = str(link) + ".new"
    site_symlink(target, tmp)
    os.rename(tmp, link)


def test_a_symlink_switched_out_of_the_root_is_never_followed(linked):
    s, root, outside = linked
    code, _, body = curl(s.url("/link.txt"))
    assert (code, body) == (200, b"inside\n")  # the path cache now holds it
    assert curl(s.url("/dirlink/deep.txt"))[0] == 200  # a relative link inside works
    # Switched within the path cache's second: the route's check still
    # says inside, and the kernel refuses the open.
    for target in (str(outside / "secret.txt"), "../secret.txt"):
        switch(root / "link.txt", target)
        code, _, body = curl(s.url("/link.txt"))
        assert b"SECRET" not in body and code == 404, (target, code, body)
        switch(root / "link.txt", "inside.txt")
        assert curl(s.url("/link.txt"))[:3:2] == (200, b"inside\n")
    switch(root / "link.txt", str(root / "inside.txt"))  # absolute, even to inside: refused
    assert curl(s.url("/link.txt"))[0] == 404
    switch(root / "dirlink", str(outside))  # a directory on the way out
    code, _, body = curl(s.url("/dirlink/secret.txt"))
    assert b"SECRET" not in body and code == 404, (code, body)
    text = requests.get(f"http://127.0.0.1:{s.admin}/metrics").text
    assert int(re.search(r'vc_front_static_escapes_total\{front="vc-front"\} (\d+)', text).group(1)) >= 2
    assert "resolves outside the site's root" in s.logs()


def test_a_replaced_root_is_served_from_the_next_turn(make_suite, tmp_path):
    """The root's descriptor is kept for a turn of the loop, not for good:
    a root directory replaced by rename (a deploy's new release) is
    served at once, as when files were opened by path."""
    for n in ("1", "2"):
        (tmp_path / f"release{n}").mkdir()
        (tmp_path / f"release{n}" / "v.txt").write_text(f"release {n}\n")
        os.chmod(tmp_path / f"release{n}", 0o755)
    os.chmod(tmp_path, 0o755)
    os.rename(tmp_path / "release1", tmp_path / "site")
    s = make_suite(root=str(tmp_path / "site")).start()
    assert curl(s.url("/v.txt"))[2] == b"release 1\n"
    os.rename(tmp_path / "site", tmp_path / "release1")
    os.rename(tmp_path / "release2", tmp_path / "site")
    assert wait_for(lambda: curl(s.url("/v.txt"))[2] == b"release 2\n", timeout=3)


def test_a_script_path_switched_out_of_the_root_is_refused_by_open_basedir(make_suite, tmp_path):
    """Scripts are opened by path (docs/SECURITY.md, known limits): inside
    the front's path-cache second, a directory of the root swapped for a
    link out of it reaches the worker, and open_basedir (when on) refuses
    the script outside; no script can turn it off."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "app").mkdir(parents=True)
    (outside / "app").mkdir(parents=True)
    (root / "app" / "index.php").write_text(
        "<?php echo 'INSIDE', ini_set('open_basedir', '') === false ? ' locked' : ' open';")
    (outside / "app" / "index.php").write_text("<?php echo 'ESCAPED';")
    for p in (tmp_path, root, root / "app", outside, outside / "app"):
        os.chmod(p, 0o755)
    s = make_suite(root=str(root), env={"VC_OPEN_BASEDIR": "true"}).start()
    assert curl(s.url("/app/index.php"))[2] == b"INSIDE locked"
    os.rename(root / "app", root / "app.old")
    site_symlink(outside / "app", root / "app")
    code, _, body = curl(s.url("/app/index.php"))
    assert b"ESCAPED" not in body, (code, body)


def test_an_uploaded_script_outside_the_entry_scripts_never_runs(make_suite, tmp_path):
    """site.entry_scripts (docs/front.md): with WordPress's entry points
    listed, a shell.php uploaded under wp-content/uploads/ is as if it were
    not there: the front controller answers, or 404 without one."""
    root = tmp_path / "wp"
    (root / "wp-content" / "uploads").mkdir(parents=True)
    (root / "wp-admin" / "network").mkdir(parents=True)
    (root / "index.php").write_text("<?php echo 'FRONT ', $_SERVER['REQUEST_URI'];")
    (root / "wp-login.php").write_text("<?php echo 'LOGIN';")
    (root / "wp-admin" / "edit.php").write_text("<?php echo 'ADMIN';")
    (root / "wp-admin" / "network" / "sites.php").write_text("<?php echo 'NETWORK';")
    (root / "wp-content" / "uploads" / "shell.php").write_text("<?php echo 'PWNED';")
    for d, _, files in os.walk(tmp_path):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text("php: { workers = 1; };\n")
    entries = 'entry_scripts = ["index.php", "wp-login.php", "wp-admin/*.php"];'
    (conf / "sites-enabled" / "wp.conf").write_text(
        f'site: {{ hosts = ["wp.test"]; root = "{root}"; default = true; {entries} }};\n')
    (conf / "sites-enabled" / "plain.conf").write_text(
        f'site: {{ hosts = ["plain.test"]; root = "{root}"; front_controller = false; {entries} }};\n')
    s = make_suite(root="", conf=str(conf)).start()

    def get(host, path):
        return curl("-H", f"Host: {host}", s.url(path))

    assert get("wp.test", "/wp-admin/edit.php")[2] == b"ADMIN"
    assert get("wp.test", "/wp-login.php")[2] == b"LOGIN"
    for path in ("/wp-content/uploads/shell.php", "/wp-content/uploads/shell.php/x", "/wp-admin/network/sites.php"):
        code, _, body = get("wp.test", path)
        assert (code, body) == (200, b"FRONT " + path.encode()), (path, code, body)
        code, _, body = get("plain.test", path)
        assert code == 404 and b"PWNED" not in body and b"NETWORK" not in body, (path, code, body)
