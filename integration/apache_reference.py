"""The Apache reference: Debian's Apache 2.4 (event MPM) with mod_rewrite,
.htaccess allowed (AllowOverride All) and mod_xsendfile, passing .php files
to php-fpm 8.2 through mod_proxy_fcgi as Debian's php8.2-fpm package sets it
up, with the same php.ini as vc-php. Configured in a temporary directory;
nothing global is touched. Root runs it as www-data (Apache refuses to
serve as root), anyone else as themselves."""
import os
import pwd
import shutil
import signal
import subprocess
import tempfile

from reference import free_port, start_fpm, wait_http, wait_unix
from trees import open_to_all, write_tree

MODULES = "/usr/lib/apache2/modules"
LOADED = ["mpm_event", "authz_core", "authz_host", "access_compat", "authn_core", "authn_file", "auth_basic",
          "authz_user", "mime", "dir", "alias", "env", "headers", "expires", "setenvif", "rewrite", "proxy",
          "proxy_fcgi", "xsendfile"]


def load_modules():
    """The LoadModule lines of the modules the reference loads."""
    return "\n".join(f"LoadModule {m}_module {MODULES}/mod_{m}.so" for m in LOADED)


def apache_env():
    """The environment Apache runs in: none of the sanitizer runtime our
    builds are tested with."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}


class Apache:
    name = "apache+fpm"

    def __init__(self, workers, tmp, root, user=None, config=""):
        """config: more of the server's configuration (directives for its
        one virtual server), as a site would add them."""
        self.dir = tempfile.mkdtemp(prefix="ref-apache-", dir=tmp)
        d = self.dir
        os.chmod(d, 0o711)
        self.http = free_port()
        me = user or ("www-data" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name)
        sock = os.path.join(d, "fpm.sock")
        self.fpm = start_fpm(d, sock, workers, me)
        modules = load_modules()
        with open(os.path.join(d, "apache.conf"), "w") as f:
            f.write(f"""{modules}
ServerName localhost
Listen 127.0.0.1:{self.http}
PidFile {d}/apache.pid
DefaultRuntimeDir {d}
ErrorLog {d}/error.log
LogLevel warn
TypesConfig /etc/mime.types
{"User " + me if os.geteuid() == 0 else ""}
{"Group " + me if os.geteuid() == 0 else ""}
DocumentRoot {root}
DirectoryIndex index.php index.html
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<Directory {root}>
    Options FollowSymLinks
    AllowOverride All
    Require all granted
</Directory>
<FilesMatch ".+\\.ph(ar|p|tml)$">
    SetHandler "proxy:unix:{sock}|fcgi://localhost"
</FilesMatch>
{config}
""")
        self.apache = subprocess.Popen(["/usr/sbin/apache2", "-f", os.path.join(d, "apache.conf"), "-DFOREGROUND"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=apache_env())
        try:
            wait_unix(sock)
            wait_http(self.http, "/")
        except Exception:
            err = self.errors()
            self.stop()  # never leave Apache or php-fpm behind
            raise RuntimeError(f"Apache did not start: {err}")

    def errors(self):
        try:
            with open(os.path.join(self.dir, "error.log")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def stop(self):
        for p in (self.apache, self.fpm):
            p.send_signal(signal.SIGTERM)
        for p in (self.apache, self.fpm):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        if self.apache.stderr:
            self.apache.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def beside_apache(prefix, host, files):
    """One tree (files, as trees.write_tree takes them) served by the suite
    (one site for host, no front controller: what the tree's .htaccess
    files say is all there is) and by Apache: yields (suite, apache, the
    tree's root), and stops both."""
    from conftest import Suite  # the suite's test harness, imported where used
    tmp = tempfile.mkdtemp(prefix=prefix)
    root = os.path.join(tmp, "site")
    write_tree(root, files)
    open_to_all(tmp)
    conf = os.path.join(tmp, "etc")
    os.makedirs(os.path.join(conf, "sites-enabled"))
    with open(os.path.join(conf, "sites-enabled", "site.conf"), "w") as f:
        f.write(f'site: {{ hosts = ["{host}"]; root = "{root}"; front_controller = false; }};\n')
    ours = Suite(root="", conf=conf, as_root=False).start()
    apache = None
    try:
        apache = Apache(2, tmp, root)
        yield ours, apache, root
    finally:
        if apache:
            apache.stop()
        ours.stop()
        ours.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
