"""Real applications from Debian's packages, run unmodified under Velocity
and under nginx + php-fpm 8.2: the same walk through each, the same pages
after normalising what changes with every request (tokens, times, ports).

- DokuWiki (package dokuwiki): create a page, view it, edit it, view it
  again, list its revisions; in classic mode. (Worker mode is for apps
  written for it: DokuWiki builds its globals in a require_once'd
  init.php, so a worker that runs doku.php again finds them reset and init
  not rerun.)
- WordPress 6.1 (package wordpress) on a MariaDB the test starts: install
  through wp-admin/install.php, sign in, open the dashboard, publish a post
  as the block editor does (REST API with the cookie and its nonce), view
  it, comment, view it again, search, feed; classic mode.
- Symfony 5.4 (packages php-symfony-*): examples/symfony, a micro kernel
  with two controllers and a form, in classic and in worker mode (the same
  pages as php-fpm running it classically)."""
import difflib
import html
import os
import re
import shutil
import tempfile
import time

import pytest
import requests

from conftest import Suite
from mariadb import MariaDB
from reference import Reference

DOKUWIKI = "/usr/share/dokuwiki"
HOST = "wiki.test"
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


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


def dokuwiki_walk(port):
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
    # DokuWiki names revisions by their second: two saves within one second
    # make one revision shadow the other in the list, on either stack.
    time.sleep(1.05 - time.time() % 1)
    save("====== Velocity ======\n\nEdited: //twice//.\n\n  * one\n  * two\n", "edited")
    get("/doku.php?id=wiki:velocity")
    get("/doku.php?id=wiki:velocity&do=revisions")
    get("/doku.php?id=start")
    return out


# What changes with every request or every second, in any of the apps.
COMMON_SUBS = [
    (r"\b[0-9a-f]{32}\b", "{HEX32}"),  # tokens, session ids, hashes
    (r"(DokuWiki|PHPSESSID)=[A-Za-z0-9,-]+", r"\1={SID}"),
    (r"\d{4}/\d{2}/\d{2} \d{2}:\d{2}(:\d{2})?", "{TIME}"),
    (r"\b1\d{9}\b", "{EPOCH}"),  # revision, lock and cookie expiry times
    (r"(expires|last-modified)(=|: ?)[A-Z][a-z]{2}, \d\d[ -][A-Z][a-z]{2}[ -]\d{4} [\d:]{8} GMT",
     r"\1\2{HTTPDATE}"),
]


def normalise(r, ports, subs=()):
    body = r.text
    heads = []
    for k, v in sorted((k.lower(), v) for k, v in r.headers.items()):
        if k in ("date", "connection", "keep-alive", "transfer-encoding", "content-length"):
            continue
        if k == "server" and v in ("Velocity", "nginx/1.22.1"):
            v = "{SERVER}"
        if k == "cache-status" and v.startswith("Velocity;"):
            continue  # our cache's account of the answer (docs/CACHE.md)
        if k == "age" and r.headers.get("Cache-Status", "").startswith("Velocity; hit"):
            continue  # how long our cache has kept it
        if k == "etag" and v.startswith('W/"vc-'):
            continue  # the validator our cache gives what it stores
        heads.append(f"{k}: {v}")
    text = "\n".join([str(r.status_code)] + heads + ["", body])
    for p in ports:
        # A port as a number of its own (after ":" or its encoding "%3A"):
        # not the same digits inside a nonce or a hash ("4e2" PORT "4b").
        text = re.sub(rf"(?:(?<=%3A)|(?<=%3a)|(?<![0-9A-Za-z])){p}(?![0-9A-Za-z])", "{PORT}", text)
    for pattern, repl in list(subs) + COMMON_SUBS:
        text = re.sub(pattern, repl, text)
    return text


def assert_same_pages(a, b, ports, subs=()):
    """a: Velocity's answers, b: php-fpm's, to the same walk."""
    assert len(a) == len(b)
    diffs = []
    for i, (x, y) in enumerate(zip(a, b)):
        nx, ny = normalise(x, ports, subs), normalise(y, ports, subs)
        if nx != ny:
            diff = "\n".join(difflib.unified_diff(ny.splitlines(), nx.splitlines(), "php-fpm", "velocity",
                                                  lineterm=""))
            diffs.append(f"step {i + 1} ({x.request.method} {x.request.path_url}) differs:\n{diff[:4000]}")
    if diffs:
        pytest.fail("\n\n".join(diffs))


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
    a = dokuwiki_walk(ours.http)
    reset_data(tree, pristine)
    b = dokuwiki_walk(ref.http)
    assert_same_pages(a, b, (ours.http, ref.http, ours.https, ref.https))
    # The walk did what it says: the edited page is there, rendered.
    assert "<em>twice</em>" in a[-3].text and "<em>twice</em>" in b[-3].text


# --- Symfony -----------------------------------------------------------

def symfony_walk(port):
    """Pages, a greeting, the table, JSON, the form (blank, invalid, valid,
    then the page showing the entry), a 404 and a 405."""
    base = f"http://127.0.0.1:{port}"
    sess = requests.Session()
    sess.headers.update({"User-Agent": "conformance", "Accept-Encoding": "identity"})
    out = []

    def go(method, path, **kw):
        r = sess.request(method, base + path, allow_redirects=False, timeout=30, **kw)
        out.append(r)
        return r

    go("GET", "/")
    go("GET", "/hello/World")
    go("GET", "/hello/J%C3%BCrgen%20M", headers={"Accept-Language": "fr-CH, fr;q=0.9, en;q=0.8"})
    go("HEAD", "/hello/head")
    go("GET", "/table")
    go("GET", "/api/status?x=1&y[]=2&y[]=3")
    token = re.search(r'name="entry\[_token\]" value="([^"]+)"', go("GET", "/guestbook").text).group(1)
    go("POST", "/guestbook", data={"entry[name]": "", "entry[email]": "not-an-address", "entry[message]": "hi",
                                   "entry[_token]": token})
    go("POST", "/guestbook", data={"entry[name]": "Ada", "entry[email]": "ada@example.test",
                                   "entry[message]": "Hello <b>there</b>\nfrom Velocity", "entry[_token]": "forged"})
    r = go("POST", "/guestbook", data={"entry[name]": "Ada", "entry[email]": "ada@example.test",
                                       "entry[message]": "Hello <b>there</b>\nfrom Velocity", "entry[_token]": token})
    assert r.status_code == 302, r.text[:2000]
    go("GET", "/guestbook")
    go("GET", "/no/such/page")
    go("DELETE", "/table")
    return out


SYMFONY_SUBS = [(r'(name="entry\[_token\]" value=")[^"]+', r"\1{CSRF}")]


@pytest.fixture(scope="module")
def symfony_tree():
    tmp = tempfile.mkdtemp(prefix="vc-apps-")
    tree = os.path.join(tmp, "symfony")
    shutil.copytree(os.path.join(EXAMPLES, "symfony"), tree, ignore=shutil.ignore_patterns("var"))
    ref = Reference(2, "classic", tmp, os.path.join(tree, "public"))
    yield tree, ref
    ref.stop()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("mode", ["classic", "worker"])
def test_symfony_pages_match_php_fpm(symfony_tree, mode):
    tree, ref = symfony_tree
    args = ["--workers", "2"]
    if mode == "worker":
        args += ["--mode", "worker", "--worker-script", os.path.join(tree, "worker.php")]
    ours = Suite(root=os.path.join(tree, "public"), args=args).start()
    try:
        a = symfony_walk(ours.http)
        a += symfony_walk(ours.http)  # worker mode: a second visitor sees nothing of the first
    finally:
        ours.stop()
        ours.cleanup()
    b = symfony_walk(ref.http)
    b += symfony_walk(ref.http)
    assert_same_pages(a, b, (ours.http, ref.http, ours.https, ref.https), SYMFONY_SUBS)
    # The walk did what it says: the entry is on the page, escaped.
    assert "Hello &lt;b&gt;there&lt;/b&gt;<br />" in a[10].text and "Thank you, Ada." in a[10].text
    assert "This value is not a valid email address." in a[7].text
    assert "The CSRF token is invalid" in a[8].text
    assert [r.status_code for r in a[-2:]] == [404, 405]


# --- WordPress on MariaDB -----------------------------------------------

WORDPRESS = "/usr/share/wordpress"
WP_PASSWORD = "correct horse battery staple"


def wordpress_tree(dst, db_port):
    """Debian's WordPress with a wp-config.php of its own (Debian's reads
    /etc/wordpress/config-HOST.php): the test's MariaDB, fixed salts, no
    cron spawned per request and no updates fetched (there is no network)."""
    shutil.copytree(WORDPRESS, dst, symlinks=False, ignore_dangling_symlinks=True)
    salts = "".join(f"define('{k}', 'conformance-{k.lower()}');\n" for k in (
        "AUTH_KEY", "SECURE_AUTH_KEY", "LOGGED_IN_KEY", "NONCE_KEY",
        "AUTH_SALT", "SECURE_AUTH_SALT", "LOGGED_IN_SALT", "NONCE_SALT"))
    with open(os.path.join(dst, "wp-config.php"), "w") as f:
        f.write(f"""<?php
define('DB_NAME', 'wp');
define('DB_USER', 'wp');
define('DB_PASSWORD', 'wp');
define('DB_HOST', '127.0.0.1:{db_port}');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
{salts}$table_prefix = 'wp_';
define('WP_DEBUG', false);
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
if (!defined('ABSPATH')) {{
    define('ABSPATH', __DIR__ . '/');
}}
require_once ABSPATH . 'wp-settings.php';
""")


def wordpress_walk(port):
    """Install, sign in, dashboard, publish, view, comment, view, search,
    feed, a missing page. Returns the answers."""
    base = f"http://127.0.0.1:{port}"
    sess = requests.Session()
    sess.headers.update({"User-Agent": "conformance", "Accept-Encoding": "identity"})
    out = []

    def go(method, path, **kw):
        r = sess.request(method, path if path.startswith("http") else base + path, allow_redirects=False,
                         timeout=60, **kw)
        out.append(r)
        return r

    go("GET", "/wp-admin/install.php")
    r = go("POST", "/wp-admin/install.php?step=2", data={
        "weblog_title": "Velocity", "user_name": "admin", "admin_password": WP_PASSWORD,
        "admin_password2": WP_PASSWORD, "admin_email": "admin@example.test", "blog_public": "0",
        "Submit": "Install WordPress", "language": ""})
    assert "Success!" in r.text, r.text[:3000]
    go("GET", "/wp-login.php")
    r = go("POST", "/wp-login.php", data={"log": "admin", "pwd": WP_PASSWORD, "wp-submit": "Log In",
                                          "redirect_to": base + "/wp-admin/", "testcookie": "1"})
    assert r.status_code == 302, r.text[:3000]
    go("GET", "/wp-admin/")
    nonce = go("GET", "/wp-admin/admin-ajax.php?action=rest-nonce").text
    # Posts are ordered by their second: the new one must come after the
    # installer's "Hello world!" on either stack, however fast it runs.
    time.sleep(1.05 - time.time() % 1)
    r = go("POST", "/?rest_route=/wp/v2/posts", headers={"X-WP-Nonce": nonce}, json={
        "title": "Hello from Velocity", "status": "publish",
        "content": "<!-- wp:paragraph --><p>A post published through the REST API.</p><!-- /wp:paragraph -->"})
    assert r.status_code == 201, r.text[:3000]
    post = r.json()
    go("GET", post["link"])
    r = go("POST", "/wp-comments-post.php", data={"comment": "A first comment, from the test.",
                                                  "comment_post_ID": str(post["id"]), "comment_parent": "0"})
    assert r.status_code == 302, r.text[:3000]
    go("GET", post["link"])
    go("GET", "/?s=Velocity")
    go("GET", "/?feed=rss2")
    go("GET", "/?p=999999")
    return out


WORDPRESS_SUBS = [
    (r'data-pw="[^"]*"', 'data-pw="{PASSWORD}"'),  # the installer's suggested password
    (r"(wordpress_(?:logged_in_|sec_)?)[0-9a-f]{32}", r"\1{SITEHASH}"),  # md5 of the site URL, with its port
    (r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d \+0000", "{TIME}"),  # feed dates
    (r"\b[0-9a-f]{10}\b", "{NONCE}"),
    (r"(wordpress_(?:logged_in_|sec_)?\{SITEHASH\})=[^;\s]+", r"\1={COOKIE}"),  # user|expiry|token|hmac
    (r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d", "{TIME}"),
    (r"\b\d{1,2}:\d\d (am|pm)\b", "{TIME}"),
]


@pytest.fixture(scope="module")
def wordpress():
    tmp = tempfile.mkdtemp(prefix="vc-apps-")
    db = MariaDB(tmp)
    tree = os.path.join(tmp, "wordpress")
    try:
        wordpress_tree(tree, db.port)
        db.reset("wp", "wp", "wp")  # "/" answers (a redirect to the installer) once the database exists
        ours = Suite(root=tree, args=["--workers", "2"]).start()
        try:
            # nginx's SERVER_NAME is its server_name; Velocity's default site
            # has none and passes the request's host, as WordPress is asked.
            ref = Reference(2, "classic", tmp, tree, server_name="127.0.0.1")
            yield ours, ref, db
            ref.stop()
        finally:
            ours.stop()
            ours.cleanup()
    finally:
        db.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_wordpress_pages_match_php_fpm(wordpress):
    ours, ref, db = wordpress
    db.reset("wp", "wp", "wp")
    try:
        a = wordpress_walk(ours.http)
    except AssertionError as e:
        # The suite's own account of it (a worker that died says why there).
        raise AssertionError(f"{e}\n--- the suite's log:\n{ours.logs()[-6000:]}") from e
    db.reset("wp", "wp", "wp")
    b = wordpress_walk(ref.http)
    assert_same_pages(a, b, (ours.http, ref.http, ours.https, ref.https), WORDPRESS_SUBS)
    # The walk did what it says: the post and its comment are on the page.
    assert "Hello from Velocity" in a[7].text and "A first comment, from the test." in a[9].text
