"""X-Accel-Redirect and X-Sendfile (docs/configuration.md, "Files PHP hands
to the front"): a PHP answer naming a file is served by the front from it,
side by side with nginx (an internal location) and Apache with
mod_xsendfile (XSendFilePath), both passing PHP to php-fpm: the same
status, the headers each keeps, ranges, conditional requests and bytes.
Names that leave the allowed directory are refused, a symlink out of it
too (where Apache, which does not look, would serve it)."""
import http.client
import os
import shutil
import tempfile
import threading
import time

import pytest

from apache_reference import Apache
from conftest import Suite, site_symlink
from reference import Reference
from trees import open_to_all, write_tree

HOST = "handoff.test"

SCRIPT = r"""<?php
// ?h=X-Accel-Redirect or X-Sendfile, ?to=the name; ?type, ?status, ?etag
if (isset($_GET['status'])) http_response_code((int)$_GET['status']);
if (isset($_GET['type'])) header('Content-Type: ' . $_GET['type']);
if (isset($_GET['etag'])) header('ETag: "' . $_GET['etag'] . '"');
header('Content-Disposition: attachment; filename="report.pdf"');
header('X-Custom: kept only by mod_xsendfile');
header('Cache-Control: private, max-age=60');
setcookie('downloaded', 'yes');
header($_GET['h'] . ': ' . $_GET['to']);
echo "PHP's own body, which a handoff drops\n";
// ?linger=N: the script goes on writing for N tenths of a second after
// its headers are out, as a download counter's bookkeeping might.
for ($i = 0; $i < (int)($_GET['linger'] ?? 0); $i++) {
    while (ob_get_level()) ob_end_flush();  // output_buffering holds it otherwise
    flush();
    usleep(100000);
    echo ".";
}
"""


@pytest.fixture(scope="module")
def tree():
    tmp = tempfile.mkdtemp(prefix="vc-handoff-")
    root, private = os.path.join(tmp, "site"), os.path.join(tmp, "private")
    files = {
        os.path.join(root, "down.php"): SCRIPT.encode(),
        os.path.join(root, "index.php"): b"<?php echo 'front controller';",
        os.path.join(root, "pub.txt"): b"a public file in the root\n",
        os.path.join(private, "doc.pdf"): bytes(range(256)) * 400,
        os.path.join(private, "a b.txt"): b"a name with a space\n",
        os.path.join(private, "sub", "deep.bin"): b"\x00\x01deep" * 100,
        os.path.join(tmp, "secret.txt"): b"outside every allowed directory\n",
    }
    write_tree(tmp, {os.path.relpath(path, tmp): data for path, data in files.items()})
    open_to_all(tmp)
    site_symlink(os.path.join(tmp, "secret.txt"), os.path.join(private, "link.txt"))
    yield tmp, root, private, files
    shutil.rmtree(tmp, ignore_errors=True)


def fetch(port, path, method="GET", headers=None, body=None):
    """(status, {lowercase name: value, repeated ones joined by ", "}, body),
    asking for no compression."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request(method, path, body=body, headers={"Host": HOST, **(headers or {})})
        r = c.getresponse()
        data = r.read()
        hs = {}
        for k, v in r.getheaders():
            hs[k.lower()] = hs[k.lower()] + ", " + v if k.lower() in hs else v
        return r.status, hs, data
    finally:
        c.close()


# What the two servers must agree on: these headers' values, and whether
# these others are there (validators differ in form between servers).
COMPARED = ("content-type", "content-disposition", "cache-control", "set-cookie", "x-custom", "content-range",
            "content-length", "accept-ranges", "x-accel-redirect", "x-sendfile")
PRESENT = ("etag", "last-modified")


def seen(answer):
    status, hs, body = answer
    if status >= 400 and "x-sendfile" not in hs:  # each server's own error page
        hs = {k: v for k, v in hs.items() if k not in ("content-length", "content-type")}
        body = b""
    return (status, {k: hs.get(k) for k in COMPARED}, {k: k in hs for k in PRESENT}, body)


def q(h, to, **more):
    from urllib.parse import urlencode
    return "/down.php?" + urlencode({"h": h, "to": to, **more})


@pytest.fixture(scope="module")
def stacks(tree):
    tmp, root, private, _ = tree
    conf = os.path.join(tmp, "etc")
    os.makedirs(os.path.join(conf, "sites-enabled"))
    with open(os.path.join(conf, "vc.conf"), "w") as f:
        f.write("php: { workers = 2; };\n")
    with open(os.path.join(conf, "sites-enabled", "handoff.conf"), "w") as f:
        f.write(f'site: {{ hosts = ["{HOST}"]; root = "{root}"; front_controller = true;\n'
                f'  internal_locations = ["/protected/ {private}"]; sendfile_paths = ["{private}/"]; }};\n')
    ours = Suite(root="", conf=conf, as_root=False).start()
    nginx = apache = None
    try:
        nginx = Reference(2, "classic", tmp, root, server_name=HOST,
                          locations=f"location /protected/ {{ internal; alias {private}/; }}")
        apache = Apache(2, tmp, root, config=f"XSendFile On\nXSendFilePath {private}")
        yield ours, nginx, apache
    finally:
        for s in (nginx, apache):
            if s:
                s.stop()
        ours.stop()
        ours.cleanup()


ACCEL_CASES = [
    ("a file of an internal location", q("X-Accel-Redirect", "/protected/doc.pdf", type="application/pdf"), {}),
    ("a range of it", q("X-Accel-Redirect", "/protected/doc.pdf", type="application/pdf"), {"Range": "bytes=10-99"}),
    ("a range past its end", q("X-Accel-Redirect", "/protected/doc.pdf"), {"Range": "bytes=999999-"}),
    ("PHP's default type stays", q("X-Accel-Redirect", "/protected/sub/deep.bin"), {}),
    ("a name %-encoded", q("X-Accel-Redirect", "/protected/a%20b.txt", type="text/plain"), {}),
    ("a query is not part of the name", q("X-Accel-Redirect", "/protected/doc.pdf?x=1"), {}),
    ("a file of the root", q("X-Accel-Redirect", "/pub.txt", type="text/plain"), {}),
    ("no such file", q("X-Accel-Redirect", "/protected/nope.pdf"), {}),
    ("a dot-dot out of it", q("X-Accel-Redirect", "/protected/../secret.txt"), {}),
    ("an encoded dot-dot", q("X-Accel-Redirect", "/protected/%2e%2e/secret.txt"), {}),
]


@pytest.mark.parametrize("what,path,headers", ACCEL_CASES, ids=[c[0] for c in ACCEL_CASES])
def test_x_accel_redirect_is_followed_as_nginx_follows_it(stacks, what, path, headers):
    ours, nginx, _ = stacks
    assert seen(fetch(ours.http, path, headers=headers)) == seen(fetch(nginx.http, path, headers=headers)), ours.logs()[-2000:]


def test_x_accel_redirect_serves_the_bytes_and_drops_php_body(stacks, tree):
    ours, _, _ = stacks
    files = tree[3]
    status, hs, body = fetch(ours.http, q("X-Accel-Redirect", "/protected/doc.pdf"))
    assert status == 200 and body == files[os.path.join(tree[2], "doc.pdf")]
    assert "x-custom" not in hs and "x-accel-redirect" not in hs
    status, hs, body = fetch(ours.http, q("X-Accel-Redirect", "/protected/doc.pdf"), headers={"Range": "bytes=5-9"})
    assert status == 206 and body == files[os.path.join(tree[2], "doc.pdf")][5:10]


@pytest.mark.parametrize("method", ["HEAD", "POST"])
def test_a_handoff_of_another_method_is_a_get_of_the_file(stacks, method):
    ours, nginx, _ = stacks
    path = q("X-Accel-Redirect", "/protected/doc.pdf", type="application/pdf")
    assert seen(fetch(ours.http, path, method)) == seen(fetch(nginx.http, path, method))


def test_conditional_requests_use_the_file_validators(stacks, tree):
    ours, nginx, apache = stacks
    doc = os.path.join(tree[2], "doc.pdf")
    for server, h, to in ((ours, "X-Accel-Redirect", "/protected/doc.pdf"),
                          (nginx, "X-Accel-Redirect", "/protected/doc.pdf"),
                          (ours, "X-Sendfile", doc), (apache, "X-Sendfile", doc)):
        status, hs, _ = fetch(server.http, q(h, to))
        assert status == 200 and hs.get("etag"), (server, hs)
        again = fetch(server.http, q(h, to), headers={"If-None-Match": hs["etag"]})
        assert again[0] == 304 and again[2] == b"", (server, again)
        since = fetch(server.http, q(h, to), headers={"If-Modified-Since": hs["last-modified"]})
        assert since[0] == 304, (server, since)


def test_the_worker_is_let_go_once_its_headers_are_out(stacks, tree):
    """Both workers of the pool hand off a file and then would write for
    30 s more: they are told their client left, as php-fpm is when nginx
    closes the FastCGI connection, so a third request finds one free long
    before that."""
    ours, _, _ = stacks
    doc = tree[3][os.path.join(tree[2], "doc.pdf")]
    results = []

    def lingering():
        results.append(fetch(ours.http, q("X-Accel-Redirect", "/protected/doc.pdf", linger="300")))

    threads = [threading.Thread(target=lingering) for _ in range(2)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    status, _, body = fetch(ours.http, "/down.php?h=X-Nothing&to=1")
    elapsed = time.monotonic() - started
    assert [r[0] for r in results] == [200, 200] and all(r[2] == doc for r in results)
    assert status == 200 and body.startswith(b"PHP's own body")
    assert elapsed < 15, f"the third request waited {elapsed:.1f} s for a worker"


def test_clients_never_reach_an_internal_location(stacks):
    ours, nginx, _ = stacks
    for server in (ours, nginx):
        status, _, body = fetch(server.http, "/protected/doc.pdf")
        assert status == 404 and b"\x00\x01" not in body


@pytest.fixture(scope="module")
def private(tree):
    return tree[2]


def sendfile_cases(tmp, private):
    return [
        ("a file of a sendfile path", q("X-Sendfile", f"{private}/doc.pdf", type="application/pdf"), {}),
        ("a range of it", q("X-Sendfile", f"{private}/doc.pdf"), {"Range": "bytes=100-199"}),
        ("two ranges of it", q("X-Sendfile", f"{private}/doc.pdf"), {"Range": "bytes=0-0,-1"}),
        ("a name with a space, as it is", q("X-Sendfile", f"{private}/a b.txt", type="text/plain"), {}),
        ("a name %-encoded: not decoded", q("X-Sendfile", f"{private}/a%20b.txt"), {}),
        ("a deeper one", q("X-Sendfile", f"{private}/sub/deep.bin"), {}),
        ("a file outside every path", q("X-Sendfile", f"{tmp}/secret.txt"), {}),
        ("a dot-dot out of the path", q("X-Sendfile", f"{private}/../secret.txt"), {}),
        ("no such file", q("X-Sendfile", f"{private}/nope.pdf"), {}),
        ("not a 200: passed on as PHP said", q("X-Sendfile", f"{private}/doc.pdf", status="403"), {}),
    ]


def test_x_sendfile_is_followed_as_mod_xsendfile_follows_it(stacks, tree, private):
    ours, _, apache = stacks
    tmp = tree[0]
    for what, path, headers in sendfile_cases(tmp, private):
        mine, theirs = seen(fetch(ours.http, path, headers=headers)), seen(fetch(apache.http, path, headers=headers))
        if what == "two ranges of it":  # multipart boundaries differ: compare the type's start and the status
            assert mine[0] == theirs[0] == 206
            assert mine[1]["content-type"].split(";")[0] == theirs[1]["content-type"].split(";")[0]
            continue
        # Apache honours ranges here without saying so; the front says so
        # (Accept-Ranges: bytes), as for its static files.
        # PHP's own answer, passed on, is framed by each server its way.
        differ = {k: (mine[1][k], theirs[1][k]) for k in COMPARED if mine[1][k] != theirs[1][k] and
                  not (k == "accept-ranges" and mine[1][k] == "bytes" and theirs[1][k] is None) and
                  not (k == "content-length" and mine[1]["x-sendfile"])}
        assert (mine[0], differ, mine[2]) == (theirs[0], {}, theirs[2]), (what, ours.logs()[-2000:], apache.errors())
        assert mine[3] == theirs[3], what


def test_a_symlink_out_of_a_sendfile_path_is_refused(stacks, tree, private):
    ours, _, _ = stacks
    for h, to in (("X-Sendfile", f"{private}/link.txt"), ("X-Accel-Redirect", "/protected/link.txt")):
        status, _, body = fetch(ours.http, q(h, to))
        assert status == 404 and b"outside every allowed" not in body, (h, status, body)


def test_x_sendfile_is_an_ordinary_header_where_the_site_lists_no_path(tree):
    tmp, root, private, _ = tree
    ours = Suite(root=root).start()
    try:
        status, hs, body = fetch(ours.http, q("X-Sendfile", f"{private}/doc.pdf"))
        assert status == 200 and hs.get("x-sendfile") == f"{private}/doc.pdf" and body.startswith(b"PHP's own body")
    finally:
        ours.stop()
        ours.cleanup()


def test_configtest_refuses_a_handoff_directory_that_would_open_the_suite(tree):
    tmp, root, private, _ = tree
    conf = os.path.join(tmp, "etc-bad")
    os.makedirs(os.path.join(conf, "sites-enabled"))
    s = Suite(root="", conf=conf)
    try:
        for line, says in (('sendfile_paths = ["/"];', "would open the suite's own files"),
                           (f'sendfile_paths = ["{s.data}"];', "would open the suite's own files"),
                           (f'sendfile_paths = ["{tmp}/nowhere"];', "is not a directory"),
                           (f'internal_locations = ["protected {private}"];', "is not \"/PREFIX/ DIRECTORY\"")):
            with open(os.path.join(conf, "sites-enabled", "bad.conf"), "w") as f:
                f.write(f'site: {{ hosts = ["bad.test"]; root = "{root}";\n  {line} }};\n')
            r = s.vc("configtest")
            assert r.returncode != 0 and says in r.stdout + r.stderr and "bad.conf:1" in r.stdout + r.stderr, (
                line, r.stdout, r.stderr)
    finally:
        s.cleanup()
