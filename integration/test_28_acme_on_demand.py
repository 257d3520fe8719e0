"""On-demand TLS against Pebble: a handshake for a host no site names gets
a certificate only if the operator's ask URL says yes, within a rate limit
on new certificates; a name no CA would issue for is not even asked
about; the configuration refuses on-demand TLS without an ask URL."""
import http.server
import os
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse

from acme_ca import Pebble, certs, start_with, wait_served, write_conf
from conftest import FIXTURES, configtest_site

DOCROOT = os.path.join(FIXTURES, "docroot")


class AskServer:
    """The operator's ask endpoint: 200 for hosts under ok.test, 403 for
    any other; it records every host it is asked about."""

    def __init__(self):
        self.asked = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
                host = q.get("domain", [""])[0]
                outer.asked.append(host)
                self.send_response(200 if host.endswith(".ok.test") else 403)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/ask"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def hello(s, host):
    """A handshake naming host, trusting anything (the first one gets the
    generated certificate while vc-acme orders)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", s.https), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as t:
            return t.getpeercert(binary_form=True)


def wait_refused(s, host, timeout=30):
    """The acme.on_demand.refused event for host, once there is one."""
    deadline = time.monotonic() + timeout
    while True:
        got = [e["fields"] for e in s.events() if e["topic"] == "acme.on_demand.refused"
               and e["fields"]["host"] == host]
        if got:
            return got[0]
        assert time.monotonic() < deadline, f"{host} was not refused:\n{s.logs()[-3000:]}"
        hello(s, host)  # a front tells vc-acme again after 10 s; this keeps it asking
        time.sleep(0.3)


def test_on_demand_certificates_need_the_ask_url_and_keep_the_rate_limit(make_suite, tmp_path):
    conf = tmp_path / "etc"
    s = make_suite(root="", conf=str(conf))
    ca = Pebble(tmp_path / "ca", s.http, s.https).start()
    ask = AskServer()
    write_conf(conf, f'directory = "{ca.directory}"; ca_bundle = "{ca.tls_cert}"; '
                     f'on_demand_ask = "{ask.url}"; on_demand_per_hour = 2;',
               {"main": f'root = "{DOCROOT}"; default = true; acme_on_demand = true;'})
    with open(conf / "vc.conf", "a") as f:
        f.write("front: { processes = 1; };\n")
    try:
        start_with(s, ca)
        root = ca.root_file(tmp_path)
        generated = hello(s, "A.ok.test")
        # Approved: issued, installed 0600 and served by SNI, with a chain to Pebble's root.
        cert, der = wait_served(s, "a.ok.test", root, timeout=90)
        assert der != generated and ("DNS", "a.ok.test") in cert["subjectAltName"], cert
        key = os.path.join(s.data, "tls", "acme", "on-demand", "a.ok.test.key")
        assert os.stat(key).st_mode & 0o777 == 0o600
        listed = certs(s)["on-demand/a.ok.test"]
        assert listed["hosts"] == "a.ok.test" and "Pebble" in listed["issuer"], listed
        # Refused by the ask URL: no certificate, nothing kept, no rate limit spent.
        why = wait_refused(s, "evil.test")["why"]
        assert "answered 403" in why, why
        assert hello(s, "evil.test") == generated
        assert "on-demand/evil.test" not in certs(s)
        # Not names a CA issues for: the front does not even tell vc-acme.
        bad = ("under_score.ok.test", "127.0.0.1", "localhost", "-x.ok.test", "x" * 64 + ".ok.test")
        for host in bad:  # openssl sends any of them (Python's ssl refuses some)
            r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{s.https}", "-servername", host],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
            assert b"BEGIN CERTIFICATE" in r.stdout, r.stderr
        # The second approved host (after the bad ones: one front process,
        # so vc-acme hears of them in this order) takes the last of the
        # limit, 2 an hour ...
        hello(s, "b.ok.test")
        wait_served(s, "b.ok.test", root, timeout=90)
        assert ask.asked == ["a.ok.test", "evil.test", "b.ok.test"], ask.asked
        wanted = [e["fields"]["host"] for e in s.events() if e["topic"] == "tls.on_demand.wanted"]
        assert not set(wanted) & set(bad), wanted
        # ... so a third is refused without the ask URL being asked.
        why = wait_refused(s, "c.ok.test")["why"]
        assert "rate limit" in why and "c.ok.test" not in ask.asked, (why, ask.asked)
        assert set(certs(s)) == {"on-demand/a.ok.test", "on-demand/b.ok.test"}, certs(s)
        s.stop()
    finally:
        s.stop(check=False)
        ask.stop()
        ca.stop()


def test_on_demand_needs_an_ask_url_and_the_default_site(make_suite, tmp_path):
    conf = tmp_path / "etc"
    write_conf(conf, "", {"main": f'root = "{DOCROOT}"; default = true; acme_on_demand = true;'})
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode != 0 and 'site "main" has acme_on_demand: acme.on_demand_ask must be the URL' in r.stderr, \
        r.stderr
    r = configtest_site(make_suite, tmp_path / "b", 'root = "%s"; hosts = ["x.test"]; acme_on_demand = true;'
                        % DOCROOT)
    assert r.returncode != 0 and "sites-enabled/x.conf:2" in r.stderr and \
        "acme_on_demand is for the default site" in r.stderr, r.stderr
