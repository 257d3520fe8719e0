"""Safe to host (docs/SECURITY.md): started as root, every daemon runs as
the suite's user and each pool's PHP as that pool's user, with no
capabilities, and one site cannot touch another. Two sites on two pools,
each with the default wall (its own mount namespace, no open_basedir):
site A on the default pool (www-data), site B on pool "shop" (nobody,
admin settings). Started as a normal user, the suite runs as that user and
says what it cannot do."""
import os
import pwd
import grp
import shutil
import subprocess
import tempfile

import pytest
import requests

from conftest import Suite, curl

WALK = r"""<?php
header('Content-Type: application/json');
function can_read($p) { return $p !== '' && @file_get_contents($p) !== false; }
$q = $_GET;
$out = [
    'euid' => posix_geteuid(),
    'egid' => posix_getegid(),
    'read_other' => can_read(($q['other'] ?? '') . '/walk.php'),
    'read_other_session' => can_read($q['other_session'] ?? ''),
    'read_tls_key' => can_read(($q['data'] ?? '') . '/tls/selfsigned.key'),
    'read_site_key' => can_read($q['site_key'] ?? ''),
    'read_tickets' => can_read(($q['data'] ?? '') . '/tls/tickets'),
    'read_lmdb' => can_read(($q['data'] ?? '') . '/state/data.mdb'),
    'read_pool_conf' => can_read($q['pool_conf'] ?? ''),
    'read_shadow' => can_read('/etc/shadow'),
    'read_etc' => can_read('/etc/hostname'),
    'write_other' => @file_put_contents(($q['other'] ?? '/nonexistent') . '/evil.php', '<?php echo "pwned";') !== false,
    'write_own_tmp' => @file_put_contents(sys_get_temp_dir() . '/mine', 'x') !== false,
    'basedir' => ini_get('open_basedir'),
    'set_admin' => ini_set('memory_limit', '256M') !== false,
    'memory_limit' => ini_get('memory_limit'),
    'exec' => function_exists('exec'),
    'session_path' => session_save_path(),
    'tmp' => sys_get_temp_dir(),
];
if (isset($q['fds'])) {
    $fds = [];
    foreach (scandir('/proc/self/fd') as $fd) {
        if ($fd !== '.' && $fd !== '..') {
            $fds["fd$fd"] = (string)@readlink("/proc/self/fd/$fd");
        }
    }
    $out['fds'] = $fds;
}
if (isset($q['remember'])) {
    session_start();
    $_SESSION['secret'] = $q['remember'];
    $out['sid'] = session_id();
}
if (isset($q['peek'])) {
    session_id($q['peek']);
    session_start();
    $out['peeked'] = $_SESSION['secret'] ?? null;
}
echo json_encode($out);
"""


def need_root():
    if os.geteuid() != 0:
        pytest.skip("the privilege model applies when the suite is started as root; this run is not root")


def make_cert(dir, host):
    crt, key = os.path.join(dir, f"{host}.crt"), os.path.join(dir, f"{host}.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", crt, "-days", "2", "-subj", f"/CN={host}",
                    "-addext", f"subjectAltName=DNS:{host}"], check=True, capture_output=True)
    return crt, key


class Hosting:
    """Two sites' trees, certificates and configuration, as a shared host
    lays them out: each site's files its own user's, group the suite's
    (the fronts serve its static files), nothing for others."""

    def __init__(self, suite_user, a_user, b_user, b_group):
        self.dir = tempfile.mkdtemp(prefix="vc-hosting-")
        os.chmod(self.dir, 0o711)
        vc_gid = grp.getgrnam(suite_user).gr_gid if suite_user else os.getegid()
        self.roots = {}
        for name, user in (("a", a_user), ("b", b_user)):
            root = os.path.join(self.dir, name)
            os.mkdir(root)
            with open(os.path.join(root, "walk.php"), "w") as f:
                f.write(WALK)
            with open(os.path.join(root, "static.txt"), "w") as f:
                f.write(f"static of {name}\n")
            if user:
                uid = pwd.getpwnam(user).pw_uid
                for p in (root, os.path.join(root, "walk.php"), os.path.join(root, "static.txt")):
                    os.chown(p, uid, vc_gid)
                os.chmod(root, 0o750)
                os.chmod(os.path.join(root, "walk.php"), 0o640)
                os.chmod(os.path.join(root, "static.txt"), 0o640)
            self.roots[name] = root
        self.certs = {h: make_cert(self.dir, f"{h}.test") for h in ("a", "b")}
        for crt, key in self.certs.values():
            if suite_user:
                os.chown(key, 0, vc_gid)
                os.chmod(key, 0o640)
        self.conf = os.path.join(self.dir, "etc")
        os.makedirs(os.path.join(self.conf, "sites-enabled"))
        users = f'php: {{ user = "{a_user}"; workers = 2; }};\n' if a_user else 'php: { workers = 2; };\n'
        shop_user = f'user = "{b_user}"; group = "{b_group}"; ' if b_user else ""
        with open(os.path.join(self.conf, "vc.conf"), "w") as f:
            f.write(users + "pools: {\n  shop: { " + shop_user +
                    'workers = 2; admin_ini = ["memory_limit=96M", "disable_functions=exec,shell_exec"]; };\n};\n')
        for name in ("a", "b"):
            crt, key = self.certs[name]
            with open(os.path.join(self.conf, "sites-enabled", f"{name}.conf"), "w") as f:
                f.write(f'site: {{ hosts = ["{name}.test"]; root = "{self.roots[name]}"; '
                        f'tls_cert = "{crt}"; tls_key = "{key}"; '
                        + ('default = true; ' if name == "a" else 'pool = "shop"; ') + "};\n")

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def walk(s, host, **q):
    r = requests.get(s.url("/walk.php"), params=q, headers={"Host": f"{host}.test"}, timeout=10)
    assert r.status_code == 200, (r.status_code, r.text, s.logs()[-3000:])
    return r.json(), r


def proc_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


@pytest.fixture(scope="module")
def hosted():
    need_root()
    h = Hosting("vc", "www-data", "nobody", "nogroup")
    s = Suite(root="", conf=h.conf, as_root=False)
    s.start()
    yield s, h
    s.stop()
    s.cleanup()
    h.cleanup()


def test_every_process_after_start_runs_without_root_or_capabilities(hosted):
    s, h = hosted
    st = s.status()
    users = {"vc-bus": "vc", "vc-cache": "vc", "vc-front": "vc", "vc-acme": "vc", "vc-php": "www-data",
             "vc-php.shop": "nobody"}
    seen = set()
    for d in st["daemons"]:
        name = d["daemon"]
        pids = [int(d["pid"])] + [int(w["pid"]) for w in d.get("workers", [])]
        for pid in pids:
            ps = proc_status(pid)
            uids = ps["Uid"].split()
            assert "0" not in uids, f"{name} pid {pid} has a root uid: {ps['Uid']}"
            assert uids[0] == str(pwd.getpwnam(users[name]).pw_uid), (name, ps["Uid"])
            for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                assert int(ps[cap], 16) == 0, f"{name} pid {pid}: {cap} {ps[cap]}"
        seen.add(name)
    assert seen == set(users), seen
    assert "0" not in proc_status(int(st["daemons"][0]["pid"]))["Gid"].split()


def test_php_runs_as_its_pools_user(hosted):
    s, h = hosted
    a, _ = walk(s, "a")
    b, _ = walk(s, "b")
    assert a["euid"] == pwd.getpwnam("www-data").pw_uid
    assert b["euid"] == pwd.getpwnam("nobody").pw_uid
    # Each pool's sessions and temporary files in its own directories.
    assert a["session_path"].endswith("/pools/default/sessions") and b["session_path"].endswith("/pools/shop/sessions")
    assert a["tmp"].endswith("/pools/default/tmp") and b["write_own_tmp"] and a["write_own_tmp"]


def test_one_site_cannot_read_or_write_another_or_the_suites_secrets(hosted):
    s, h = hosted
    # B keeps a secret in its session.
    b, r = walk(s, "b", remember="b-secret")
    sid = b["sid"]
    b_session = os.path.join(s.data, "pools", "shop", "sessions", f"sess_{sid}")
    assert os.path.exists(b_session)
    a, _ = walk(s, "a", other=h.roots["b"], other_session=b_session, data=s.data, site_key=h.certs["b"][1],
                pool_conf=os.path.join(s.data, "run", "pools", "shop.conf"))
    for what in ("read_other", "read_other_session", "read_tls_key", "read_site_key", "read_tickets", "read_lmdb",
                 "read_pool_conf", "read_shadow", "write_other"):
        assert a[what] is False, f"site A's PHP could {what}: {a}"
    assert not os.path.exists(os.path.join(h.roots["b"], "evil.php"))
    # Given B's session id, A gets its own (empty) session: another
    # save path, another user.
    a, _ = walk(s, "a", peek=sid)
    assert a["peeked"] is None
    # And B's own PHP reads it back.
    b, _ = walk(s, "b", peek=sid)
    assert b["peeked"] == "b-secret"
    # The other way round.
    b, _ = walk(s, "b", other=h.roots["a"], data=s.data, site_key=h.certs["a"][1],
                pool_conf=os.path.join(s.data, "run", "pools", "default.conf"))
    for what in ("read_other", "read_tls_key", "read_site_key", "read_lmdb", "read_pool_conf", "read_shadow",
                 "write_other"):
        assert b[what] is False, f"site B's PHP could {what}: {b}"
    # What the system lets every user read stays readable, as under
    # php-fpm: the wall costs no check on each file a script opens.
    assert b["read_etc"] is True and b["basedir"] == "", b


def test_admin_settings_cannot_be_changed_by_a_script(hosted):
    s, h = hosted
    b, _ = walk(s, "b")
    assert b["set_admin"] is False and b["memory_limit"] == "96M", b
    assert b["exec"] is False
    # The default pool has neither: a script may change its own settings.
    a, _ = walk(s, "a")
    assert a["set_admin"] is True and a["exec"] is True


def test_a_worker_holds_only_its_own_link(hosted):
    s, h = hosted
    a, _ = walk(s, "a", fds=1)
    fds = a["fds"]
    sockets = [t for t in fds.values() if t.startswith("socket:")]
    assert len(sockets) == 1, f"a worker holds {len(sockets)} sockets: {fds}"
    # Its own temporary directory is its own (OPcache's lock file lives
    # there); nothing else of the data directory is open.
    own_tmp = os.path.join(s.data, "pools", "default", "tmp") + "/"
    for fd, target in fds.items():
        assert not target.startswith(s.data) or target.startswith(own_tmp), \
            f"fd {fd} is {target}, inside the data directory"
        assert "eventfd" not in target and "signalfd" not in target, f"fd {fd}: {target}"
        assert not target.startswith("pipe:") or int(fd[2:]) <= 2, f"{fd}: an inherited pipe"


def test_static_files_of_both_sites_are_served_by_the_front(hosted):
    s, h = hosted
    for name in ("a", "b"):
        code, _, body = curl("-H", f"Host: {name}.test", s.url("/static.txt"))
        assert code == 200 and body == f"static of {name}\n".encode()


def test_a_host_another_certificate_serves_is_misdirected(hosted):
    s, h = hosted
    for sni, host, want in (("a.test", "b.test", 421), ("b.test", "a.test", 421), ("b.test", "b.test", 200)):
        for proto in ("--http1.1", "--http2"):
            r = subprocess.run(["curl", "-sk", proto, "-o", "/dev/null", "-w", "%{http_code}", "--resolve",
                                f"{sni}:{s.https}:127.0.0.1", f"https://{sni}:{s.https}/static.txt",
                                "-H", f"Host: {host}"], capture_output=True, text=True, timeout=20)
            assert r.stdout == str(want), (sni, host, proto, r.stdout, r.stderr)


def test_a_missing_user_is_a_clear_error():
    need_root()
    for env, message in (({"VC_USER": "no-such-user-vc"}, 'user: the user "no-such-user-vc" does not exist'),
                         ({"VC_PHP_USER": "root"}, 'php.user is "root", which is root'),
                         ({"VC_PHP_USER": "vc"}, 'php.user is "vc", the suite\'s own user')):
        s = Suite(as_root=False, env=env)
        try:
            r = s.vc("up", "--root", s.root, "--listen", f"127.0.0.1:{s.http}", "--tls-listen",
                     f"127.0.0.1:{s.https}")
            assert r.returncode != 0 and message in r.stderr, (env, r.stderr)
        finally:
            s.cleanup()


def test_started_as_a_normal_user_everything_runs_as_that_user():
    """Unprivileged: the same two sites and pools, every process this
    user's, and the log says what the suite cannot do."""
    h = Hosting(None, None, None, None)
    prefix = []
    if os.geteuid() == 0:
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    s = Suite(root="", conf=h.conf, as_root=False, prefix=prefix)
    me = pwd.getpwnam("nobody").pw_uid if prefix else os.geteuid()
    if prefix:
        os.chown(s.dir, me, -1)
        for root, dirs, files in os.walk(h.dir):
            os.chmod(root, 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
    try:
        s.start()
        # Said plainly at start, and by every `vc status`.
        assert "not root: the sites are not separated from the suite" in s.logs()
        assert s.status()["supervisor"]["separation"].startswith("none: started as a normal user")
        assert "warning: the sites are not separated from the suite" in s.vc("status", check=True).stdout
        for d in s.status()["daemons"]:
            assert proc_status(int(d["pid"]))["Uid"].split()[0] == str(me), d
        a, _ = walk(s, "a")
        b, _ = walk(s, "b")
        assert a["euid"] == b["euid"] == me
        # What does not need root still holds: each pool's own mount
        # namespace (unprivileged user namespaces), or open_basedir where
        # the kernel refuses those; the admin settings; each pool's own
        # sessions.
        a, _ = walk(s, "a", other=h.roots["b"], data=s.data)
        assert a["read_other"] is False and a["read_lmdb"] is False, a
        assert b["set_admin"] is False and b["exec"] is False
        b, _ = walk(s, "b", remember="mine")
        a, _ = walk(s, "a", peek=b["sid"])
        assert a["peeked"] is None
    finally:
        s.stop()
        s.cleanup()
        h.cleanup()
