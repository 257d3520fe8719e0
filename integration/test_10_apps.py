"""Real applications from Debian's packages, run unmodified under Velocity
and under nginx + php-fpm 8.2: the same walk through each, the same pages
after normalising what changes with every request (tokens, times, ports).

DokuWiki (package dokuwiki): create a page, view it, edit it, view it
again, list its revisions; in classic mode. (Worker mode is for apps
written for it: DokuWiki builds its globals in a require_once'd init.php,
so a worker that runs doku.php again finds them reset and init not rerun.)"""
import difflib
import html
import os
import re
import shutil
import tempfile

import pytest
import requests

from conftest import Suite
from reference import Reference

DOKUWIKI = "/usr/share/dokuwiki"
HOST = "wiki.test"


def dokuwiki_tree(dst):
    """Debian's DokuWiki as upstream lays it out, in dst: code, conf/ and
    data/ in one tree (Debian's preload.php, which points at /etc and
    /var/lib, is left out). Returns the pristine data/ copy to reset to."""
    shutil.copytree(DOKUWIKI, dst, symlinks=False, ignore_dangling_symlinks=True)
    os.remove(os.path.join(dst, "inc", "preload.php"))
    shutil.copytree("/etc/dokuwiki", os.path.join(dst, "conf"), symlinks=False, ignore_dangling_symlinks=True)
    shutil.copytree("/var/lib/dokuwiki/data", os.path.join(dst, "data"), symlinks=False,
                    ignore_dangling_symlinks=True)
    with open(os.path.join(dst, "conf", "local.php"), "w") as f:
        f.write("<?php\n$conf['savedir'] = './data';\n$conf['useacl'] = 0;\n$conf['title'] = 'Conformance';\n"
                "$conf['userewrite'] = 0;\n$conf['send404'] = 1;\n")
    pristine = dst + ".data"
    shutil.copytree(os.path.join(dst, "data"), pristine, symlinks=True)
    return pristine


def reset_data(tree, pristine):
    shutil.rmtree(os.path.join(tree, "data"))
    shutil.copytree(pristine, os.path.join(tree, "data"), symlinks=True)


def hidden_fields(page):
    return {m.group(1): html.unescape(m.group(2))
            for m in re.finditer(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)}


def walk(port):
    """Create, view, edit, view, revisions. Returns the answers."""
    base = f"http://127.0.0.1:{port}"
    sess = requests.Session()
    # Identity: compression is the server's business, not PHP's, and the
    # two differ by design there (Velocity adds Vary: Accept-Encoding,
    # nginx's default gzip_vary does not).
    sess.headers.update({"Host": HOST, "User-Agent": "conformance", "Accept-Encoding": "identity"})
    out = []

    def get(path):
        r = sess.get(base + path, allow_redirects=False, timeout=30)
        out.append(r)
        return r

    def save(text, summary):
        form = hidden_fields(get("/doku.php?id=wiki:velocity&do=edit").text)
        assert "sectok" in form, form
        form.update({"wikitext": text, "summary": summary, "do[save]": "Save"})
        r = sess.post(base + "/doku.php?id=wiki:velocity", data=form, allow_redirects=False, timeout=30)
        out.append(r)
        assert r.status_code in (302, 303), r.status_code

    get("/doku.php?id=wiki:velocity")
    save("====== Velocity ======\n\nHello **world**, from a [[wiki:syntax|test]].\n", "created")
    get("/doku.php?id=wiki:velocity")
    save("====== Velocity ======\n\nEdited: //twice//.\n\n  * one\n  * two\n", "edited")
    get("/doku.php?id=wiki:velocity")
    get("/doku.php?id=wiki:velocity&do=revisions")
    get("/doku.php?id=start")
    return out


def normalise(r, ports):
    body = r.text
    heads = []
    for k, v in sorted((k.lower(), v) for k, v in r.headers.items()):
        if k in ("date", "server", "connection", "keep-alive", "transfer-encoding", "content-length"):
            continue
        heads.append(f"{k}: {v}")
    text = "\n".join([str(r.status_code)] + heads + ["", body])
    for p in ports:
        text = text.replace(str(p), "{PORT}")
    text = re.sub(r"\b[0-9a-f]{32}\b", "{HEX32}", text)  # sectok, session ids, hashes
    text = re.sub(r"(DokuWiki|PHPSESSID)=[A-Za-z0-9,-]+", r"\1={SID}", text)
    text = re.sub(r"\d{4}/\d{2}/\d{2} \d{2}:\d{2}(:\d{2})?", "{TIME}", text)
    text = re.sub(r"\b1\d{9}\b", "{EPOCH}", text)  # revision and lock times
    text = re.sub(r"(expires|last-modified)=?: ?[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} [\d:]{8} GMT",
                  r"\1: {HTTPDATE}", text)
    return text


@pytest.fixture(scope="module")
def wiki():
    tmp = tempfile.mkdtemp(prefix="vc-apps-")
    tree = os.path.join(tmp, "dokuwiki")
    pristine = dokuwiki_tree(tree)
    ours = Suite(root=tree, args=["--workers", "2"]).start()
    ref = Reference(2, "classic", tmp, tree, server_name=HOST)
    yield ours, ref, tree, pristine
    ref.stop()
    ours.stop()
    ours.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)


def test_dokuwiki_pages_match_php_fpm(wiki):
    ours, ref, tree, pristine = wiki
    reset_data(tree, pristine)
    a = walk(ours.http)
    reset_data(tree, pristine)
    b = walk(ref.http)
    ports = (ours.http, ref.http, ours.https, ref.https)
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        nx, ny = normalise(x, ports), normalise(y, ports)
        if nx != ny:
            diff = "\n".join(difflib.unified_diff(ny.splitlines(), nx.splitlines(), "php-fpm", "velocity",
                                                  lineterm=""))
            pytest.fail(f"step {i + 1} ({x.request.method} {x.request.path_url}) differs:\n{diff[:6000]}")
    # The walk did what it says: the edited page is there, rendered.
    assert "<em>twice</em>" in a[-3].text and "<em>twice</em>" in b[-3].text
