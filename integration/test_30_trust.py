"""Trust boundaries inside the machine (docs/SECURITY.md, "Who may speak
to what"): a local user, or one site's PHP, reaches neither the bus nor
another site's secrets. Each test speaks as another local user through
runuser, as an attacker with an account or a site would."""
import os
import shutil
import stat
import subprocess
import time

import pytest

from conftest import Suite

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trust_peer.py")


def need_root():
    if os.geteuid() != 0:
        pytest.skip("other local users exist to the test only when it runs as root")


def as_user(user, *args):
    """trust_peer.py as user (None: as the test itself)."""
    cmd = ["/usr/bin/python3", PEER, *args]
    if user:
        cmd = ["runuser", "-u", user, "--"] + cmd
    subprocess.run(cmd, check=True, timeout=20)


def bus_status(s):
    for d in s.status()["daemons"]:
        if d["daemon"] == "vc-bus":
            return d["status"]
    raise KeyError("vc-bus")


def wait_for(what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def walled(tmp_path):
    """The suite as an installation runs it: daemons as vc, PHP as www-data."""
    need_root()
    s = Suite(as_root=False).start()
    yield s
    s.stop()
    s.cleanup()


def marks(s, topic):
    return [e["fields"].get("mark") for e in s.events() if e["topic"] == topic and "mark" in e.get("fields", {})]


def test_bus_believes_a_sender_only_as_far_as_it_is_trusted(walled):
    s = walled
    ep = f"ipc://{s.data}/run/bus-in.sock"
    # An unrelated local user: neither a command-like event nor a pool's fact.
    as_user("nobody", "event", ep, "tls.on_demand.wanted", "vc-front", "stranger-acme")
    as_user("nobody", "event", ep, "php.worker.exited", "vc-php", "stranger-php")
    # The pool's user (its PHP): its own pool's facts, nothing else.
    as_user("www-data", "event", ep, "php.worker.exited", "vc-php", "pool-own")
    as_user("www-data", "event", ep, "cache.purged", "vc-cache", "pool-lie")
    as_user("www-data", "event", ep, "php.worker.exited", "vc-php.other", "pool-other")
    # Root's, last: once it is in, every earlier one was read.
    as_user(None, "event", ep, "test.trust.marker", "vc", "root")
    wait_for(lambda: marks(s, "test.trust.marker") == ["root"])
    assert marks(s, "php.worker.exited") == ["pool-own"]
    assert marks(s, "tls.on_demand.wanted") == [] and marks(s, "cache.purged") == []
    assert int(bus_status(s)["refused"]) == 4
    assert "refused an event \"tls.on_demand.wanted\" from uid" in s.logs()


def test_only_the_fronts_send_room_messages(walled):
    s = walled
    sock = f"{s.data}/run/rooms-in.sock"
    mode = os.stat(sock).st_mode
    assert not mode & (stat.S_IWOTH | stat.S_IWGRP), oct(mode)
    before = int(bus_status(s)["room_messages"])
    as_user("nobody", "room", f"ipc://{sock}", "app1:private-orders", "forged", '{"x":1}')
    as_user("www-data", "room", f"ipc://{sock}", "app1:private-orders", "forged", '{"x":2}')
    as_user(None, "room", f"ipc://{sock}", "app1:marker", "marker", '{"x":3}')
    wait_for(lambda: int(bus_status(s)["room_messages"]) > before)
    assert int(bus_status(s)["room_messages"]) == before + 1


@pytest.mark.parametrize("host, refused", [("10.1.2.3", True), ("php.internal", True), ("*", True),
                                           ("127.0.0.1", False), ("[::1]", False)])
def test_a_tcp_link_without_key_is_refused_off_loopback(make_suite, tmp_path, host, refused):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text(f'\nendpoints: {{\n  php = "tcp://{host}:7001";\n}};\n')
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    where = f"{conf}/vc.conf:3: endpoints.php is \"tcp://{host}:7001\" without link_key"
    if refused:
        assert r.returncode == 1 and where in r.stderr and "any host that reaches the port" in r.stderr, r.stderr
    else:
        assert r.returncode == 0 and f"warning: {where}" in r.stderr and "every local user" in r.stderr, r.stderr
    # With the key, neither.
    (conf / "vc.conf").write_text(f'link_key = "{"k" * 32}";\nendpoints: {{ php = "tcp://{host}:7001"; }};\n')
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode == 0 and "link_key" not in r.stderr, r.stderr


def test_a_tcp_link_from_the_environment_names_the_variable(make_suite, tmp_path):
    s = make_suite(root="", env={"VC_ENDPOINTS": "php=tcp://10.9.9.9:7001"})
    r = s.vc("configtest")
    assert r.returncode == 1 and "environment VC_ENDPOINTS: endpoints.php is" in r.stderr, r.stderr


SECRETS = {
    "purge": "purge-token-1d0b7c2f9e8a4b6c",
    "eab": "eab-hmac-7f3e2a1b9c8d4e5f6a7b",
    "app": "app-secret-5e6f7a8b9c0d1e2f",
    "mercure": "mercure-key-0a9b8c7d6e5f4a3b",
    "link": "link-key-" + "9" * 32,
}


def test_a_pool_reads_its_settings_and_no_secret(tmp_path):
    """The pool's copy of the configuration (DATA/run/pools/NAME.conf),
    read as the pool's user, as its PHP could: settings, never keys."""
    need_root()
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    (conf / "vc.conf").write_text(
        '# the suite\n'
        f'link_key = "{SECRETS["link"]}";\n'
        f'cache: {{ purge_token = "{SECRETS["purge"]}"; }};\n'
        f'acme: {{ eab_kid = "kid-1"; eab_hmac_key = "{SECRETS["eab"]}"; }};\n'
        'php: { workers = 2; admin_ini = ["memory_limit=77M"]; };\n')
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "docroot")
    (conf / "sites-enabled" / "shop.conf").write_text(
        f'site: {{ hosts = ["shop.test"]; default = true; root = "{root}";\n'
        f'  realtime_apps = ["app1 key1 {SECRETS["app"]}"];\n'
        f'  mercure_publisher_key = "{SECRETS["mercure"]}"; }};\n')
    s = Suite(root="", conf=str(conf), as_root=False).start()
    try:
        pool_conf = f"{s.data}/run/pools/default.conf"
        r = subprocess.run(["runuser", "-u", "www-data", "--", "cat", pool_conf], capture_output=True, timeout=10)
        assert r.returncode == 0, r.stderr
        text = r.stdout.decode("latin-1")
        for what, secret in SECRETS.items():
            assert secret not in text, f"the pool can read the {what} secret"
        # What the pool needs is there: its settings, the site's root.
        assert "memory_limit=77M" in text and root in text
        # And it runs on it: PHP serves, with the pool's admin setting.
        assert s.vc("status", check=True).returncode == 0
    finally:
        s.stop()
        s.cleanup()


@pytest.fixture(scope="module")
def rt_suite(tmp_path_factory):
    conf = tmp_path_factory.mktemp("etc")
    (conf / "sites-enabled").mkdir()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "docroot")
    (conf / "vc.conf").write_text("\n")
    (conf / "sites-enabled" / "shop.conf").write_text(
        f'site: {{ hosts = ["shop.test", "*.shop.test"]; default = true; root = "{root}"; }};\n')
    (conf / "sites-enabled" / "listed.conf").write_text(
        f'site: {{ hosts = ["listed.test"]; root = "{root}"; realtime_origins = ["https://app.example"];\n'
        '  realtime_apps = ["app2 listedkey listed-secret-0123456789abcdef"]; };\n')
    s = Suite(root="", conf=str(conf)).start()
    with open(s.data + "/state/realtime-app") as f:
        s.app_id, s.key, s.secret = f.read().split()
    yield s
    s.stop()
    s.cleanup()


@pytest.mark.parametrize("host, origin, status", [
    (None, None, 101),                                   # not a browser
    (None, "http://127.0.0.1:{port}", 101),              # the page's own origin, by the Host it came for
    ("shop.test", "https://shop.test", 101),             # a name of the site
    ("shop.test", "https://www.shop.test:8443", 101),    # under its wildcard, any port
    ("shop.test", "https://evil.example", 403),          # another site's page
    ("shop.test", "https://shop.test.evil.example", 403),
    ("shop.test", "null", 403),                          # a sandboxed or local page
    ("listed.test", "https://app.example", 101),         # the site's list replaces the default
    ("listed.test", "https://listed.test", 403),
    ("listed.test", None, 403),
])
def test_a_websocket_comes_only_from_the_sites_own_pages(rt_suite, host, origin, status):
    from wsclient import Conn
    s = rt_suite
    headers = {}
    if host:
        headers["Host"] = host
    if origin:
        headers["Origin"] = origin.format(port=s.http)
    key = "listedkey" if host == "listed.test" else s.key
    c = Conn("127.0.0.1", s.http, f"/app/{key}?protocol=7&client=js&version=8.4.0", headers)
    assert c.status == status, c.head


def configtest(make_suite, tmp_path, main="", sites=()):
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text(main + "\n")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "docroot")
    for i, body in enumerate(sites):
        hosts = "" if "hosts" in body else f'hosts = ["s{i}.example.com"]; '
        (conf / "sites-enabled" / f"s{i}.conf").write_text(f'\nsite: {{ {hosts}root = "{root}"; {body} }};\n')
    return make_suite(root="", conf=str(conf)).vc("configtest")


GOOD_APP = "realtime_apps = [\"app1 key1 0123456789abcdef0123\"];"


@pytest.mark.parametrize("main, sites, error", [
    ('cache: { purge_token = "x"; };', [], "cache.purge_token is 1 characters: give at least 16"),
    ("", ['realtime_apps = ["app1 key1 s"];'], 's0.conf:2: site "s0": realtime app "app1": its secret is 1 characters'),
    ("", [GOOD_APP, GOOD_APP.replace("key1", "key2")],
     's1.conf:2: site "s1": realtime app "app1" has the id of an app of site "s0"'),
    ("", [GOOD_APP, GOOD_APP.replace("app1", "app2")],
     's1.conf:2: site "s1": realtime app "app2" has the key of an app of site "s0"'),
    ("", ['realtime_origins = ["evil"];'], 's0.conf:2: site "s0": realtime_origins: "evil" is not an origin'),
    ("", ['realtime_origins = ["https://a.example/path"];'], 'realtime_origins: "https://a.example/path" is not'),
    ("", ['tls = "acme"; hosts = ["192.0.2.1"];'], '"192.0.2.1" is not one'),
    ('acme: { dns_hook = "hooks/dns.sh"; };', ['tls = "acme"; acme_challenge = "dns-01";'],
     "acme.dns_hook must name a program by its absolute path"),
    ("", ['tls = "acme"; acme_challenge = "dns-01";'], "acme.dns_hook must name a program by its absolute path"),
])
def test_configtest_refuses_weak_or_wrong_values(make_suite, tmp_path, main, sites, error):
    r = configtest(make_suite, tmp_path, main, sites)
    assert r.returncode == 1 and error in r.stderr, r.stderr


@pytest.mark.parametrize("main, warning", [
    ('cache: { strip_params = ["*"]; };', 'cache.strip_params has "*"'),
    ("cache: { session_cookies = []; };", "cache.session_cookies is empty"),
    ('cache: { lock_timeout = "0s"; };', "cache.lock_timeout is 0"),
])
def test_configtest_warns_of_settings_that_undo_the_cache_safety(make_suite, tmp_path, main, warning):
    r = configtest(make_suite, tmp_path, main)
    assert r.returncode == 0 and f"warning: configuration: {warning}" in r.stderr, r.stderr
    r = configtest(make_suite, tmp_path / "default")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_a_planted_lock_link_and_a_second_suite_are_told_apart(suite, tmp_path):
    # A second `vc up` on a running suite names the running one's pid.
    r = suite.vc("up", "--listen", "127.0.0.1:1", timeout=20)
    assert r.returncode == 1, r.stderr
    assert f"a suite already runs under {suite.data} (pid {suite.status()['supervisor']['pid']})" in r.stderr
    # A link where the lock goes is refused as what it is.
    data = tmp_path / "var"
    (data / "run").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere", data / "run" / "vc.lock")
    from conftest import VC
    r = subprocess.run([VC, "--data", str(data), "up", "--listen", "127.0.0.1:1"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 1 and "vc.lock" in r.stderr and "symbolic link" in r.stderr, r.stderr
    assert "pid 0" not in r.stderr and not (tmp_path / "elsewhere").exists()


def test_status_wait_ends_when_the_suite_it_waits_for_has_exited(make_suite):
    """`vc status --wait` stops waiting once the suite it saw starting
    (its lock held) has gone (the lock free), healthy or not. The test
    holds the lock itself, as a `vc up` that never got healthy would."""
    import fcntl
    s = make_suite()
    os.makedirs(os.path.join(s.data, "run"))
    lock = open(os.path.join(s.data, "run", "vc.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    from conftest import VC
    status = subprocess.Popen([VC, "--data", s.data, "status", "--wait", "30"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=s.env)
    # It says once that it saw a suite starting, and waits.
    assert "a suite is starting under" in status.stderr.readline()
    assert status.poll() is None
    released = time.monotonic()
    lock.close()
    out, err = status.communicate(timeout=10)
    assert status.returncode == 1 and "stopped before it was healthy" in err, err
    assert time.monotonic() - released < 3


def test_up_needs_no_root_when_sites_are_enabled(tmp_path):
    """An installation without the example app (no --root, no ./public)
    serves its enabled sites."""
    from conftest import BUILD
    inst = tmp_path / "inst"
    shutil.copytree(os.path.join(BUILD, "bin"), inst / "bin", symlinks=True)
    shutil.copytree(os.path.join(BUILD, "lib"), inst / "lib", symlinks=True)
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "docroot")
    (conf / "sites-enabled" / "a.conf").write_text(f'site: {{ hosts = ["a.test"]; default = true; root = "{root}"; }};\n')
    s = Suite(root="", conf=str(conf))
    try:
        vc = [str(inst / "bin" / "vc"), "--data", s.data, "--conf", str(conf)]
        r = subprocess.run(vc + ["up", "-d", "--listen", f"127.0.0.1:{s.http}", "--tls-listen",
                                 f"127.0.0.1:{s.https}"], capture_output=True, text=True, env=s.env, cwd=s.dir,
                           timeout=30)
        assert r.returncode == 0, r.stderr
        assert subprocess.run(vc + ["status", "--wait", "20"], capture_output=True, env=s.env,
                              timeout=30).returncode == 0
        # Without a site, the same installation still asks for a root.
        os.remove(conf / "sites-enabled" / "a.conf")
        r = subprocess.run([vc[0], "--data", str(tmp_path / "v2"), "--conf", str(conf), "up"], capture_output=True,
                           text=True, env=s.env, cwd=s.dir, timeout=30)
        assert r.returncode == 1 and "no document root: pass --root DIR" in r.stderr, r.stderr
    finally:
        subprocess.run([str(inst / "bin" / "vc"), "--data", s.data, "stop"], capture_output=True, timeout=30)
        shutil.rmtree(s.dir, ignore_errors=True)


def security_table():
    """The rows of docs/SECURITY.md's table of paths: (regex, kind, owner,
    group, mode), in the table's order."""
    import re
    doc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "SECURITY.md")
    rows, inside = [], False
    for line in open(doc):
        if line.startswith("| path (under DATA) |"):
            inside = True
            continue
        if inside and not line.startswith("|"):
            break
        if not inside or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for pattern in re.findall(r"`([^`]+)`", cells[0]):
            rx = "^" + re.escape(pattern).replace("NAME", "[^/]+").replace(r"\*", "[^/]*") + "$"
            owner, group = cells[2].split(":")
            rows.append((re.compile(rx), cells[1], owner, group, int(cells[3], 8)))
    return rows


def test_the_security_tables_supervisor_row_names_what_each_caller_may_give():
    """docs/SECURITY.md's row for the supervisor's socket names each verb
    the code lets vc-fed's and vc-panel's processes give (cli/up.c's
    lists), and says every other process of the suite's user gets status
    and ping only."""
    import re
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = open(os.path.join(repo, "cli", "up.c")).read()
    row = [line for line in open(os.path.join(repo, "docs", "SECURITY.md")) if line.startswith("| `run/ctl-vc.sock` |")]
    assert len(row) == 1
    for who in ("fed", "panel"):
        verbs = re.findall(r'"([a-z-]+)"', re.search(who + r"_verbs\[\] = \{([^}]*)\}", src).group(1))
        part = row[0].split(f"vc-{who}'s process")[1].split(";")[0]
        assert verbs and all(f"`{v}`" in part for v in verbs), (who, verbs, part)
    assert "`status` and `ping` only" in row[0]


def test_every_path_of_the_data_directory_is_in_the_security_table(walled):
    import grp
    import pwd
    s = walled
    # Started as root, the sites are kept apart, and status says so.
    assert s.status()["supervisor"]["separation"] == "users"
    assert "not separated" not in s.vc("status", check=True).stdout
    subprocess.run(["curl", "-s", "-o", "/dev/null", s.url("/")], check=True, timeout=20)
    names = {"vc": "vc", "root": "root", "POOL": "www-data", "POOLGROUP": "www-data"}
    rows = security_table()
    assert len(rows) > 20
    checked, wrong = 0, []
    for top, dirs, files in os.walk(s.data):
        for name in [""] + dirs + files if top == s.data else dirs + files:
            path = os.path.join(top, name) if name else top
            rel = os.path.relpath(path, s.data)
            st = os.lstat(path)
            kind = "dir" if stat.S_ISDIR(st.st_mode) else "socket" if stat.S_ISSOCK(st.st_mode) else \
                "file" if stat.S_ISREG(st.st_mode) else "other"
            row = next((r for r in rows if r[1] == kind and r[0].match(rel)), None)
            if row is None:
                wrong.append(f"{rel}: a {kind} the table does not list")
                continue
            owner, group = pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name
            mode = stat.S_IMODE(st.st_mode)
            if (owner, group, mode) != (names[row[2]], names[row[3]], row[4]):
                wrong.append(f"{rel}: {owner}:{group} {mode:o}, the table says {row[2]}:{row[3]} {row[4]:o}")
            checked += 1
    assert not wrong, "\n".join(wrong)
    assert checked > 30


FORWARDING = ["X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-Prefix", "Forwarded", "X-Host",
              "X-Forwarded-Host", "X-Forwarded-For", "X-Real-IP", "X-Original-URL", "X-HTTP-Method-Override"]
EVIL = '/"><script>alert(1)</script>'

SHOW = r"""<?php
header('Cache-Control: public, max-age=60');
foreach (json_decode($_GET['h'] ?? '[]') as $k) {
    $v = $_SERVER['HTTP_' . strtoupper(str_replace('-', '_', $k))] ?? '';
    echo $k, '=', $v, "\n";
}
echo 'run=', bin2hex(random_bytes(8)), "\n";
"""


def forwarding_suite(tmp_path, trusted):
    conf = tmp_path / "etc"
    conf.mkdir()
    root = tmp_path / "www"
    root.mkdir()
    (root / "show.php").write_text(SHOW)
    os.chmod(tmp_path, 0o755)
    (conf / "vc.conf").write_text('front: { trusted_proxies = ["127.0.0.1", "::1"]; };\n' if trusted else "\n")
    return Suite(root=str(root), conf=str(conf)).start()


def fetch(s, path, *headers):
    """(Cache-Status, body) of a GET with these headers."""
    from conftest import curl
    args = ["-g", s.url(path)]
    for h in headers:
        args += ["-H", h]
    _, head, body = curl(*args)
    text = head.decode() if isinstance(head, bytes) else str(head)
    status = [line.split(":", 1)[1].strip() for line in text.split("\r\n") if line.lower().startswith("cache-status:")]
    return (status[0] if status else ""), body.decode()


@pytest.mark.parametrize("header", FORWARDING)
def test_forwarding_headers_from_a_client_never_reach_php(tmp_path, header):
    """From a client that is not a trusted proxy, the header is taken
    out: PHP cannot build an answer from it, so nothing of it is stored
    for the next visitor."""
    import json
    s = forwarding_suite(tmp_path, trusted=False)
    try:
        path = "/show.php?h=" + json.dumps([header]).replace(" ", "")
        status, body = fetch(s, path, f"{header}: {EVIL}")
        assert f"{header}=\n" in body, body
        assert wait_for_hit(s, path)
        status, clean = fetch(s, path)
        assert "script" not in clean and status.startswith("Velocity; hit")
    finally:
        s.stop()
        s.cleanup()


def wait_for_hit(s, path):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if fetch(s, path)[0].startswith("Velocity; hit"):
            return True
        time.sleep(0.05)
    return False


def test_forwarding_headers_from_a_trusted_proxy_work_as_frameworks_expect(tmp_path):
    import json
    s = forwarding_suite(tmp_path, trusted=True)
    try:
        # Every one reaches PHP as the proxy sent it.
        for header in FORWARDING:
            path = "/show.php?h=" + json.dumps([header]).replace(" ", "")
            status, body = fetch(s, path, f"{header}: proxy-said")
            assert f"{header}=proxy-said\n" in body, (header, body)
        # The scheme and host it forwarded for are the page's: its https
        # page is kept apart from the http one, and from another host's.
        path = '/show.php?h=["X-Forwarded-Proto","X-Forwarded-Host"]'
        https = ("X-Forwarded-Proto: https", "X-Forwarded-Host: shop.example")
        _, first = fetch(s, path, *https)
        assert "X-Forwarded-Proto=https" in first
        assert wait_for_hit(s, path)  # the plain http page, stored on its own
        status, again = fetch(s, path, *https)
        assert status.startswith("Velocity; hit") and again == first
        status, other = fetch(s, path, "X-Forwarded-Proto: https", "X-Forwarded-Host: other.example")
        assert "other.example" in other and not status.startswith("Velocity; hit")
        status, fwd = fetch(s, path, 'Forwarded: for=192.0.2.1;proto=https;host="shop.example"')
        assert status.startswith("Velocity; hit") and fwd == first
        # A prefix (or a port, a method override...) is not in the key:
        # its answer is not stored for others.
        path = '/show.php?h=["X-Forwarded-Prefix"]'
        status, body = fetch(s, path, f"X-Forwarded-Prefix: {EVIL}")
        assert status == "Velocity; fwd=bypass; detail=unkeyed-header" and "script" in body
        assert "script" not in fetch(s, path)[1]
    finally:
        s.stop()
        s.cleanup()


def test_a_trusted_proxy_that_is_not_an_address_is_refused(make_suite, tmp_path):
    r = configtest(make_suite, tmp_path, 'front: { trusted_proxies = ["10.0.0.0/33"]; };')
    assert r.returncode == 1 and 'front.trusted_proxies: "10.0.0.0/33" is not an address or a range' in r.stderr


def test_a_pools_scripts_cannot_command_their_pool(walled):
    """The pool's control socket is its user's, and so its scripts'
    (they run as that user): they may ask its status, not scale, reload
    or stop it, nor list, stop or restart its background processes."""
    s = walled
    ep = f"ipc://{s.data}/run/php/ctl-vc-php.sock"

    def say(user, *cmd):
        pre = ["runuser", "-u", user, "--"] if user else []
        return subprocess.run(pre + ["/usr/bin/python3", PEER, "command", ep, *cmd], capture_output=True, text=True,
                              timeout=20).stdout.strip()

    before = s.status()
    php = [d for d in before["daemons"] if d["daemon"] == "vc-php"][0]
    assert say("www-data", "scale", "1") == "refused: only the suite's user and root may give this command"
    assert say("www-data", "reload").startswith("refused")
    # Nor see, stop or restart its sites' background processes, nor run a
    # schedule entry's minute as vc-mesh does in a cluster.
    for cmd in (["background"], ["background-stop", "default", "queue"], ["background-restart", "default", "q"],
                ["schedule-run", "default", "schedule:1", "60"]):
        assert say("www-data", *cmd).startswith("refused"), cmd
    assert "vc-php is running" in say("www-data", "status")
    # The suite's own user and root still command it.
    assert not say("vc", "scale", php["status"]["workers_wanted"]).startswith("refused")
    assert not say(None, "scale", php["status"]["workers_wanted"]).startswith("refused")
    assert "refused the command \"scale\"" in s.logs()


def test_the_suites_user_may_only_read_the_supervisors_status(walled):
    """The supervisor's socket is root's and the suite's user's group's.
    Of that user's processes, vc-fed may ask a reload (a configuration
    release) and vc-panel a reload and site files (test_49 does both under
    the privilege model); any other (a daemon taken over, a shell as vc)
    only reads the status: it can neither write a site file nor reload,
    stop or restart. A pool's user cannot connect at all."""
    s = walled
    ep = f"ipc://{s.data}/run/ctl-vc.sock"

    def say(user, *cmd):
        return subprocess.run(["runuser", "-u", user, "--", "/usr/bin/python3", PEER, "command", ep, *cmd],
                              capture_output=True, text=True, timeout=20)

    not_for = "refused: only root, or the one daemon it is for, may give this command (docs/SECURITY.md)"
    for cmd in (["stop"], ["restart", "bus"], ["reload"], ["site-put", "evil"], ["site-enable", "default"],
                ["site-list"]):
        assert say("vc", *cmd).stdout.strip() == not_for, cmd
    assert "refused" not in say("vc", "status").stdout
    assert not os.path.exists(os.path.join(s.data, "etc", "sites-available", "evil.conf"))
    assert say("www-data", "reload").stdout.strip() == "no answer"  # it cannot connect
    assert s.status()["supervisor"]["health"] == "ok"


def test_a_secret_in_vc_ups_environment_does_not_reach_php():
    need_root()
    key = "env-link-key-" + "7" * 32
    s = Suite(as_root=False, env={"VC_LINK_KEY": key})
    try:
        www = os.path.join(s.dir, "www")
        os.mkdir(www)
        with open(os.path.join(www, "env.php"), "w") as f:
            f.write("<?php echo 'getenv=', getenv('VC_LINK_KEY') ?: '', "
                    "' environ=', (string) @file_get_contents('/proc/self/environ');")
        os.chmod(www, 0o755)
        os.chmod(os.path.join(www, "env.php"), 0o644)
        s.root = www
        s.start()
        from conftest import curl
        code, _, body = curl(s.url("/env.php"))
        assert code == 200 and b"getenv=" in body
        assert key.encode() not in body, body
    finally:
        s.stop()
        s.cleanup()
