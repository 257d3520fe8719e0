"""The mod_rewrite rules of a site's .htaccess files (docs/front.md,
".htaccess files"), side by side with Apache 2.4 (mod_rewrite,
AllowOverride All) and php-fpm on the same tree: the .htaccess files that
WordPress, Laravel, Symfony (apache-pack), Drupal, Joomla and MediaWiki
ship or document, and cases of our own for each flag and variable. For
each request the status, Location, the script that ran and what it was
told ($_SERVER, $_GET) must be the same."""
import http.client

import pytest

from apache_reference import beside_apache

HOST = "rewrite.test"
# What a script tells of itself: the same on both stacks when the rules
# did the same. Not REDIRECT_STATUS, which the suite always sets to 200
# (as nginx's fastcgi_params do, for php-cgi's check), nor an empty
# PATH_INFO, which Apache leaves out.
SHOW = """<?php
$keep = ['SCRIPT_NAME', 'REQUEST_URI', 'QUERY_STRING', 'PATH_INFO', 'REDIRECT_URL',
         'REDIRECT_QUERY_STRING', 'HTTP_AUTHORIZATION', 'REDIRECT_HTTP_AUTHORIZATION', 'BASE'];
$out = ['script' => __FILE__ === realpath(__FILE__) ? basename(dirname(__FILE__)) . '/' . basename(__FILE__) : ''];
foreach ($_SERVER as $k => $v)
    if ((in_array($k, $keep, true) || preg_match('/^(REDIRECT_)*MY_/', $k)) && !($k === 'PATH_INFO' && $v === ''))
        $out[$k] = $v;
ksort($out);
$out['get'] = $_GET;
echo json_encode($out), "\\n";
"""

WORDPRESS = """# BEGIN WordPress
<IfModule mod_rewrite.c>
RewriteEngine On
RewriteRule .* - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]
RewriteBase /wp/
RewriteRule ^index\\.php$ - [L]
RewriteCond %{REQUEST_FILENAME} !-f
RewriteCond %{REQUEST_FILENAME} !-d
RewriteRule . /wp/index.php [L]
</IfModule>
# END WordPress
"""
LARAVEL = """<IfModule mod_rewrite.c>
    <IfModule mod_negotiation.c>
        Options -MultiViews -Indexes
    </IfModule>

    RewriteEngine On

    # Handle Authorization Header
    RewriteCond %{HTTP:Authorization} .
    RewriteRule .* - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]

    # Handle X-XSRF-Token Header
    RewriteCond %{HTTP:x-xsrf-token} .
    RewriteRule .* - [E=HTTP_X_XSRF_TOKEN:%{HTTP:X-XSRF-Token}]

    # Redirect Trailing Slashes If Not A Folder...
    RewriteCond %{REQUEST_FILENAME} !-d
    RewriteCond %{REQUEST_URI} (.+)/$
    RewriteRule ^ %1 [L,R=301]

    # Send Requests To Front Controller...
    RewriteCond %{REQUEST_FILENAME} !-d
    RewriteCond %{REQUEST_FILENAME} !-f
    RewriteRule ^ index.php [L]
</IfModule>
"""
SYMFONY = """DirectoryIndex index.php

<IfModule mod_negotiation.c>
    Options -MultiViews
</IfModule>

<IfModule mod_rewrite.c>
    RewriteEngine On

    RewriteCond %{REQUEST_URI}::$0 ^(/.+)/(.*)::\\2$
    RewriteRule .* - [E=BASE:%1]

    RewriteCond %{HTTP:Authorization} .+
    RewriteRule ^ - [E=HTTP_AUTHORIZATION:%0]

    RewriteCond %{ENV:REDIRECT_STATUS} =""
    RewriteRule ^index\\.php(?:/(.*)|$) %{ENV:BASE}/$1 [R=301,L]

    RewriteCond %{REQUEST_FILENAME} !-f
    RewriteRule ^ %{ENV:BASE}/index.php [L]
</IfModule>

<IfModule !mod_rewrite.c>
    <IfModule mod_alias.c>
        RedirectMatch 307 ^/$ /index.php/
    </IfModule>
</IfModule>
"""
DRUPAL = """<FilesMatch "\\.(engine|inc|install|make|module|profile|po|sh|.*sql|theme|twig|tpl(\\.php)?|xtmpl|yml)(~|\\.sw[op]|\\.bak|\\.orig|\\.save)?$|^(\\.(?!well-known).*|Entries.*|Repository|Root|Tag|Template|composer\\.(json|lock)|web\\.config|yarn\\.lock|package\\.json)$|^#.*#$|\\.php(~|\\.sw[op]|\\.bak|\\.orig|\\.save)$">
  <IfModule mod_authz_core.c>
    Require all denied
  </IfModule>
  <IfModule !mod_authz_core.c>
    Order allow,deny
  </IfModule>
</FilesMatch>
Options -Indexes
DirectoryIndex index.php index.html index.htm
<IfModule mod_rewrite.c>
  RewriteEngine on
  RewriteRule .* - [E=protossl]
  RewriteCond %{HTTPS} on
  RewriteRule .* - [E=protossl:s]
  RewriteRule .* - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]
  RewriteRule "/\\.|^\\.(?!well-known/)" - [F]
  RewriteBase /drupal
  RewriteRule ^core/install.php core/install.php?rewrite=ok [QSA,L]
  RewriteCond %{REQUEST_FILENAME} !-f
  RewriteCond %{REQUEST_FILENAME} !-d
  RewriteCond %{REQUEST_URI} !=/favicon.ico
  RewriteRule ^ index.php [L]
  RewriteCond %{REQUEST_URI} !/core/[^/]*\\.php$
  RewriteCond %{REQUEST_URI} !/core/modules/system/tests/https?\\.php
  RewriteCond %{REQUEST_URI} !/core/modules/statistics/statistics\\.php$
  RewriteRule "^(.+/.*|autoload)\\.php($|/)" - [F]
</IfModule>
"""
JOOMLA = """Options +FollowSymlinks
Options -Indexes
RewriteEngine On
RewriteCond %{QUERY_STRING} base64_encode[^(]*\\([^)]*\\) [OR]
RewriteCond %{QUERY_STRING} (<|%3C)([^s]*s)+cript.*(>|%3E) [NC,OR]
RewriteCond %{QUERY_STRING} GLOBALS(=|\\[|\\%[0-9A-Z]{0,2}) [OR]
RewriteCond %{QUERY_STRING} _REQUEST(=|\\[|\\%[0-9A-Z]{0,2})
RewriteRule .* index.php [F]
RewriteRule .* - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]
RewriteBase /joomla
RewriteCond %{REQUEST_URI} !^/joomla/index\\.php
RewriteCond %{REQUEST_FILENAME} !-f
RewriteCond %{REQUEST_FILENAME} !-d
RewriteRule .* index.php [L]
"""
MEDIAWIKI = """RewriteEngine On
RewriteRule ^/?wiki(/.*)?$ %{DOCUMENT_ROOT}/mw/w/index.php [L]
RewriteRule ^/?$ %{DOCUMENT_ROOT}/mw/w/index.php [L]
"""
# One case (or a few) for each flag, condition and variable.
OWN = r"""RewriteEngine On
RewriteBase /own/
RewriteRule ^qsa/(\w+)$ show.php?from=$1 [QSA,L]
RewriteRule ^plain/(\w+)$ show.php?from=$1 [L]
RewriteRule ^qsd$ show.php [QSD,L]
RewriteRule ^moved$ /own/show.php?moved=1 [R=301,L]
RewriteRule ^found$ show.php [R,L]
RewriteRule ^other/(.*)$ http://elsewhere.test/$1 [R=302,L]
RewriteRule ^anchor$ /own/show.php#top [R,NE,L]
RewriteRule ^escaped$ /own/show.php#top [R,L]
RewriteRule ^closed - [F]
RewriteRule ^gone - [G]
RewriteRule ^teapot - [R=451]
RewriteRule ^CaSe$ show.php?nc=1 [NC,L]
RewriteRule ^env$ show.php [E=MY_ONE:1,E=MY_TWO:%{REQUEST_METHOD},L]
RewriteRule ^loop-last$ loop-last [L]
RewriteRule ^end$ show.php?end=1 [END]
RewriteRule ^chain/(\w+)$ - [C]
RewriteRule ^chain/(\w+)$ show.php?chained=$1 [L]
RewriteRule ^skip$ - [S=1]
RewriteRule ^skip$ show.php?skipped=no [L]
RewriteRule ^skip$ show.php?skipped=yes [L]
RewriteCond %{HTTP_HOST} ^other\.test$ [NC,OR]
RewriteCond %{HTTP:X-Mine} ^yes$
RewriteRule ^either$ show.php?either=1 [L]
RewriteCond %{REQUEST_METHOD} =POST
RewriteRule ^method$ show.php?post=1 [L]
RewriteCond %{HTTPS} off
RewriteRule ^https$ show.php?https=off [L]
RewriteCond %{QUERY_STRING} (^|&)id=(\d+)
RewriteRule ^item$ show.php?item=%2 [L]
RewriteCond %{REQUEST_FILENAME} -d
RewriteRule ^adir$ show.php?dir=1 [L]
RewriteCond %{REQUEST_FILENAME} -f
RewriteRule ^afile\.txt$ show.php?file=1 [L]
RewriteRule ^pt$ /own/show.php?pt=1 [PT]
RewriteRule ^refs/(\w+)-(\d+)$ show.php?word=$2-$1 [L]
RewriteRule ^path/(.*)$ show.php/$1 [L]
RewriteRule ^q/(.*)$ show.php?q=$1 [L]
RewriteRule ^b/(.*)$ show.php?q=$1 [B,L]
RewriteRule ^up$ ../show.php [L]
RewriteRule ^n/(.*)-(.*)$ n/$1_$2 [N]
RewriteRule ^n/(.*)$ show.php?n=$1 [L]
"""
ALIAS = r"""Redirect /alias/old /own/show.php
Redirect permanent /alias/perm https://example.test/new
Redirect 301 /alias/dir/ /own/show.php?from=dir
RedirectMatch ^/alias/m/(\d+)$ /own/show.php?id=$1
RedirectMatch 308 ^/alias/p/(.*)$ /own/target/$1
Redirect gone /alias/gone
RedirectTemp /alias/t /own/show.php
RedirectPermanent /alias/q /own/show.php?q=1
Redirect 404 /alias/nf
Redirect seeother /alias/so /own/show.php
"""
TREE = {
    "show.php": SHOW,
    "wp/.htaccess": WORDPRESS,
    "wp/index.php": SHOW,
    "wp/wp-login.php": SHOW,
    "wp/wp-content/uploads/photo.txt": "a photo\n",
    "laravel/public/.htaccess": LARAVEL,
    "laravel/public/index.php": SHOW,
    "laravel/public/css/app.css": "body{}\n",
    "symfony/public/.htaccess": SYMFONY,
    "symfony/public/index.php": SHOW,
    "symfony/public/robots.txt": "User-agent: *\n",
    "drupal/.htaccess": DRUPAL,
    "drupal/index.php": SHOW,
    "drupal/core/install.php": SHOW,
    "drupal/core/lib/secret.php": SHOW,
    "drupal/composer.json": "{}\n",
    "drupal/sites/default/settings.php": SHOW,
    "joomla/.htaccess": JOOMLA,
    "joomla/index.php": SHOW,
    "joomla/media/logo.txt": "logo\n",
    "mw/.htaccess": MEDIAWIKI,
    "mw/w/index.php": SHOW,
    "own/.htaccess": OWN,
    "own/show.php": SHOW,
    "own/afile.txt": "a file\n",
    "own/adir/page.txt": "a page\n",
    # A directory's rules replace its parent's; Inherit adds them after.
    "own/child/.htaccess": "RewriteEngine On\nRewriteRule ^mine$ ../show.php?child=1 [L]\n",
    "own/heir/.htaccess": "RewriteEngine On\nRewriteOptions Inherit\nRewriteRule ^mine$ ../show.php?heir=1 [L]\n",
    "own/off/.htaccess": "RewriteEngine Off\n",
    "own/nothing/page.txt": "no rules of its own\n",
    "own/neg/.htaccess": "RewriteEngine On\nRewriteRule !\\.txt$ ../show.php?neg=1 [L]\n",
    "own/neg/page.txt": "a page\n",
    # mod_alias's Redirects, alone and after rewrite rules (which they beat)
    "alias/.htaccess": ALIAS,
    "both/.htaccess": "RewriteEngine On\nRewriteRule ^x$ ../show.php?rw=1 [L]\nRedirect /both/x /show.php?alias=1\n",
    # a rule that sends a path to a static file
    "rs/.htaccess": "RewriteEngine On\nRewriteRule ^static$ afile.txt [L]\n",
    "rs/afile.txt": "the file a rule named\n",
    # mod_dir's DirectoryIndex: in order, a child's own or its parent's
    "di/.htaccess": "DirectoryIndex home.html\nDirectoryIndex start.php\n",
    "di/start.php": SHOW,
    "di/both/home.html": "home\n",
    "di/both/start.php": SHOW,
    "di/heir/start.php": SHOW,
    "di/off/.htaccess": "DirectoryIndex disabled\n",
    "di/off/index.php": SHOW,
    "di/abs/.htaccess": "DirectoryIndex missing.html /di/start.php\n",
    "di/own/.htaccess": "DirectoryIndex page.txt\n",
    "di/own/page.txt": "own index\n",
    "di/own/index.php": SHOW,
}
# mod_php's settings: not compared (Apache with php-fpm has no php_value:
# it fails on the line), checked against what mod_php does.
INI = """<?php
echo json_encode(array_map('ini_get', ['upload_max_filesize', 'memory_limit', 'display_errors', 'disable_functions',
                                        'auto_prepend_file'])), "\n";
"""
PHP_TREE = {
    "ini.php": INI,
    "php/.htaccess": "php_value upload_max_filesize 7M\nphp_value memory_limit 77M\nphp_flag display_errors on\n"
                     "php_value disable_functions exec\n",
    "php/ini.php": INI,
    "php/sub/.htaccess": "php_value memory_limit 33M\nphp_value auto_prepend_file none\n",
    "php/sub/ini.php": INI,
    "phpadmin/.htaccess": "php_admin_value memory_limit 1G\n",
    "phpadmin/ini.php": INI,
}
GET = [
    "/rs/static",
    # DirectoryIndex
    "/di/", "/di/both/", "/di/heir/", "/di/abs/", "/di/own/", "/di/own/index.php", "/di/both",
    # WordPress: permalinks, files and directories as they are, its scripts.
    "/wp/", "/wp/hello-world/", "/wp/2024/05/a-post/?replytocom=3", "/wp/index.php", "/wp/wp-login.php?action=x",
    "/wp/wp-content/uploads/photo.txt", "/wp/wp-content/uploads/missing.jpg", "/wp/category/news",
    # Laravel
    "/laravel/public/", "/laravel/public/users/42", "/laravel/public/users/42/", "/laravel/public/css/app.css",
    "/laravel/public/index.php?page=2", "/laravel/public/search?q=a+b&x=%2F",
    # Symfony (apache-pack): BASE from $0 and \2, the index.php redirect
    "/symfony/public/", "/symfony/public/blog/7", "/symfony/public/index.php", "/symfony/public/index.php/blog/7",
    "/symfony/public/robots.txt", "/symfony/public/api/x?y=1",
    # Drupal: its FilesMatch (a PCRE lookahead), front controller, denied scripts
    "/drupal/", "/drupal/node/1", "/drupal/core/install.php?langcode=en", "/drupal/core/lib/secret.php",
    "/drupal/composer.json", "/drupal/sites/default/settings.php", "/drupal/.hidden", "/drupal/favicon.ico",
    # Joomla: its query string guards
    "/joomla/", "/joomla/component/content", "/joomla/index.php?GLOBALS=1", "/joomla/x?base64_encode(abc)",
    "/joomla/x?a=%3Cscript%3E", "/joomla/media/logo.txt",
    # MediaWiki's short URLs: an absolute file path under the document root
    "/mw/wiki/Main_Page", "/mw/wiki", "/mw/", "/mw/w/index.php?title=X",
    # Our own
    "/own/qsa/one?keep=1", "/own/plain/one?keep=1", "/own/qsd?gone=1", "/own/moved?x=1", "/own/found",
    "/own/other/a/b?c=d", "/own/anchor", "/own/escaped", "/own/closed", "/own/gone", "/own/teapot", "/own/case",
    "/own/env", "/own/loop-last", "/own/end", "/own/chain/abc", "/own/skip", "/own/either", "/own/method",
    "/own/https", "/own/item?a=1&id=77", "/own/item?id=x", "/own/adir", "/own/afile.txt", "/own/pt",
    "/own/refs/abc-12", "/own/path/more/info", "/own/path/a%3Fb", "/own/q/a%20b", "/own/q/a%3Fb", "/own/b/a%20b&c", "/own/neg/page.txt", "/own/neg/other",
    "/own/up", "/own/n/a-b-c", "/own/child/mine", "/own/heir/mine", "/own/heir/qsa/x", "/own/child/qsa/x",
    "/own/off/qsa/x", "/own/nothing/qsa/x", "/own/nothing/page.txt", "/own/child", "/own/%2e%2e/show.php",
    # mod_alias
    "/alias/old", "/alias/old/sub/a%20b", "/alias/older", "/alias/perm?x=1", "/alias/perm/deep", "/alias/dir/x?y=2",
    "/alias/m/42", "/alias/m/abc", "/alias/p/a%20b?q=1", "/alias/gone", "/alias/t", "/alias/q?z=1", "/alias/nf",
    "/alias/so", "/both/x",
]


def fetch(port, path, method="GET", headers=None, absolute=False):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request(method, path, headers={"Host": HOST, **(headers or {})})
        r = c.getresponse()
        body = r.read()
        location = r.getheader("Location")
        if location and location.startswith(f"http://{HOST}/") and not absolute:
            # Apache makes mod_dir's redirects absolute, the front does not
            # (RFC 9110 allows both); the rules' own are checked below.
            location = location[len(f"http://{HOST}"):]
        return r.status, location, body if r.status == 200 else b""
    finally:
        c.close()


@pytest.fixture(scope="module")
def stacks():
    for ours, apache, _ in beside_apache("vc-rewrite-", HOST, {**TREE, **PHP_TREE}):
        yield ours, apache


def same(stacks, path, **kw):
    ours, apache = stacks
    theirs = fetch(apache.http, path, **kw)
    assert fetch(ours.http, path, **kw) == theirs, (path, theirs, apache.errors()[-1500:], ours.logs()[-1500:])
    return theirs


@pytest.mark.parametrize("path", GET)
def test_the_same_answer_as_apache(stacks, path):
    same(stacks, path)


@pytest.mark.parametrize("path,method,headers", [
    ("/own/method", "POST", {"Content-Length": "0"}),
    ("/own/either", "GET", {"X-Mine": "yes"}),
    ("/own/either", "GET", {"Host": "OTHER.test"}),
    ("/laravel/public/users/1", "GET", {"Authorization": "Bearer abc"}),
    ("/symfony/public/blog/1", "GET", {"Authorization": "Bearer abc"}),
    ("/wp/hello/", "GET", {"Authorization": "Basic eDp5"}),
])
def test_conditions_on_the_method_and_headers_as_apache(stacks, path, method, headers):
    status, _, body = same(stacks, path, method=method, headers=headers)
    assert status == 200 and body


def test_the_rules_ran_the_scripts_the_applications_expect(stacks):
    """The comparison above could pass with both stacks wrong in the same
    way only if Apache were: a few answers spelled out."""
    ours, _ = stacks
    status, _, body = fetch(ours.http, "/wp/hello-world/")
    assert status == 200 and b'"script":"wp\\/index.php"' in body and b'"REQUEST_URI":"\\/wp\\/hello-world\\/"' in body
    assert fetch(ours.http, "/own/moved?x=1", absolute=True)[:2] == (301, "http://rewrite.test/own/show.php?moved=1")
    assert fetch(ours.http, "/own/closed")[0] == 403
    assert fetch(ours.http, "/own/path/a%3Fb")[0] == 403  # a '?' decoded from the path (CVE-2024-38474)


def test_directory_index_disabled_runs_no_index(stacks):
    """`DirectoryIndex disabled`: the directory's index.php does not run.
    Apache answers 403 where mod_autoindex is loaded with `Options
    -Indexes` (Debian's default), 404 without it (the reference here);
    the front answers 403, as for any directory without an index."""
    ours, _ = stacks
    assert fetch(ours.http, "/di/off/")[0] == 403
    assert fetch(ours.http, "/di/off/index.php")[0] == 200


def test_php_value_and_php_flag_set_a_directorys_settings_for_its_scripts_only(stacks):
    import json
    ours, _ = stacks
    default = json.loads(fetch(ours.http, "/ini.php")[2])
    here = json.loads(fetch(ours.http, "/php/ini.php")[2])
    assert here[:3] == ["7M", "77M", "1"] and here[3] == default[3], here  # disable_functions is an admin setting
    below = json.loads(fetch(ours.http, "/php/sub/ini.php")[2])
    assert below == ["7M", "33M", "1", default[3], ""], below  # the nearer directory wins; "none" is empty
    for _ in range(8):  # undone after each request: no worker keeps them
        assert fetch(ours.http, "/php/ini.php")[0] == 200
        assert json.loads(fetch(ours.http, "/ini.php")[2]) == default
    assert fetch(ours.http, "/phpadmin/ini.php")[0] == 403  # php_admin_value is not a directory's (Apache: 500)


def test_configtest_lists_what_the_suite_does_not_apply_with_file_and_line(stacks):
    ours, _ = stacks
    out = ours.vc("configtest", check=True).stdout
    drupal = [line for line in out.splitlines() if "/drupal/.htaccess:" in line]
    assert any(line.endswith("/drupal/.htaccess:9: Options: not applied by the suite") for line in drupal), out
    assert "htaccess: site site: " in out and "1 closed" in out, out
    assert any(line.endswith("/phpadmin/.htaccess:1: php_admin_value: not allowed in a .htaccess file: " +
                             line.split(": ")[-1].split(" and what")[0] + " and what is below it answer 403")
               for line in out.splitlines() if "/phpadmin/" in line), out
    assert not any("/wp/.htaccess" in line for line in out.splitlines()), out  # WordPress's is all applied


def test_metrics_count_what_the_rules_did(stacks):
    ours, _ = stacks

    def counts():
        text = http_get(ours.admin, "/metrics")
        return {n: sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(n + " ") or
                       line.startswith(n + "{"))
                for n in ("vc_front_htaccess_rewritten_total", "vc_front_htaccess_redirected_total")}

    before = counts()
    assert fetch(ours.http, "/wp/hello-world/")[0] == 200
    assert fetch(ours.http, "/own/moved")[0] == 301
    after = counts()
    assert after["vc_front_htaccess_rewritten_total"] >= before["vc_front_htaccess_rewritten_total"] + 1
    assert after["vc_front_htaccess_redirected_total"] >= before["vc_front_htaccess_redirected_total"] + 1


def http_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request("GET", path)
        return c.getresponse().read().decode()
    finally:
        c.close()
