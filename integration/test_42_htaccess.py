"""The access rules of a site's .htaccess files (docs/front.md, ".htaccess
files"), side by side with Apache 2.4 (AllowOverride All) and php-fpm on
the same tree: what Apache closes stays closed, with the .htaccess files
applications ship (DokuWiki's data/ and conf/, Drupal's files/, a
WordPress upload guard) and cases of our own for each rule. Where the
front closes more than Apache (authentication, patterns it cannot read,
scripts where PHP is turned off), the test says so and checks the 403."""
import http.client
import os
import shutil
import tempfile
import time

import pytest

from apache_reference import beside_apache
from conftest import Suite
from trees import open_to_all, write_tree

HOST = "htaccess.test"
DOKUWIKI = """## no access to the data directory
<IfModule mod_authz_core.c>
    AllowOverride None
    Require all denied
</IfModule>
<IfModule !mod_authz_core.c>
    Order allow,deny
    Deny from all
</IfModule>
"""
DRUPAL_FILES = """# Turn off all options we don't need.
Options -Indexes -ExecCGI -Includes -MultiViews

# Set the catch-all handler to prevent scripts from being executed.
SetHandler Drupal_Security_Do_Not_Remove_See_SA_2006_006
<Files *>
  # Override the handler again if we're run later in the evaluation list.
  SetHandler Drupal_Security_Do_Not_Remove_See_SA_2013_003
</Files>

# If we know how to do it safely, disable the PHP engine entirely.
<IfModule mod_php.c>
  php_flag engine off
</IfModule>
"""
TREE = {
    "index.php": "<?php echo 'index ran';",
    "data/.htaccess": DOKUWIKI.replace("    AllowOverride None\n", ""),
    "data/pages/start.txt": "a page\n",
    "data/media/.htaccess": "Require all granted\n",
    "data/media/logo.txt": "the logo\n",
    "conf/.htaccess": DOKUWIKI.replace("    AllowOverride None\n", ""),
    "conf/local.php": "<?php echo 'config ran';",
    "lib/.htaccess": '<Files "*.ini">\n    Require all denied\n</Files>\n',
    "lib/settings.ini": "password=x\n",
    "lib/ok.txt": "fine\n",
    "lib/sub/deeper.ini": "password=y\n",
    "logs/.htaccess": '<FilesMatch "\\.(log|sql)$">\n  Order allow,deny\n  Deny from all\n</FilesMatch>\n',
    "logs/app.log": "secret log\n",
    "logs/dump.sql": "secret dump\n",
    "logs/readme.txt": "readable\n",
    "old/.htaccess": "Order deny,allow\nDeny from all\n",
    "old/page.txt": "old\n",
    "ifmod/.htaccess": "<IfModule !mod_authz_core.c>\n  Deny from all\n</IfModule>\n",
    "ifmod/page.txt": "open\n",
    "uploads/.htaccess": "<Files *.php>\ndeny from all\n</Files>\n",
    "uploads/shell.php": "<?php echo 'shell ran';",
    "uploads/photo.txt": "a photo\n",
    "rewrite/.htaccess": "RewriteEngine On\nRewriteRule ^never-asked$ index.php [L]\nHeader echo X-Test\n",
    "rewrite/page.txt": "rewritten dir\n",
    "pcre/.htaccess": '<FilesMatch "\\d+\\.bak$">\n  Require all denied\n</FilesMatch>\n',
    "pcre/page.txt": "a page beside backups\n",
    "pcre/1.bak": "a backup\n",
    # Where the front closes more than Apache:
    "auth/.htaccess": 'AuthType Basic\nAuthName "members"\nAuthUserFile /nonexistent\nRequire valid-user\n',
    "auth/page.txt": "members only\n",
    "files/.htaccess": DRUPAL_FILES,
    "files/evil.php": "<?php echo 'uploaded script ran';",
    "unclosed/.htaccess": "<Files x>\nRequire all denied\n",
    "unclosed/page.txt": "x\n",
}
SAME = ["/index.php", "/data/pages/start.txt", "/data/nothing", "/data/media/logo.txt", "/conf/local.php",
        "/lib/settings.ini", "/lib/ok.txt", "/lib/sub/deeper.ini", "/logs/app.log", "/logs/dump.sql",
        "/logs/readme.txt", "/old/page.txt", "/ifmod/page.txt", "/uploads/shell.php", "/uploads/photo.txt",
        "/rewrite/page.txt", "/data/", "/nothing-here", "/pcre/page.txt", "/pcre/1.bak"]
# The front's 403 where Apache answers otherwise, and why.
STRICTER = {
    "/auth/page.txt": 401,   # Apache asks for a password; the front has no authentication to offer
    "/files/evil.php": 200,  # Apache sends the script as a file; the front never runs it
    "/unclosed/page.txt": 500,  # Apache fails on the file; the front closes the directory
}


def until(check, timeout):
    """Polls check until it holds or timeout seconds pass: True if it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def fetch(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request("GET", path, headers={"Host": HOST})
        r = c.getresponse()
        body = r.read()
        return r.status, body if r.status == 200 else b""
    finally:
        c.close()


@pytest.fixture(scope="module")
def stacks():
    yield from beside_apache("vc-htaccess-", HOST, TREE)


@pytest.mark.parametrize("path", SAME)
def test_what_apache_closes_stays_closed(stacks, path):
    ours, apache, _ = stacks
    assert fetch(ours.http, path) == fetch(apache.http, path), (path, apache.errors()[-1500:], ours.logs()[-1500:])


@pytest.mark.parametrize("path", list(STRICTER))
def test_what_the_front_cannot_read_it_closes(stacks, path):
    ours, apache, _ = stacks
    assert fetch(apache.http, path)[0] == STRICTER[path]
    status, body = fetch(ours.http, path)
    assert status == 403 and b"ran" not in body


def test_a_changed_htaccess_applies_within_a_second_and_a_bad_one_is_logged_with_its_line(stacks):
    ours, _, root = stacks
    assert fetch(ours.http, "/lib/ok.txt")[0] == 200
    with open(os.path.join(root, "lib", ".htaccess"), "a") as f:
        f.write("Require all denied\n")
    try:
        assert until(lambda: fetch(ours.http, "/lib/ok.txt")[0] == 403, timeout=5)
    finally:
        with open(os.path.join(root, "lib", ".htaccess"), "w") as f:
            f.write(TREE["lib/.htaccess"])
    assert until(lambda: fetch(ours.http, "/lib/ok.txt")[0] == 200, timeout=5)
    logs = ours.logs()
    assert f"{root}/unclosed/.htaccess:2: <Files> is not closed" in logs
    assert f"{root}/auth/.htaccess:1: AuthType: an access rule this server does not apply" in logs
    assert f"{root}/rewrite/.htaccess:3: Header echo: an action this server does not take: not applied" in logs


def test_a_site_may_turn_htaccess_files_off(tmp_path):
    tmp = tempfile.mkdtemp(prefix="vc-htaccess-off-")
    try:
        write_tree(os.path.join(tmp, "site"), {"data/.htaccess": "Require all denied\n", "data/page.txt": "open\n"})
        open_to_all(tmp)
        conf = os.path.join(tmp, "etc")
        os.makedirs(os.path.join(conf, "sites-enabled"))
        with open(os.path.join(conf, "sites-enabled", "h.conf"), "w") as f:
            f.write(f'site: {{ hosts = ["{HOST}"]; root = "{tmp}/site"; htaccess = false; }};\n')
        s = Suite(root="", conf=conf, as_root=False).start()
        try:
            assert fetch(s.http, "/data/page.txt") == (200, b"open\n")
        finally:
            s.stop()
            s.cleanup()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
