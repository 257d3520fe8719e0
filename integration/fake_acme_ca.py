"""A scripted ACME CA, for what Debian's Pebble 2.4 cannot be made to do:
renewal information (RFC 9773) with a window the test chooses, a
rate-limit refusal with Retry-After, an order that stays "processing"
with a Retry-After, malformed JSON, a nonce refused every time, a failed
challenge, an order that expires, and a request held at a chosen step
while the test kills vc-acme.

It is a fake: it does not check JWS signatures. It does check what a
client must get right: each nonce is one it issued and is used once, the
HTTP-01 answer is fetched from the suite's front (token and the account
key's thumbprint), and the certificate it issues carries the CSR's names.
It speaks plain HTTP on loopback."""
import base64
import datetime
import hashlib
import json
import secrets
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def cert_id(cert):
    """RFC 9773 4.1: base64url(AKI keyIdentifier) "." base64url(the
    serial's DER value bytes: big-endian, a leading zero if the top bit is
    set)."""
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    n = cert.serial_number
    return b64url(aki) + "." + b64url(n.to_bytes(n.bit_length() // 8 + 1, "big"))


def thumbprint(jwk):
    """RFC 7638 for an EC key."""
    members = {k: jwk[k] for k in ("crv", "kty", "x", "y")}
    return b64url(hashlib.sha256(json.dumps(members, sort_keys=True, separators=(",", ":")).encode()).digest())


def rfc3339(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeCA:
    def __init__(self, http_port, lifetime=86400):
        """http_port: the suite's front, where HTTP-01 answers are fetched."""
        self.http_port = http_port
        self.lifetime = lifetime
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Fake ACME CA")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.root = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + datetime.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
                     .sign(self.key, hashes.SHA256()))
        self.lock = threading.Condition()
        self.nonces = set()
        self.requests = []      # (monotonic time, method, path, payload or None)
        self.faults = {}        # step -> a list of answers to give first: (status, body, headers)
        self.windows = {}       # cert id -> (start, end, retry_after or None)
        self.processing = 0     # polls an order stays "processing" for after finalisation
        self.processing_retry_after = None
        self.fail_challenge = False
        self.expire_order = False
        self.hold_at = None     # a step whose request waits until release()...
        self.hold_after = 0     # ...once this many certificates are downloaded
        self.downloads = 0
        self.renew_first_now = False  # the first certificate's window: now
        self.held = threading.Event()
        self.released = threading.Event()
        self.orders, self.authzs, self.certs, self.issued, self.revoked = {}, {}, {}, [], []
        self.thumb = None
        ca = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_HEAD(self):
                ca.handle(self, "HEAD")

            def do_GET(self):
                ca.handle(self, "GET")

            def do_POST(self):
                ca.handle(self, "POST")

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client killed mid-request (the kill tests)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def directory(self):
        return self.base + "/dir"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def root_pem(self):
        return self.root.public_bytes(serialization.Encoding.PEM)

    def fault(self, step, status, body, headers=None, times=1):
        """The next `times` requests at step get this answer instead."""
        with self.lock:
            self.faults.setdefault(step, []).extend([(status, body, headers or {})] * times)

    def problem(self, step, status, type_, detail, headers=None, times=1):
        self.fault(step, status, json.dumps({"type": "urn:ietf:params:acme:error:" + type_, "detail": detail}),
                   headers, times)

    def hold(self, step, after=0):
        self.held.clear()
        self.released.clear()
        self.hold_after = after
        self.hold_at = step

    def release(self):
        self.hold_at = None
        self.released.set()

    def sent(self, step):
        with self.lock:
            return [r for r in self.requests if r[2] == step]

    # ---- the protocol -------------------------------------------------------

    def new_nonce(self):
        n = secrets.token_urlsafe(16)
        with self.lock:
            self.nonces.add(n)
        return n

    def reply(self, h, status, body=b"", ctype="application/json", headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        h.send_response(status)
        h.send_header("Replay-Nonce", self.new_nonce())
        h.send_header("Content-Type", ctype if status < 400 else "application/problem+json")
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    def handle(self, h, method):
        path = h.path.split("?")[0]
        parts = path.strip("/").split("/")
        step = parts[0]
        payload, protected = None, {}
        if method == "POST":
            jws = json.loads(h.rfile.read(int(h.headers.get("Content-Length", 0))))
            protected = json.loads(unb64url(jws["protected"]))
            payload = json.loads(unb64url(jws["payload"])) if jws["payload"] else None
        with self.lock:
            self.requests.append((time.monotonic(), method, step, payload))
            self.lock.notify_all()
        if self.hold_at == step and self.downloads >= self.hold_after:
            self.held.set()
            self.released.wait(60)
        with self.lock:  # after a hold: the test may script the held request's answer
            fault = self.faults[step].pop(0) if self.faults.get(step) else None
        if method == "POST":
            with self.lock:
                fresh = protected.get("nonce") in self.nonces
                self.nonces.discard(protected.get("nonce"))
            if not fresh:
                return self.reply(h, 400, {"type": "urn:ietf:params:acme:error:badNonce", "detail": "unknown nonce"})
        if fault:
            status, body, headers = fault
            return self.reply(h, status, body, headers=headers)
        getattr(self, "on_" + step.replace("-", "_"))(h, parts, payload, protected)

    def on_dir(self, h, parts, payload, protected):
        b = self.base
        self.reply(h, 200, {"newNonce": b + "/nonce", "newAccount": b + "/account", "newOrder": b + "/new-order",
                            "revokeCert": b + "/revoke", "renewalInfo": b + "/renewal-info",
                            "meta": {"profiles": {"classic": "90 days", "shortlived": "6 days"}}})

    def on_nonce(self, h, parts, payload, protected):
        self.reply(h, 200, b"", headers={"Cache-Control": "no-store"})

    def on_account(self, h, parts, payload, protected):
        self.thumb = thumbprint(protected["jwk"])
        self.reply(h, 201, {"status": "valid"}, headers={"Location": self.base + "/acct/1"})

    def on_new_order(self, h, parts, payload, protected):
        n = str(len(self.orders) + 1)
        names = [i["value"] for i in payload["identifiers"]]
        authz = []
        for name in names:
            a = str(len(self.authzs) + 1)
            self.authzs[a] = {"status": "pending", "identifier": {"type": "dns", "value": name},
                              "challenges": [{"type": "http-01", "status": "pending", "token": secrets.token_urlsafe(24),
                                              "url": f"{self.base}/challenge/{a}"}]}
            authz.append(f"{self.base}/authz/{a}")
        self.orders[n] = {"status": "pending", "identifiers": payload["identifiers"], "authorizations": authz,
                          "finalize": f"{self.base}/finalize/{n}", "polls": 0}
        self.reply(h, 201, self.order_view(n), headers={"Location": f"{self.base}/order/{n}"})

    def order_view(self, n):
        return {k: v for k, v in self.orders[n].items() if k != "polls"}

    def on_authz(self, h, parts, payload, protected):
        self.reply(h, 200, self.authzs[parts[1]])

    def on_challenge(self, h, parts, payload, protected):
        a = self.authzs[parts[1]]
        ch = a["challenges"][0]
        want = ch["token"] + "." + self.thumb
        req = urllib.request.Request(f"http://127.0.0.1:{self.http_port}/.well-known/acme-challenge/{ch['token']}",
                                     headers={"Host": a["identifier"]["value"]})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                got = r.read().decode()
        except OSError as e:
            got = str(e)
        ok = got == want and not self.fail_challenge
        ch["status"] = a["status"] = "valid" if ok else "invalid"
        if not ok:
            ch["error"] = {"type": "urn:ietf:params:acme:error:unauthorized",
                           "detail": f"the key authorisation at {a['identifier']['value']} is not the expected one"}
        self.reply(h, 200, ch)

    def on_finalize(self, h, parts, payload, protected):
        n = parts[1]
        o = self.orders[n]
        csr = x509.load_der_x509_csr(unb64url(payload["csr"]))
        names = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName)
        assert sorted(names) == sorted(i["value"] for i in o["identifiers"]), names
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(csr.subject).issuer_name(self.root.subject)
                .public_key(csr.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=1))
                .not_valid_after(now + datetime.timedelta(seconds=self.lifetime))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(x) for x in names]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                               critical=False)
                .sign(self.key, hashes.SHA256()))
        self.certs[n] = cert.public_bytes(serialization.Encoding.PEM) + self.root_pem()
        self.issued.append(cert)
        o["status"] = "processing"
        o["certificate"] = f"{self.base}/cert/{n}"
        self.order_answer(h, n)

    def order_answer(self, h, n):
        o = self.orders[n]
        if o["status"] == "processing" and o["polls"] >= self.processing:
            o["status"] = "invalid" if self.expire_order else "valid"
            if self.expire_order:
                o["error"] = {"type": "urn:ietf:params:acme:error:malformed", "detail": "the order expired"}
        o["polls"] += 1
        view = self.order_view(n)
        if view["status"] != "valid":
            view.pop("certificate", None)
        ra = self.processing_retry_after
        self.reply(h, 200, view, headers={"Retry-After": str(ra)} if ra and view["status"] == "processing" else {})

    def on_order(self, h, parts, payload, protected):
        self.order_answer(h, parts[1])

    def on_cert(self, h, parts, payload, protected):
        self.downloads += 1
        self.reply(h, 200, self.certs[parts[1]], ctype="application/pem-certificate-chain")

    def on_revoke(self, h, parts, payload, protected):
        der = unb64url(payload["certificate"])
        serials = [c.serial_number for c in self.issued]
        if x509.load_der_x509_certificate(der).serial_number not in serials:
            return self.reply(h, 404, {"type": "urn:ietf:params:acme:error:malformed", "detail": "not ours"})
        self.revoked.append((x509.load_der_x509_certificate(der).serial_number, payload.get("reason")))
        self.reply(h, 200, b"")

    def on_renewal_info(self, h, parts, payload, protected):
        ids = {cert_id(c): c for c in self.issued}
        if len(parts) != 2 or parts[1] not in ids:
            return self.reply(h, 404, {"type": "urn:ietf:params:acme:error:malformed", "detail": "unknown cert id"})
        c = ids[parts[1]]
        if c is self.issued[0] and self.renew_first_now:
            start, end, ra = time.time() - 60, time.time() + 1, None
        elif parts[1] in self.windows:
            start, end, ra = self.windows[parts[1]]
        else:  # the usual: the last third of its life
            utc = datetime.timezone.utc
            nb = c.not_valid_before.replace(tzinfo=utc).timestamp()
            na = c.not_valid_after.replace(tzinfo=utc).timestamp()
            start, end, ra = nb + (na - nb) * 2 / 3, na - 60, None
        self.reply(h, 200, {"suggestedWindow": {"start": rfc3339(start), "end": rfc3339(end)}},
                   headers={"Retry-After": str(ra)} if ra else {})
