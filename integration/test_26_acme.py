"""vc-acme against a real ACME CA (Pebble, -strict): certificates for two
sites by HTTP-01 and one by TLS-ALPN-01, served by SNI and trusted through Pebble's root; a
forced renewal under load on HTTPS with no failed request or handshake;
the challenge path never reaching PHP, even on a site that redirects to
HTTPS; a CA that is down; round trips against certbot's; configuration
refused with its file and line."""
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time

import pytest
import requests

from acme_ca import Pebble, certs, served_cert, start_with, wait_error, wait_issued, wait_served, write_conf
from conftest import FIXTURES, configtest_site, curl
from metrics_doc import assert_documented

DOCROOT = os.path.join(FIXTURES, "docroot")


def webroot(tmp_path, site):
    """The site's own root (certbot --webroot writes into it)."""
    root = tmp_path / "www" / site
    if not root.exists():
        root.mkdir(parents=True)
        shutil.copy(os.path.join(DOCROOT, "style.css"), root / "style.css")
        os.chmod(tmp_path / "www", 0o755)
    return root


def start_pebble_suite(make_suite, tmp_path, nosleep=False):
    conf = tmp_path / "etc"
    s = make_suite(root="", conf=str(conf))
    ca = Pebble(tmp_path / "ca", s.http, s.https, nosleep=nosleep).start()
    write_conf(conf, f'directory = "{ca.directory}"; ca_bundle = "{ca.tls_cert}"; email = "ops@example.test";', {
        "a": f'hosts = ["a.test", "www.a.test"]; root = "{webroot(tmp_path, "a")}"; tls = "acme"; '
             'https_redirect = true;',
        "b": f'hosts = ["b.test"]; root = "{webroot(tmp_path, "b")}"; tls = "acme"; default = true;',
        "c": f'hosts = ["c.test"]; root = "{DOCROOT}"; tls = "acme"; acme_challenge = "tls-alpn-01";',
    })
    return start_with(s, ca)


@pytest.fixture
def pebble_suite(make_suite, tmp_path):
    s, ca = start_pebble_suite(make_suite, tmp_path)
    yield s, ca
    s.stop(check=False)
    ca.stop()


def test_sites_get_certificates_by_http01_and_tls_alpn01_and_serve_them(pebble_suite, tmp_path):
    s, ca = pebble_suite
    c = wait_issued(s, ["a", "b", "c"])
    assert c["a"]["hosts"] == "a.test www.a.test" and c["a"]["last_error"] == ""
    assert "Pebble" in c["a"]["issuer"], c
    root = ca.root_file(tmp_path)
    for host in ("a.test", "www.a.test", "b.test", "c.test"):
        cert, _ = wait_served(s, host, root)  # verified: a chain to Pebble's root for that name
        names = {v for k, v in cert["subjectAltName"] if k == "DNS"}
        assert host in names
    key = os.path.join(s.data, "tls", "acme", "a.key")
    assert os.stat(key).st_mode & 0o777 == 0o600
    # The front says so, and nothing logs the key.
    with open(key) as f:
        pem_body = f.read().splitlines()[1]
    assert pem_body not in s.logs()
    issued = {e["fields"]["site"]: e["fields"]["challenge"]
              for e in s.events_of("acme.cert.issued", lambda e: len(e) >= 3)}
    assert issued == {"a": "http-01", "b": "http-01", "c": "tls-alpn-01"}, issued
    assert "answered a TLS-ALPN-01 check for \"c.test\"" in s.logs()
    out = s.vc("cert", "list", check=True).stdout
    assert re.search(r"^a\s+a\.test www\.a\.test\s+Pebble", out, re.M), out
    metrics = requests.get(f"http://127.0.0.1:{s.admin}/metrics", timeout=10).text
    assert "vc_acme_certificate_days_left" in assert_documented(metrics, "vc_acme_")
    days = {m.group(1): float(m.group(2))
            for m in re.finditer(r'^vc_acme_certificate_days_left\{site="(\w+)"\} ([\d.]+)$', metrics, re.M)}
    # What the front serves, as vc-acme recorded it.
    listed = certs(s)
    assert set(days) == {"a", "b", "c"}, days
    assert all(abs(days[x] - (listed[x]["not_after"] - time.time()) / 86400) < 0.05 for x in days), (days, listed)


def test_a_forced_renewal_under_load_drops_nothing(pebble_suite, tmp_path):
    s, ca = pebble_suite
    before = wait_issued(s, ["a"])["a"]
    root = ca.root_file(tmp_path)
    _, old = wait_served(s, "a.test", root)
    result = {}
    # h2load over TLS with SNI a.test: new connections all along (-c 4,
    # 200 requests each), so handshakes happen while the pair changes.
    load = threading.Thread(target=lambda: result.update(r=subprocess.run(
        ["h2load", "--connect-to", f"127.0.0.1:{s.https}", "-n", "40000", "-c", "8", "-m", "1",
         "--h1", f"https://a.test:{s.https}/style.css"], capture_output=True, text=True, timeout=300)))
    load.start()
    r = s.vc("cert", "renew", "--force", "a.test", check=True)
    assert "ordered next" in r.stdout
    wait_issued(s, ["a"], after=before["renew_at"])
    deadline = time.monotonic() + 10
    while served_cert(s, "a.test", root)[1] == old:  # the front picks it up within a second
        assert time.monotonic() < deadline, "the renewed certificate is not served"
        time.sleep(0.2)
    load.join()
    out = result["r"].stdout
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored",
                  out)
    assert m, out + result["r"].stderr
    assert int(m.group(4)) == 40000 and int(m.group(5)) == 0 and int(m.group(6)) == 0, out
    assert s.events_of("acme.cert.renewed")


def certbot(ca, workdir, root, hosts):
    """certbot certonly --webroot for hosts from ca (the reference client);
    the requests it sent to the CA, counted from its debug log."""
    logs = workdir / ("logs-" + hosts[0])
    cmd = ["certbot", "certonly", "--non-interactive", "--agree-tos", "-m", "ops@example.test",
           "--server", ca.directory, "--webroot", "-w", root, "--cert-name", hosts[0],
           "--config-dir", str(workdir / "config"), "--work-dir", str(workdir / "work"), "--logs-dir", str(logs)]
    for h in hosts:
        cmd += ["-d", h]
    r = subprocess.run(cmd, env=dict(os.environ, REQUESTS_CA_BUNDLE=ca.tls_cert), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(logs / "letsencrypt.log") as f:
        sent = re.findall(r"Sending ((?:GET|HEAD|POST) request to \S+)", f.read())
    print("certbot:", hosts, sent)
    return len(sent)


def test_no_more_round_trips_than_certbot(make_suite, tmp_path):
    """The same two certificates from the same Pebble with Debian's certbot
    (--webroot: the front serves the token files it writes, before the
    site's redirect): our orders send no more requests than certbot's.
    This Pebble checks at once and refuses no nonce at random: with its
    random waits and refusals the counts would be Pebble's dice, not the
    clients'."""
    s, ca = start_pebble_suite(make_suite, tmp_path, nosleep=True)
    try:
        round_trips_against_certbot(s, ca, tmp_path)
    finally:
        s.stop(check=False)
        ca.stop()


def round_trips_against_certbot(s, ca, tmp_path):
    wait_issued(s, ["a", "b"])
    ours = {e["fields"]["site"]: int(e["fields"]["round_trips"])
            for e in s.events_of("acme.cert.issued", lambda e: len(e) >= 2)}
    theirs = {"a": certbot(ca, tmp_path / "certbot", webroot(tmp_path, "a"), ["a.test", "www.a.test"]),
              "b": certbot(ca, tmp_path / "certbot", webroot(tmp_path, "b"), ["b.test"])}
    print("round trips, ours:", ours, "certbot:", theirs)
    assert ours["a"] <= theirs["a"] and ours["b"] <= theirs["b"], (ours, theirs)


def test_the_challenge_path_is_the_fronts_even_on_a_redirecting_site(make_suite, tmp_path):
    conf = tmp_path / "etc"
    write_conf(conf, 'directory = "https://127.0.0.1:9/dir";', {
        "a": f'hosts = ["a.test"]; root = "{DOCROOT}"; tls = "acme"; https_redirect = true; default = true;'})
    s = make_suite(root="", conf=str(conf)).start()
    code, head, body = curl("-H", "Host: a.test", s.url("/.well-known/acme-challenge/unknownToken_1"))
    assert code == 404 and b"no such ACME challenge" in body, (code, head, body)
    code, head, _ = curl("-H", "Host: a.test", s.url("/hello.php"))
    assert code == 301  # the rest of the site still goes to HTTPS


def test_a_ca_that_is_down_is_reported_and_https_keeps_working(make_suite, tmp_path):
    conf = tmp_path / "etc"
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    write_conf(conf, f'directory = "https://127.0.0.1:{port}/dir";', {
        "a": f'hosts = ["a.test"]; root = "{DOCROOT}"; tls = "acme"; default = true;'})
    s = make_suite(root="", conf=str(conf)).start()
    wait_error(s, "a")
    c = certs(s)["a"]
    assert f"127.0.0.1:{port}" in c["last_error"] and c["next_try"] > time.time() + 30, c
    failed = s.events_of("acme.cert.failed")
    assert failed and "127.0.0.1" in json.dumps(failed[0]), failed
    # The site is served meanwhile, with the generated certificate.
    code, _, body = curl("-k", "--resolve", f"a.test:{s.https}:127.0.0.1", f"https://a.test:{s.https}/hello.php")
    assert code == 200 and body == b"hello world\n"
    # A restart remembers the back-off: no order before next_try.
    r = s.vc("restart", "acme", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.vc("status", "--wait", "20").returncode == 0
    assert certs(s)["a"]["next_try"] == c["next_try"]


@pytest.mark.parametrize("site,why", [
    ('hosts = ["*.a.test"]; tls = "acme";', 'the wildcard "*.a.test" needs acme_challenge = "dns-01"'),
    ('hosts = ["a.*.test"];', 'a wildcard is a whole first label'),
    ('hosts = ["*a.test"];', 'a wildcard is a whole first label'),
    ('hosts = ["a.test"]; tls = "acmee";', 'tls is "acme" or not set'),
    ('tls = "acme";', 'tls = "acme" needs hosts'),
    ('hosts = ["a.test"]; tls = "acme"; acme_challenge = "dns-02";',
     'acme_challenge is "http-01", "tls-alpn-01" or "dns-01"'),
])
def test_bad_acme_sites_are_refused_with_file_and_line(make_suite, tmp_path, site, why):
    r = configtest_site(make_suite, tmp_path, 'root = "%s"; %s' % (DOCROOT, site))
    assert r.returncode != 0 and "sites-enabled/x.conf:2" in r.stderr and why in r.stderr, r.stderr


def test_revoke_is_honoured_by_the_ca_and_a_new_certificate_served(pebble_suite, tmp_path):
    s, ca = pebble_suite
    before = wait_issued(s, ["b"])["b"]
    root = ca.root_file(tmp_path)
    cert, old = wait_served(s, "b.test", root)
    r = s.vc("cert", "revoke", "--reason", "4", "b.test")  # superseded
    assert r.returncode == 0, r.stdout + r.stderr
    wait_issued(s, ["b"], after=before["renew_at"])
    status = ca.cert_status(cert["serialNumber"])
    assert status["Status"] == "Revoked" and status["Reason"] == 4, status
    deadline = time.monotonic() + 10
    while served_cert(s, "b.test", root)[1] == old:
        assert time.monotonic() < deadline, "the new certificate is not served"
        time.sleep(0.2)


def test_half_an_account_binding_is_refused(make_suite, tmp_path):
    conf = tmp_path / "etc"
    write_conf(conf, 'eab_kid = "kid-7";', {"b": f'hosts = ["b.test"]; root = "{DOCROOT}"; default = true;'})
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode != 0 and "acme.eab_kid and acme.eab_hmac_key go together" in r.stderr, r.stderr


def test_dns01_without_a_hook_is_refused(make_suite, tmp_path):
    r = configtest_site(make_suite, tmp_path, 'root = "%s"; hosts = ["*.a.test"]; tls = "acme"; '
                        'acme_challenge = "dns-01";' % DOCROOT)
    assert r.returncode != 0 and 'site "x" answers DNS-01: acme.dns_hook must name a program' in r.stderr, r.stderr


def dns_hook(tmp_path, ca, fail=False):
    """A hook that sets and clears TXT records in Pebble's DNS server
    (pebble-challtestsrv's management API), as one for a DNS provider's
    API would; or one that fails as a hook without its API token does."""
    hook = tmp_path / "dns-hook"
    api = f"http://127.0.0.1:{ca.dns_mgmt}"
    hook.write_text(f"""#!/bin/sh
echo "$1 $2"
[ -n "{'fail' if fail else ''}" ] && {{ echo "no API token for $2" >&2; exit 3; }}
case "$1" in
set) exec curl -sS -X POST -d "{{\\"host\\":\\"$2.\\",\\"value\\":\\"$3\\"}}" {api}/set-txt ;;
unset) exec curl -sS -X POST -d "{{\\"host\\":\\"$2.\\"}}" {api}/clear-txt ;;
esac
exit 2
""")
    hook.chmod(0o755)
    return hook


def dns_suite(make_suite, tmp_path, fail=False):
    conf = tmp_path / "etc"
    s = make_suite(root="", conf=str(conf))
    ca = Pebble(tmp_path / "ca", s.http, s.https, nosleep=True).start()
    write_conf(conf, f'directory = "{ca.directory}"; ca_bundle = "{ca.tls_cert}"; '
                     f'dns_hook = "{dns_hook(tmp_path, ca, fail)}"; dns_wait = "1s";', {
        "w": f'hosts = ["w.test", "*.w.test"]; root = "{DOCROOT}"; tls = "acme"; acme_challenge = "dns-01";',
        # The default site has no hello.php: a name under the wildcard reaches w or fails.
        "z": f'hosts = ["z.test"]; root = "{webroot(tmp_path, "z")}"; default = true;'})
    return start_with(s, ca)


def test_a_wildcard_by_dns01_through_the_hook(make_suite, tmp_path):
    s, ca = dns_suite(make_suite, tmp_path)
    try:
        wait_issued(s, ["w"])
        root = ca.root_file(tmp_path)
        for host in ("w.test", "shop.w.test"):  # the name, and one under the wildcard
            cert, _ = wait_served(s, host, root)
            assert {v for k, v in cert["subjectAltName"] if k == "DNS"} == {"w.test", "*.w.test"}, cert
        code, _, body = curl("--cacert", root, "--resolve", f"shop.w.test:{s.https}:127.0.0.1",
                             f"https://shop.w.test:{s.https}/hello.php")
        assert code == 200 and body == b"hello world\n"
        logs = s.logs()
        assert "dns-hook" in logs and "set _acme-challenge.w.test" in logs and "unset _acme-challenge.w.test" in logs
    finally:
        s.stop(check=False)
        ca.stop()


def test_a_failing_dns_hook_is_reported(make_suite, tmp_path):
    s, ca = dns_suite(make_suite, tmp_path, fail=True)
    try:
        err = wait_error(s, "w")
        assert "the dns-01 answer could not be published" in err, err
        assert "exited with 3: no API token for _acme-challenge.w.test" in err, err
        assert "dns-hook" in s.logs() and "no API token" in s.logs()  # its output, logged
    finally:
        s.stop(check=False)
        ca.stop()


EAB_KEY = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"


@pytest.mark.parametrize("bound", [True, False])
def test_external_account_binding(make_suite, tmp_path, bound):
    """A CA that wants accounts bound to one of its customers' (Pebble
    with externalAccountBindingRequired): with the key id and MAC key it
    gave, the account is made and the certificate issued; without, its
    refusal is the order's error. The MAC key is never logged."""
    conf = tmp_path / "etc"
    s = make_suite(root="", conf=str(conf))
    ca = Pebble(tmp_path / "ca", s.http, s.https, nosleep=True, eab={"kid-7": EAB_KEY}).start()
    eab = f'eab_kid = "kid-7"; eab_hmac_key = "{EAB_KEY}";' if bound else ""
    write_conf(conf, f'directory = "{ca.directory}"; ca_bundle = "{ca.tls_cert}"; {eab}', {
        "b": f'hosts = ["b.test"]; root = "{DOCROOT}"; tls = "acme"; default = true;'})
    try:
        s.start()
        if bound:
            wait_issued(s, ["b"])
        else:
            assert "externalAccountRequired" in wait_error(s, "b"), certs(s)
        assert EAB_KEY not in s.logs()
    finally:
        s.stop(check=False)
        ca.stop()
