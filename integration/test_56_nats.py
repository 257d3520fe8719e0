"""The cluster's NATS is never open (docs/cluster.md, docs/SECURITY.md):
configtest refuses a cluster without credentials unless cluster.insecure
is written, and credential files others may read; a pool's PHP can
neither read the credentials (its wall hides them, as TLS keys) nor
publish on the cluster's subjects without them."""
import grp
import json
import os
import uuid

import pytest
import requests

from conftest import Suite, free_port

PROBE = r"""<?php
header('Content-Type: application/json');
$pw = @file_get_contents($_GET['pw']);
$s = @fsockopen('127.0.0.1', (int)$_GET['port'], $errno, $errstr, 5);
$got = [];
if ($s) {
    stream_set_timeout($s, 5);
    $got[] = trim((string)fgets($s));  // INFO
    // As a script would: no credentials (it can read none), a purge of every site's cache.
    fwrite($s, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPUB vc.purge.a 2\r\nhi\r\nPING\r\n");
    $got[] = trim((string)fgets($s));
}
echo json_encode(['read' => $pw !== false && $pw !== '', 'connected' => (bool)$s, 'got' => $got]);
"""


def configtest(tmp_path, body, mode=0o600):
    conf = tmp_path / uuid.uuid4().hex
    conf.mkdir()
    pw = tmp_path / "nats.password"
    pw.write_text("a-long-nats-password\n")
    os.chmod(pw, mode)
    (conf / "vc.conf").write_text("\ncluster: { " + body.replace("PW", str(pw)) + " };\n")
    s = Suite(conf=str(conf))
    try:
        r = s.vc("configtest")
        return r.returncode, r.stderr + r.stdout
    finally:
        s.cleanup()


@pytest.mark.parametrize("body,mode,why", [
    ('node = "a"; nats = ["nats://127.0.0.1:4222"];', 0o600, "could publish on the cluster's subjects"),
    ('node = "a"; nats = ["nats://127.0.0.1:4222"]; user = "vc"; password_file = "PW";', 0o644,
     "is mode 0644: others may read it"),
    ('node = "a"; nats = ["nats://127.0.0.1:4222"]; user = "vc"; password_file = "PW";', 0o660,
     "is mode 0660: others may write it"),
])
def test_configtest_refuses_an_open_nats_and_readable_credentials(tmp_path, body, mode, why):
    rc, out = configtest(tmp_path, body, mode)
    assert rc != 0 and why in out and "vc.conf:2: cluster." in out, out


@pytest.mark.parametrize("body,mode", [
    ('node = "a"; nats = ["nats://127.0.0.1:4222"]; insecure = true;', 0o600),
    ('node = "a"; nats = ["nats://127.0.0.1:4222"]; user = "vc"; password_file = "PW";', 0o640),
])
def test_configtest_takes_credentials_or_a_written_insecure(tmp_path, body, mode):
    rc, out = configtest(tmp_path, body, mode)
    assert rc == 0, out


@pytest.fixture
def node():
    """One node running its own NATS member with a user, as the privilege
    model has it when started as root (daemons as vc, PHP as www-data;
    the password root's, readable by the suite's group), or all as the
    user who started it."""
    port, cport = free_port(), free_port()
    s = Suite(root="", as_root=False)
    www = os.path.join(s.dir, "www")
    os.mkdir(www)
    with open(os.path.join(www, "probe.php"), "w") as f:
        f.write(PROBE)
    os.chmod(www, 0o755)
    os.chmod(os.path.join(www, "probe.php"), 0o644)
    pw = os.path.join(s.dir, "nats.password")
    with open(pw, "w") as f:
        f.write("a-long-nats-password\n")
    if os.geteuid() == 0:
        os.chown(pw, 0, grp.getgrnam("vc").gr_gid)
        os.chmod(pw, 0o640)
    else:
        os.chmod(pw, 0o600)
    conf = os.path.join(s.dir, "etc")
    os.makedirs(os.path.join(conf, "sites-enabled"))
    with open(os.path.join(conf, "vc.conf"), "w") as f:
        f.write(f'cluster: {{ node = "a"; nats = ["nats://127.0.0.1:{port}"]; user = "vc"; password_file = "{pw}";\n'
                f'  nats_server = true; nats_listen = "127.0.0.1:{port}"; nats_cluster_listen = "127.0.0.1:{cport}";\n'
                '  replicas = 1; };\n')
    with open(os.path.join(conf, "sites-enabled", "w.conf"), "w") as f:
        f.write(f'site: {{ hosts = ["w.test"]; default = true; root = "{www}"; }};\n')
    s.conf = conf
    s.start(wait=40)
    s.nats_port, s.password = port, pw
    yield s
    s.stop()
    s.cleanup()


def test_a_pools_php_reads_no_credential_and_cannot_publish(node):
    r = requests.get(node.url("/probe.php"), params={"pw": node.password, "port": node.nats_port}, timeout=20)
    assert r.status_code == 200, r.text
    got = json.loads(r.text)
    assert got["read"] is False, got
    assert got["connected"] and got["got"][0].startswith("INFO"), got
    assert "Authorization Violation" in got["got"][1], got
    # The node itself is in: its vc-mesh connected with the password.
    assert node.daemon_pid("vc-mesh") > 0
