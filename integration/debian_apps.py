"""Debian's packaged PHP applications where Debian puts them, for
test_37_debian_apps.py: each one's set-up as its README.Debian says (a
database where it needs one), and a walk through it (first page, sign-in,
one write) that records what a user would see at each step.

The set-up writes into the packages' own directories (/etc/APP,
/var/lib/APP); Snapshot puts them back as they were afterwards."""
import html
import os
import re
import stat
import subprocess

import requests

PASSWORD = "correct horse battery staple"

# host: the site's root, as Debian's web server snippets serve each.
APPS = {
    "mediawiki.test": "/var/lib/mediawiki",
    "wordpress.test": "/usr/share/wordpress",
    "dokuwiki.test": "/usr/share/dokuwiki",
    "phpmyadmin.test": "/usr/share/phpmyadmin",
    "adminer.test": "/etc/adminer",
}
# What the set-up and the walks change, restored afterwards.
TOUCHED = ["/etc/mediawiki", "/var/lib/mediawiki", "/var/cache/mediawiki", "/etc/wordpress", "/var/lib/wordpress",
           "/var/lib/dokuwiki", "/etc/dokuwiki", "/etc/phpmyadmin/conf.d", "/var/lib/phpmyadmin"]


class Snapshot:
    """Every file, link and directory under some trees, with its bytes,
    mode and owner; restore() removes what was added and puts back what
    changed."""

    def __init__(self, roots):
        self.roots, self.entries = roots, {}
        for root in roots:
            for d, dirs, files in os.walk(root):
                for name in [d] + [os.path.join(d, f) for f in files + [x for x in dirs if os.path.islink(
                        os.path.join(d, x))]]:
                    st = os.lstat(name)
                    data = None
                    if stat.S_ISLNK(st.st_mode):
                        data = os.readlink(name)
                    elif stat.S_ISREG(st.st_mode):
                        with open(name, "rb") as f:
                            data = f.read()
                    self.entries[name] = (st.st_mode, st.st_uid, st.st_gid, data)

    def restore(self):
        for root in self.roots:
            for d, dirs, files in os.walk(root, topdown=False):
                # A directory is seen as d once its contents are; a link
                # to one only among dirs.
                links = [x for x in dirs if os.path.islink(os.path.join(d, x))]
                for name in [os.path.join(d, f) for f in files + links] + [d]:
                    if name not in self.entries:
                        if os.path.isdir(name) and not os.path.islink(name):
                            os.rmdir(name)
                        else:
                            os.unlink(name)
        for name, (mode, uid, gid, data) in sorted(self.entries.items()):
            if stat.S_ISDIR(mode):
                os.makedirs(name, exist_ok=True)
            elif stat.S_ISLNK(mode):
                if not os.path.islink(name) or os.readlink(name) != data:
                    if os.path.lexists(name):
                        os.unlink(name)
                    os.symlink(data, name)
                continue
            else:
                with open(name, "rb") as f:
                    same = f.read() == data
                if not same:
                    with open(name, "wb") as f:
                        f.write(data)
            os.chown(name, uid, gid)
            os.chmod(name, stat.S_IMODE(mode))


def as_www_data(*cmd):
    r = subprocess.run(["runuser", "-u", "www-data", "--"] + list(cmd), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (cmd, r.stdout[-3000:], r.stderr[-3000:])
    return r.stdout


def set_up(db):
    """Each application configured as its README.Debian says, on the
    test's MariaDB (db) where it needs one."""
    # MediaWiki: the installer, run as the web server's user, writes
    # LocalSettings.php, which Debian keeps in /etc/mediawiki.
    db.reset("wiki", "wiki", "wiki")
    os.chmod("/etc/mediawiki", 0o755)
    out = "/var/lib/mediawiki/cache/install"
    as_www_data("mkdir", "-p", out)
    as_www_data("php", "/var/lib/mediawiki/maintenance/install.php", "--dbtype=mysql",
                f"--dbserver=127.0.0.1:{db.port}", "--dbname=wiki", "--dbuser=wiki", "--dbpass=wiki",
                "--server=http://mediawiki.test", "--scriptpath=", f"--pass={PASSWORD}", f"--confpath={out}",
                "Velocity Wiki", "Admin")
    with open(os.path.join(out, "LocalSettings.php")) as f:
        settings = f.read()
    # Both stacks listen on ports of their own: the URL is the request's.
    with open("/etc/mediawiki/LocalSettings.php", "w") as f:
        f.write(settings + "\n$wgServer = WebRequest::detectServer();\n")
    os.chmod("/etc/mediawiki/LocalSettings.php", 0o644)
    # WordPress: /etc/wordpress/config-HOST.php, as Debian's setup-mysql writes it.
    with open("/etc/wordpress/config-wordpress.test.php", "w") as f:
        f.write(f"""<?php
define('DB_NAME', 'wp');
define('DB_USER', 'wp');
define('DB_PASSWORD', 'wp');
define('DB_HOST', '127.0.0.1:{db.port}');
define('WP_CONTENT_DIR', '/var/lib/wordpress/wp-content');
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
""")
    # DokuWiki: its admin user (Debian's postinst asks for the password).
    hashed = subprocess.run(["php", "-r", f"echo password_hash('{PASSWORD}', PASSWORD_BCRYPT);"],
                            capture_output=True, text=True, check=True).stdout
    with open("/var/lib/dokuwiki/acl/users.auth.php", "w") as f:
        f.write(f"admin:{hashed}:Admin:admin@example.test:admin,user\n")
    # phpMyAdmin and Adminer sign in to the test's MariaDB as a user of it.
    db.sql(f"CREATE USER IF NOT EXISTS 'dba'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}';"
           "GRANT ALL ON *.* TO 'dba'@'127.0.0.1';")
    with open("/etc/phpmyadmin/conf.d/velocity-test.php", "w") as f:
        f.write(f"<?php\n$cfg['Servers'][1]['host'] = '127.0.0.1';\n$cfg['Servers'][1]['port'] = '{db.port}';\n"
                "$cfg['Servers'][1]['connect_type'] = 'tcp';\n")


def hidden(page, form=None):
    """The hidden fields of a page's forms, or of the one whose opening tag
    holds form: {name: value}."""
    if form:
        m = re.search(r"<form[^>]*" + re.escape(form) + r".*?</form>", page, re.S)
        page = m.group(0) if m else ""
    out = {}
    for m in re.finditer(r"<input[^>]*>", page):
        tag = m.group(0)
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if 'type="hidden"' in tag and name:
            out[html.unescape(name.group(1))] = html.unescape(value.group(1)) if value else ""
    return out


class Walk:
    """A browser's session on one stack: each step's (name, status, what
    the page shows that the step is about)."""

    def __init__(self, port, host):
        self.base, self.steps = f"http://127.0.0.1:{port}", []
        self.s = requests.Session()
        self.s.headers.update({"Host": host, "User-Agent": "debian-apps", "Accept-Encoding": "identity"})

    def go(self, method, path, **kw):
        return self.s.request(method, self.base + path, allow_redirects=False, timeout=60, **kw)

    def step(self, name, r, shows):
        self.steps.append((name, r.status_code, shows))
        return r


def mediawiki(w, tag):
    r = w.go("GET", "/index.php?title=Main_Page")
    w.step("first page", r, "MediaWiki has been installed" in r.text)
    form = hidden(w.go("GET", "/index.php?title=Special:UserLogin").text, 'name="userlogin"')
    r = w.go("POST", "/index.php?title=Special:UserLogin", data=dict(form, wpName="Admin", wpPassword=PASSWORD))
    w.step("sign in", r, r.status_code == 302 and "Main_Page" in r.headers.get("Location", ""))
    token = w.go("GET", "/api.php?action=query&meta=tokens&format=json").json()["query"]["tokens"]["csrftoken"]
    r = w.go("POST", "/api.php", data={"action": "edit", "title": f"Velocity {tag}", "text": f"Written by {tag}.",
                                       "token": token, "format": "json"})
    w.step("write", r, r.json().get("edit", {}).get("result") == "Success")
    r = w.go("GET", f"/index.php?title=Velocity_{tag}")
    w.step("read back", r, f"Written by {tag}." in r.text)


def wordpress(w, tag):
    r = w.go("GET", "/wp-admin/install.php")
    w.step("first page", r, "Welcome" in r.text)
    r = w.go("POST", "/wp-admin/install.php?step=2", data={
        "weblog_title": "Velocity", "user_name": "admin", "admin_password": PASSWORD, "admin_password2": PASSWORD,
        "admin_email": "admin@example.test", "blog_public": "0", "Submit": "Install WordPress", "language": ""})
    w.step("install", r, "Success!" in r.text)
    w.go("GET", "/wp-login.php")
    r = w.go("POST", "/wp-login.php", data={"log": "admin", "pwd": PASSWORD, "wp-submit": "Log In",
                                            "redirect_to": w.base + "/wp-admin/", "testcookie": "1"})
    w.step("sign in", r, r.status_code == 302 and "/wp-admin/" in r.headers.get("Location", ""))
    nonce = w.go("GET", "/wp-admin/admin-ajax.php?action=rest-nonce").text
    r = w.go("POST", "/?rest_route=/wp/v2/posts", headers={"X-WP-Nonce": nonce},
             json={"title": f"Velocity {tag}", "status": "publish", "content": f"<p>Written by {tag}.</p>"})
    w.step("write", r, r.status_code == 201)
    r = w.go("GET", f"/?p={r.json()['id']}" if r.status_code == 201 else "/")
    w.step("read back", r, f"Written by {tag}." in r.text)


def dokuwiki(w, tag):
    r = w.go("GET", "/doku.php")
    w.step("first page", r, "dokuwiki" in r.text.lower())
    form = hidden(w.go("GET", "/doku.php?do=login").text)
    r = w.go("POST", "/doku.php", data=dict(form, u="admin", p=PASSWORD, do="login", id="start"))
    w.step("sign in", r, r.status_code == 302 and "DokuWiki" in "".join(w.s.cookies.keys()))
    page = f"velocity_{tag}"
    form = hidden(w.go("GET", f"/doku.php?id={page}&do=edit").text)
    r = w.go("POST", "/doku.php", data=dict(form, id=page, wikitext=f"Written by {tag}.", summary="test",
                                             **{"do[save]": "Save"}))
    w.step("write", r, r.status_code == 302)
    r = w.go("GET", f"/doku.php?id={page}")
    w.step("read back", r, f"Written by {tag}." in r.text)


def phpmyadmin(w, tag):
    r = w.go("GET", "/index.php")
    w.step("first page", r, 'name="pma_username"' in r.text)
    form = hidden(r.text)
    r = w.go("POST", "/index.php?route=/", data=dict(form, pma_username="dba", pma_password=PASSWORD, server="1"))
    w.step("sign in", r, r.status_code == 302)
    page = w.go("GET", "/index.php?route=/server/databases").text
    r = w.go("POST", "/index.php?route=/server/databases/create",
             data={"token": hidden(page).get("token", ""), "new_db": f"pma_{tag}", "db_collation": "",
                   "ajax_request": "true", "server": "1"})
    w.step("write", r, r.status_code == 200 and r.json().get("success") is True)
    r = w.go("GET", "/index.php?route=/server/databases&server=1")
    w.step("read back", r, f"pma_{tag}" in r.text)


def adminer(w, tag):
    r = w.go("GET", "/conf.php")
    w.step("first page", r, 'name="auth[username]"' in r.text)
    server = w.db_server
    r = w.go("POST", "/conf.php", data={"auth[driver]": "server", "auth[server]": server, "auth[username]": "dba",
                                        "auth[password]": PASSWORD, "auth[db]": ""})
    w.step("sign in", r, r.status_code == 302)
    query = f"/conf.php?server={server}&username=dba&sql="
    page = w.go("GET", query).text
    r = w.go("POST", query, data={"query": f"CREATE DATABASE adminer_{tag}", "limit": "", "token":
                                  hidden(page).get("token", "")})
    w.step("write", r, r.status_code == 200 and "Query executed OK" in r.text)
    r = w.go("GET", f"/conf.php?server={server}&username=dba")
    w.step("read back", r, f"adminer_{tag}" in r.text)


WALKS = {"mediawiki.test": mediawiki, "wordpress.test": wordpress, "dokuwiki.test": dokuwiki,
         "phpmyadmin.test": phpmyadmin, "adminer.test": adminer}
