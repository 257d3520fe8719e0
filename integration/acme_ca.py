"""A real ACME CA for the tests: Debian's Pebble (-strict, its nonce
rejections and validation delays left on, the delays up to 1 s), with pebble-challtestsrv as
its DNS server, which answers every name with 127.0.0.1, so Pebble checks
HTTP-01 and TLS-ALPN-01 against the suite's own ports. And what the ACME
tests share: a configuration, `vc cert list`, the certificate served."""
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.request

from conftest import free_port


class Pebble:
    def __init__(self, workdir, http_port, https_port, nosleep=False, eab=None):
        """nosleep: no random wait before a validation and no random nonce
        refusal (PEBBLE_VA_NOSLEEP, PEBBLE_WFE_NONCEREJECT=0), for counts
        that should not depend on them. eab: {key id: MAC key (base64url)}:
        accounts need External Account Binding with one of them."""
        self.nosleep = nosleep
        self.dir = str(workdir)
        os.makedirs(self.dir, exist_ok=True)
        self.port, self.mgmt, self.dns, self.dns_mgmt = free_port(), free_port(), free_port(), free_port()
        # Pebble's own HTTPS: a certificate for 127.0.0.1 that the suite trusts.
        self.tls_cert = os.path.join(self.dir, "pebble.crt")
        self.tls_key = os.path.join(self.dir, "pebble.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-days", "2", "-subj", "/CN=pebble", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                        "-keyout", self.tls_key, "-out", self.tls_cert], check=True, capture_output=True)
        conf = {"pebble": {"listenAddress": f"127.0.0.1:{self.port}",
                           "managementListenAddress": f"127.0.0.1:{self.mgmt}",
                           "certificate": self.tls_cert, "privateKey": self.tls_key,
                           "httpPort": http_port, "tlsPort": https_port,
                           "ocspResponderURL": "", "externalAccountBindingRequired": bool(eab),
                           "externalAccountMACKeys": eab or {}}}
        self.conf = os.path.join(self.dir, "pebble.json")
        with open(self.conf, "w") as f:
            json.dump(conf, f)
        self.procs = []

    @property
    def directory(self):
        return f"https://127.0.0.1:{self.port}/dir"

    def start(self):
        log = open(os.path.join(self.dir, "challtestsrv.log"), "w")
        self.procs.append(subprocess.Popen(
            ["pebble-challtestsrv", "-dns01", f"127.0.0.1:{self.dns}", "-http01", "", "-https01", "",
             "-tlsalpn01", "", "-management", f"127.0.0.1:{self.dns_mgmt}", "-defaultIPv4", "127.0.0.1",
             "-defaultIPv6", ""], stdout=log, stderr=subprocess.STDOUT))
        log = open(os.path.join(self.dir, "pebble.log"), "w")
        # Pebble's own default waits up to 15 s before each validation: the
        # client's polling of a pending challenge is as well exercised by
        # waits of 0 or 1 s (PEBBLE_VA_SLEEPTIME=2), at a fraction of the time.
        env = (dict(os.environ, PEBBLE_VA_NOSLEEP="1", PEBBLE_WFE_NONCEREJECT="0") if self.nosleep
               else dict(os.environ, PEBBLE_VA_SLEEPTIME="2"))
        self.procs.append(subprocess.Popen(
            ["pebble", "-config", self.conf, "-strict", "-dnsserver", f"127.0.0.1:{self.dns}"],
            stdout=log, stderr=subprocess.STDOUT, env=env))
        deadline = time.monotonic() + 20
        for port in (self.port, self.mgmt, self.dns_mgmt):
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "Pebble did not start: " + self.log()
                    time.sleep(0.05)
        return self

    def log(self):
        with open(os.path.join(self.dir, "pebble.log")) as f:
            return f.read()

    def root_file(self, workdir):
        """root_pem() written to a file in workdir, for a client's trust."""
        path = workdir / "pebble-root.pem"
        path.write_bytes(self.root_pem())
        return str(path)

    def root_pem(self):
        """The root Pebble issues under (made at its start), to trust."""
        ctx = ssl.create_default_context(cafile=self.tls_cert)
        with urllib.request.urlopen(f"https://127.0.0.1:{self.mgmt}/roots/0", context=ctx, timeout=10) as r:
            root = r.read()
        with urllib.request.urlopen(f"https://127.0.0.1:{self.mgmt}/intermediates/0", context=ctx, timeout=10) as r:
            return root + b"\n" + r.read()

    def cert_status(self, serial_hex):
        """Pebble's record of a certificate it issued: {"Status": "Valid" or
        "Revoked", "Reason": ...}."""
        ctx = ssl.create_default_context(cafile=self.tls_cert)
        url = f"https://127.0.0.1:{self.mgmt}/cert-status-by-serial/{serial_hex.lower()}"
        with urllib.request.urlopen(url, context=ctx, timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


def write_conf(conf, acme, sites):
    (conf / "sites-enabled").mkdir(parents=True, exist_ok=True)
    (conf / "vc.conf").write_text("acme: { %s };\n" % acme)
    for name, body in sites.items():
        (conf / "sites-enabled" / f"{name}.conf").write_text("site: { %s };\n" % body)


def certs(s):
    r = s.vc("cert", "list", "--json", check=True)
    return {c["site"]: c for c in map(json.loads, r.stdout.splitlines())}


def wait_issued(s, sites, after=0, timeout=150, errors_ok=False):
    """Polls vc cert list until each site has a certificate newer than
    after; a failure ends the wait unless errors_ok."""
    deadline = time.monotonic() + timeout
    while True:
        c = certs(s)
        if all(c[x]["not_after"] > 0 and c[x]["renew_at"] > after for x in sites):
            return c
        failed = {x: c[x]["last_error"] for x in sites if c[x]["last_error"]}
        assert errors_ok or not failed, failed
        assert time.monotonic() < deadline, (c, s.logs()[-3000:])
        time.sleep(0.5)


def served_cert(s, host, cafile):
    """The certificate the front hands a client asking for host, checked
    against cafile (Pebble's root and intermediate)."""
    ctx = ssl.create_default_context(cafile=cafile)
    with socket.create_connection(("127.0.0.1", s.https), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as t:
            return t.getpeercert(), t.getpeercert(binary_form=True)


def wait_served(s, host, cafile, timeout=10):
    """served_cert, once the front serves a certificate cafile verifies
    (it looks for vc-acme's files once a second)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return served_cert(s, host, cafile)
        except ssl.SSLCertVerificationError:
            assert time.monotonic() < deadline, f"{host}: no certificate from the CA is served"
            time.sleep(0.2)


def start_with(s, ca):
    """The suite started, or the CA stopped if it does not start."""
    try:
        s.start()
    except BaseException:
        ca.stop()
        raise
    return s, ca


def wait_error(s, site, timeout=30):
    """The site's last error in vc cert list, once there is one."""
    deadline = time.monotonic() + timeout
    while not certs(s)[site]["last_error"]:
        assert time.monotonic() < deadline, s.logs()[-3000:]
        time.sleep(0.2)
    return certs(s)[site]["last_error"]
