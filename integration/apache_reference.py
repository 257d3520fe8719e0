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
