"""vc up with no configuration: status, events, the request path."""
import json
import os
import subprocess

from conftest import VC, curl


def test_status_wait_and_json(suite):
    r = suite.vc("status")
    assert r.returncode == 0, r.stderr
    for name in ("vc-bus", "vc-cache", "vc-php", "vc-front", "vc-acme"):
        assert name in r.stdout
    st = suite.status()
    assert st["healthy"] is True
    names = [d["daemon"] for d in st["daemons"]]
    assert names == ["vc-bus", "vc-cache", "vc-php", "vc-front", "vc-acme"]
    for d in st["daemons"]:
        assert d["state"] == "running" and int(d["pid"]) > 0
        assert d["status"]["version"]
    php = [d for d in st["daemons"] if d["daemon"] == "vc-php"][0]
    assert len(php["workers"]) == int(php["status"]["workers_wanted"])


def test_events_from_every_daemon(suite):
    topics = {(e["topic"], e["source"]) for e in suite.events()}
    for want in [("bus.started", "vc-bus"), ("cache.started", "vc-cache"), ("php.started", "vc-php"),
                 ("front.started", "vc-front"), ("acme.started", "vc-acme"),
                 ("vc.started", "vc")]:
        assert want in topics, topics
    # A topic prefix filters.
    r = suite.vc("events", "--since", "5m", "php.", check=True)
    assert "php.started" in r.stdout and "bus.started" not in r.stdout


def test_vc_ctl_lists_each_daemons_verbs_from_its_table(suite):
    """`vc ctl DAEMON` lists the verbs the daemon runs, as its man page
    does (test_33_tables holds the page to the source's table); a verb is
    sent and answered; an unknown one is refused with the list."""
    from test_33_tables import man_verbs
    for daemon in ("front", "php", "bus", "cache", "acme", "vc"):
        r = suite.vc("ctl", "--json", daemon, check=True)
        listed = [rec["verb"] for rec in json.loads(r.stdout)["records"]]
        assert listed == man_verbs("vc" if daemon == "vc" else "vc-" + daemon), (daemon, listed)
    r = suite.vc("ctl", "front", check=True)
    assert "rooms [ROOM]" in r.stdout and "status" in r.stdout
    r = suite.vc("ctl", "php", "status", check=True)
    assert "workers_wanted:" in r.stdout
    r = suite.vc("ctl", "cache", "no-such-verb")
    assert r.returncode == 1 and 'unknown command "no-such-verb"' in r.stderr and "purge" in r.stderr


def test_metrics_are_the_docs_table(suite):
    """Every metric a front shows is docs/observing.md's row, kind and
    help alike, and every front metric the docs list is shown."""
    import requests
    from metrics_doc import assert_documented
    text = requests.get(f"http://127.0.0.1:{suite.admin}/metrics", timeout=10).text
    seen = assert_documented(text, "vc_front_")
    assert "vc_front_requests_total" in seen and "vc_front_cache_hits_total" in seen and len(seen) > 40
    # vc status's fields come from the same table.
    front = [d for d in suite.status()["daemons"] if d["daemon"] == "vc-front"][0]["status"]
    assert {"requests", "static", "connections", "framing_refused", "cache_hits", "handoffs"} <= set(front), front


def test_serves_php_and_static(suite):
    code, head, body = curl(suite.url("/hello.php?name=velocity"))
    assert code == 200 and body == b"hello velocity\n"
    assert "content-type: text/plain" in head.lower()
    code, head, body = curl(suite.url("/style.css"))
    assert code == 200 and body == b"body { color: #123; }\n"
    code, _, body = curl(suite.url("/no/such/page"))
    assert code == 200 and body == b"front controller: /no/such/page\n"


def test_same_bytes_over_h1_h2_h2c(suite):
    for path in ("/hello.php?name=h", "/style.css"):
        _, _, h1 = curl(suite.url(path))
        _, h2head, h2 = curl("--http2", "-k", suite.surl(path))
        _, h2chead, h2c = curl("--http2-prior-knowledge", suite.url(path))
        assert h2head.startswith("HTTP/2") and h2chead.startswith("HTTP/2")
        assert h1 == h2 == h2c


def test_php_sees_the_request(suite):
    code, _, body = curl("-d", "a=1&b=two", "-b", "c=3", suite.url("/server.php/extra?x=y"))
    assert code == 200
    got = json.loads(body)
    s = got["server"]
    assert got["post"] == {"a": "1", "b": "two"} and got["get"] == {"x": "y"} and got["cookie"] == {"c": "3"}
    assert s["SCRIPT_NAME"] == "/server.php" and s["PATH_INFO"] == "/extra"
    assert s["REQUEST_URI"] == "/server.php/extra?x=y" and s["QUERY_STRING"] == "x=y"
    assert s["SCRIPT_FILENAME"] == os.path.join(suite.root, "server.php")
    assert s["REQUEST_METHOD"] == "POST" and s["CONTENT_TYPE"] == "application/x-www-form-urlencoded"
    assert s["REMOTE_ADDR"] == "127.0.0.1" and s["SERVER_PORT"] == str(suite.http)
    assert got["sapi"] == "fpm-fcgi"


def test_dotfiles_and_escapes_refused(suite):
    for path in ("/.env", "/.git/config", "/%2e%2e/%2e%2e/etc/passwd", "/hello.php/../.env"):
        code, _, body = curl("--path-as-is", suite.url(path))
        # Refused, or normalised inside the root and answered by the front
        # controller: never the file, never anything outside the root.
        assert code in (400, 404) or body.startswith(b"front controller: "), (path, code, body)
        assert b"secret" not in body and b"root:" not in body


def test_https_works_with_no_configuration(suite):
    code, _, body = curl("-k", suite.surl("/hello.php"))
    assert code == 200 and body == b"hello world\n"
    key = os.path.join(suite.data, "tls", "selfsigned.key")
    assert os.stat(key).st_mode & 0o777 == 0o600


def test_commands_without_a_running_suite(tmp_path):
    r = subprocess.run([VC, "--data", str(tmp_path / "none"), "status"], capture_output=True, text=True)
    assert r.returncode != 0 and "no suite runs" in r.stderr
    r = subprocess.run([VC, "--data", str(tmp_path / "none"), "stop"], capture_output=True, text=True)
    assert r.returncode != 0 and "no suite runs" in r.stderr
    r = subprocess.run([VC, "version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("vc ")
