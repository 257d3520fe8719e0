"""The response directives of a site's .htaccess files (docs/front.md,
".htaccess files"): mod_headers's Header, mod_expires, AddType and
AddDefaultCharset, side by side with Apache 2.4 and php-fpm on the same
tree. The .htaccess files are those that caching plugins and
server-config projects write (an Expires block by type, security headers,
per-type Cache-Control in <FilesMatch>), and a child directory that
changes its parent's. For each request the status and the headers these
directives touch must be the same; an Expires is compared as its distance
from the answer's Date."""
import email.utils
import http.client
import re

import pytest

from apache_reference import beside_apache

HOST = "answers.test"

TOP = """# As caching plugins write it
<IfModule mod_expires.c>
    ExpiresActive On
    ExpiresDefault "access plus 1 hour"
    ExpiresByType text/css "access plus 1 month"
    ExpiresByType image/png A604800
    ExpiresByType text/html "access plus 0 seconds"
</IfModule>
<IfModule mod_headers.c>
    Header set X-Frame-Options "SAMEORIGIN"
    Header always set X-Content-Type-Options nosniff
    Header merge Cache-Control public
    Header add X-Twice one
    Header add X-Twice two
    Header append X-List first
    Header append X-List second
    Header unset X-Drop
    Header always unset X-Gone
    Header setifempty X-App from-htaccess
    <FilesMatch "\\.(css|txt)$">
        Header set X-Static "yes"
    </FilesMatch>
</IfModule>
AddType application/x-mine .mine
AddDefaultCharset UTF-8
"""
SUB = """ExpiresActive Off
Header unset X-Frame-Options
Header set X-Sub "below, too"
AddDefaultCharset Off
AddType text/plain .mine
"""
MODIFIED = """ExpiresActive On
ExpiresByType text/plain "modification plus 2 days"
"""
SCRIPT = """<?php
header('X-App: from-php');
header('X-Drop: php-said');
header('X-Gone: php-said');
header('X-List: zero');
if (isset($_GET['type'])) header('Content-Type: ' . $_GET['type']);
if (isset($_GET['expires'])) header('Expires: Thu, 01 Jan 2037 00:00:00 GMT');
if (isset($_GET['status'])) http_response_code((int)$_GET['status']);
echo "hello\\n";
"""
HANDLERS = {
    "set": "SetHandler application/x-httpd-php\n",
    "force": "ForceType application/x-httpd-php\n",
    "ifmod": "<IfModule mod_php.c>\n    SetHandler application/x-httpd-php\n</IfModule>\n",
    "ifnot": "<IfModule !mod_php.c>\n    SetHandler application/x-httpd-php\n</IfModule>\n",
    "proxy": 'SetHandler "proxy:unix:/run/php/php8.2-fpm.sock|fcgi://localhost"\n',
    "match": '<FilesMatch "\\.html$">\n    SetHandler application/x-httpd-php\n</FilesMatch>\n',
    "files": '<Files "page.html">\n    ForceType application/x-httpd-php\n</Files>\n',
    "action": "Action my-cgi /cgi-bin/runner\nAddHandler my-cgi .html\n",
}
TREE = {
    "h/.htaccess": TOP,
    "h/style.css": "body { color: red }\n",
    "h/pic.png": "\x89PNG\r\n",
    "h/page.html": "<p>hi</p>\n",
    "h/notes.txt": "notes\n",
    "h/data.mine": "mine\n",
    "h/data.x.mine": "mine too\n",
    "h/show.php": SCRIPT,
    "h/sub/.htaccess": SUB,
    "h/sub/style.css": "sub { }\n",
    "h/sub/data.mine": "mine below\n",
    "h/sub/show.php": SCRIPT,
    "h/mod/.htaccess": MODIFIED,
    "h/mod/old.txt": "old\n",
    "h/legacy/.htaccess": "AddType application/x-httpd-php .html .php\nAddHandler php5-script .inc\n",
    "h/legacy/page.html": "<?php $password = 'secret'; ?>\n",
    "h/legacy/lib.inc.txt": "<?php $key = 'secret'; ?>\n",
    "h/legacy/notes.txt": "plain\n",
    "h/legacy/run.php": "<?php echo 'ran';\n",
    # Every other way Apache is told to run files as PHP (or a CGI program).
    **{f"p/{d}/.htaccess": text for d, text in HANDLERS.items()},
    **{f"p/{d}/page.html": "<?php $password = 'secret'; ?>\n" for d in HANDLERS},
    **{f"p/{d}/notes.txt": "plain\n" for d in HANDLERS},
    **{f"p/{d}/run.php": "<?php echo 'ran';\n" for d in HANDLERS},
    "p/set/deeper/page.html": "<?php $password = 'secret'; ?>\n",
    # ErrorDocument: a script, a text, a URL, a file, a script that sets its own status
    "e/.htaccess": 'ErrorDocument 404 /e/notfound.php?from=htaccess\nErrorDocument 403 "Sorry, closed here"\n'
                   'ErrorDocument 410 http://elsewhere.test/gone\n',
    "e/notfound.php": "<?php echo http_response_code(), ' ', $_SERVER['REDIRECT_URL'] ?? '-', ' ', "
                      "json_encode($_GET), ' ', $_SERVER['REQUEST_URI'], \"\\n\";\n",
    "e/closed/.htaccess": "Require all denied\n",
    "e/closed/page.txt": "closed\n",
    "e/gone/.htaccess": "RewriteEngine On\nRewriteRule ^ - [G]\n",
    "e/static/.htaccess": "ErrorDocument 404 /e/page404.html\n",
    "e/page404.html": "<h1>not here</h1>\n",
    "e/five/.htaccess": "ErrorDocument 404 /e/five.php\n",
    "e/five.php": "<?php http_response_code(503); echo \"busy\\n\";\n",
    "e/back/.htaccess": "ErrorDocument 404 default\n",
    "e/self/.htaccess": "ErrorDocument 404 /e/self/missing.php\n",
}

# Each way, and whether notes.txt is covered too (the whole directory).
HANDLERS_EVERY = {"set": True, "force": True, "ifmod": True, "ifnot": True, "proxy": True, "match": False,
                  "files": False, "action": False}

# The headers these directives touch, and the statuses of these paths.
WATCHED = ["content-type", "cache-control", "x-frame-options", "x-content-type-options", "x-twice", "x-list",
           "x-drop", "x-gone", "x-app", "x-static", "x-sub"]
PATHS = ["/h/style.css", "/h/pic.png", "/h/page.html", "/h/notes.txt", "/h/data.mine", "/h/data.x.mine",
         "/h/show.php", "/h/show.php?type=text/plain", "/h/show.php?expires=1", "/h/show.php?status=404",
         "/h/show.php?status=302", "/h/show.php?type=application/json", "/h/sub/style.css", "/h/sub/data.mine",
         "/h/sub/show.php", "/h/sub/show.php?type=text/plain", "/h/missing.css", "/h/sub/missing",
         "/h/mod/old.txt"]


def fetch(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request("GET", path, headers={"Host": HOST})
        r = c.getresponse()
        r.read()
        seen = {}
        for name, value in r.getheaders():
            if name.lower() in WATCHED:
                seen.setdefault(name.lower(), []).append(value)
        expires = r.getheader("Expires")
        if expires:
            date = email.utils.parsedate_to_datetime(r.getheader("Date"))
            seen["expires-in"] = int((email.utils.parsedate_to_datetime(expires) - date).total_seconds())
        for i, v in enumerate(seen.get("cache-control", [])):
            # The age from a file's time depends on when in its second the
            # request came: compared within a second, below.
            age = re.search(r"max-age=(\d+)", v)
            if age:
                seen["max-age"] = int(age.group(1))
                seen["cache-control"][i] = v.replace(age.group(0), "max-age=N")
        if r.status >= 400:
            seen.pop("content-type", None)  # each server's own error page
        return r.status, seen
    finally:
        c.close()


@pytest.fixture(scope="module")
def stacks():
    for ours, apache, root in beside_apache("vc-answers-", HOST, TREE):
        yield ours, apache, root


@pytest.mark.parametrize("path", PATHS)
def test_the_same_headers_as_apache(stacks, path):
    ours, apache, root = stacks
    theirs = fetch(apache.http, path)
    mine = fetch(ours.http, path)
    for near in ("expires-in", "max-age"):
        theirs_seen, mine_seen = theirs[1], mine[1]
        if near in theirs_seen and theirs_seen[near] != mine_seen.get(near):
            # A second may turn between the two requests, and Apache
            # counts max-age from its request's microseconds (rounded
            # down), the front from its second.
            assert abs(theirs_seen[near] - mine_seen.get(near, -99)) <= 2, (path, theirs, mine)
            mine_seen[near] = theirs_seen[near]
    assert mine == theirs, (path, apache.errors()[-1500:], ours.logs()[-1500:])


def test_the_directives_did_something(stacks):
    """The comparison above is not two servers ignoring the same lines."""
    ours, _, _ = stacks
    status, seen = fetch(ours.http, "/h/style.css")
    assert status == 200 and seen["x-frame-options"] == ["SAMEORIGIN"] and seen["x-static"] == ["yes"]
    assert seen["expires-in"] in (2592000, 2591999) and seen["max-age"] == 2592000
    assert fetch(ours.http, "/h/data.mine")[1]["content-type"] == ["application/x-mine"]
    assert fetch(ours.http, "/h/notes.txt")[1]["content-type"] == ["text/plain; charset=UTF-8"]
    status, seen = fetch(ours.http, "/h/missing.css")
    assert status == 404 and seen == {"x-content-type-options": ["nosniff"]}


def test_configtest_lists_the_forms_it_does_not_apply(stacks):
    ours, _, root = stacks
    with open(f"{root}/h/sub/.htaccess", "a") as f:
        f.write('Header set X-When "a" env=SOME_VAR\nHeader set X-Time "%t"\nHeader echo X-Echo\n')
    out = ours.vc("configtest", check=True).stdout
    for line, what in ((6, "a condition (env=SOME_VAR)"), (7, "a format"), (8, "Header echo")):
        assert f"h/sub/.htaccess:{line}" in out and what in out, out


def refused_unread(ours, path):
    """path answers 403, with nothing of the file ("secret") in the body."""
    c = http.client.HTTPConnection("127.0.0.1", ours.http, timeout=20)
    c.request("GET", path, headers={"Host": HOST})
    r = c.getresponse()
    body = r.read()
    c.close()
    assert r.status == 403 and b"secret" not in body, (path, r.status, body)


def test_files_an_addtype_would_run_as_php_are_refused_not_shown(stacks):
    """AddType and AddHandler that have mod_php run other extensions: the
    suite runs .php only, and refuses those files rather than send their
    source (Apache with php-fpm, which the test compares with elsewhere,
    sends it)."""
    ours, _, _ = stacks
    for path in ("/h/legacy/page.html", "/h/legacy/lib.inc.txt"):
        refused_unread(ours, path)
    assert fetch(ours.http, "/h/legacy/notes.txt")[0] == 200
    assert fetch(ours.http, "/h/legacy/run.php")[0] == 200


@pytest.mark.parametrize("way", sorted(HANDLERS))
def test_handler_directives_that_would_run_php_refuse_the_files_they_cover(stacks, way):
    """SetHandler and ForceType to PHP (bare, in <FilesMatch> or <Files>,
    in <IfModule> either way), to php-fpm's proxy, and a handler an Action
    gave a CGI program: a migrated site's usual way to run .html as PHP.
    The suite runs .php files only, so each file they cover is refused,
    its source never sent; .php files still run, and what they do not
    cover is served."""
    ours, _, _ = stacks
    for path in [f"/p/{way}/page.html"] + (["/p/set/deeper/page.html"] if way == "set" else []):
        refused_unread(ours, path)
    assert fetch(ours.http, f"/p/{way}/notes.txt")[0] == (403 if HANDLERS_EVERY[way] else 200)
    assert fetch(ours.http, f"/p/{way}/run.php")[0] == 200
    out = ours.vc("configtest", check=True).stdout
    assert f"p/{way}/.htaccess:" in out and "refused" in out, out


def answer(port, path):
    """Status, Location and body."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request("GET", path, headers={"Host": HOST})
        r = c.getresponse()
        body = r.read()
        return r.status, r.getheader("Location"), body if r.status < 300 or r.status >= 400 else b"(a redirect)"
    finally:
        c.close()


@pytest.mark.parametrize("path", ["/e/missing?x=1", "/e/deeper/missing.txt", "/e/closed/page.txt", "/e/gone/any",
                                  "/e/static/missing", "/e/five/missing"])
def test_error_documents_as_apache(stacks, path):
    ours, apache, _ = stacks
    theirs = answer(apache.http, path)
    assert answer(ours.http, path) == theirs, (path, theirs, apache.errors()[-1500:], ours.logs()[-1500:])


def test_error_document_default_gives_the_plain_error(stacks):
    ours, apache, _ = stacks
    assert answer(ours.http, "/e/back/missing")[0] == answer(apache.http, "/e/back/missing")[0] == 404
    assert b"REDIRECT" not in answer(ours.http, "/e/back/missing")[2]
    # A document that is itself missing: the plain 404 (Apache adds that
    # it was missing to its own page).
    assert answer(ours.http, "/e/self/x")[0] == answer(apache.http, "/e/self/x")[0] == 404
    status, _, body = answer(ours.http, "/e/closed/page.txt")
    assert status == 403 and body == b"Sorry, closed here"
