"""The reference stack: nginx + php-fpm 8.2 from Debian, configured in a
temporary directory (nothing global is touched), with the stock Debian
fastcgi.conf and the PATH_INFO snippet, and the same php.ini as vc-php
(Debian's embed php.ini and its conf.d). Used by bench/run and by the
conformance suite."""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

PHP_INI = "/etc/php/8.2/embed/php.ini"
PHP_INI_SCAN = "/etc/php/8.2/embed/conf.d"


_given = set()

# Run by pytest-xdist (ops/test.sh runs the integration tests several at
# once), each worker takes its ports from a range of its own, below the
# kernel's ephemeral range: two workers asking the kernel for a free port
# at the same moment could be handed the same one, and their suites would
# then fight over it. Alone, the kernel picks.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_SPAN = 3000
_next = [0]


def _worker_port():
    """The next port of this worker's range that is free now, in turn, so
    that one a test stopped using is taken again only a whole range later
    (long out of TIME_WAIT)."""
    index = int(_WORKER[2:]) if _WORKER[2:].isdigit() else 0
    base = 12000 + (index % 6) * _SPAN
    for _ in range(_SPAN):
        port = base + _next[0] % _SPAN
        _next[0] += 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {base}..{base + _SPAN}")


def free_port():
    """A port free now and never handed out before in this run: the kernel
    may give the same free port to two binds in a row, and a suite's
    listen, tls_listen and admin ports once came out equal (its vc up then
    refused the configuration, rightly). Under xdist, from the worker's own
    range."""
    if _WORKER:
        return _worker_port()
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _given:
            _given.add(port)
            return port


def tree(pid):
    """pid and every process below it."""
    kids = {}
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(e))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [pid], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def wait_unix(path, timeout=20):
    """Until a Unix socket accepts a connection: php-fpm has bound and
    listens, so nginx's connections queue instead of failing."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {path}")


def wait_http(port, path="/", timeout=20):
    """Until the stack answers path with a status below 500: nginx answers
    502 until php-fpm has opened its socket."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
                status = s.recv(12)
                if status.startswith(b"HTTP/1.1 ") and len(status) >= 10 and status[9:10] in b"1234":
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"nothing answers on port {port}")


def start_fpm(d, sock, workers, user):
    """php-fpm 8.2 with one static pool of workers listening on sock, its
    configuration and log in d; as user when run as root (-R: root may
    start it)."""
    as_root = os.geteuid() == 0
    with open(os.path.join(d, "fpm.conf"), "w") as f:
        f.write(f"""[global]
error_log = {d}/fpm.log
daemonize = no
[bench]
{"user = " + user if as_root else ""}
listen = {sock}
{"listen.owner = " + user if as_root else ""}
pm = static
pm.max_children = {workers}
clear_env = yes
catch_workers_output = yes
""")
    env = dict(os.environ, PHP_INI_SCAN_DIR=PHP_INI_SCAN)
    return subprocess.Popen(["php-fpm8.2", "-F", "-y", os.path.join(d, "fpm.conf"), "-c", PHP_INI] +
                            (["-R"] if as_root else []),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


class Reference:
    """nginx + php-fpm 8.2 from Debian, configured here, nothing global."""
    name = "nginx+fpm"

    def __init__(self, workers, mode, tmp, root, nginx_workers=1, server_name="localhost", cache=False, user=None,
                 locations=""):
        self.dir = tempfile.mkdtemp(prefix="ref-bench-", dir=tmp)
        d = self.dir
        self.http, self.https, self.h2c = free_port(), free_port(), free_port()
        sock = os.path.join(d, "fpm.sock")
        # Both stacks run as whoever runs them (root included, as on a CI
        # machine: then fpm needs -R and nginx a user line); user (root
        # only): the pool and nginx's workers as that user instead, as
        # Debian's default pool runs as www-data.
        me = user or pwd.getpwuid(os.geteuid()).pw_name
        as_root = os.geteuid() == 0
        if user:
            os.chmod(d, 0o711)
        crt, key = os.path.join(d, "ref.crt"), os.path.join(d, "ref.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=localhost"], check=True,
                       capture_output=True)
        # nginx's own response cache, as its documentation sets it up: the
        # answer's Cache-Control or Expires gives the lifetime, answers with
        # Set-Cookie are not stored, one miss a key goes to PHP at a time.
        cache_loc = """
            fastcgi_cache vc_ref;
            fastcgi_cache_key "$scheme$request_method$host$request_uri";
            fastcgi_cache_lock on;
            fastcgi_cache_use_stale updating error timeout http_500 http_503;
            fastcgi_cache_background_update on;
            add_header X-Cache-Status $upstream_cache_status;
"""
        php_loc = f"""
        location ~ [^/]\\.php(/|$) {{
            fastcgi_split_path_info ^(.+?\\.php)(/.*)$;
            try_files $fastcgi_script_name =404;
            set $path_info $fastcgi_path_info;
            fastcgi_param PATH_INFO $path_info;
            fastcgi_index index.php;
            include /etc/nginx/fastcgi.conf;
            fastcgi_pass unix:{sock};
            {cache_loc if cache else ""}
        }}
        location / {{ try_files $uri $uri/ /index.php?$query_string; }}
        {locations}
"""
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(f"""worker_processes {nginx_workers};
{"user " + me + ";" if as_root else ""}
pid {d}/nginx.pid;
error_log {d}/nginx-error.log;
daemon off;
events {{ worker_connections 4096; }}
http {{
    include /etc/nginx/mime.types;
    access_log {d}/access.log;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    client_max_body_size 8m;
    client_body_temp_path {d}/body;
    fastcgi_temp_path {d}/fastcgi;
    proxy_temp_path {d}/proxy;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    gzip on;
    {f"fastcgi_cache_path {d}/cache levels=1:2 keys_zone=vc_ref:10m max_size=256m;" if cache else ""}
    server {{
        server_name {server_name};
        listen 127.0.0.1:{self.http};
        listen 127.0.0.1:{self.https} ssl http2;
        ssl_certificate {crt};
        ssl_certificate_key {key};
        # As Debian's /etc/nginx/nginx.conf has it: nginx 1.22's own
        # default stops at TLS 1.2 (one ticket, no 1.3 handshake).
        ssl_protocols TLSv1.2 TLSv1.3;
        root {root};
        index index.php index.html;
        {php_loc}
    }}
    server {{
        server_name {server_name};
        listen 127.0.0.1:{self.h2c} http2;
        root {root};
        index index.php index.html;
        {php_loc}
    }}
}}
""")
        self.fpm = start_fpm(d, sock, workers, me)
        self.nginx = subprocess.Popen(["nginx", "-p", d, "-c", os.path.join(d, "nginx.conf")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # A root without index.php answers "/" from nginx alone (404 or
            # 403), before php-fpm listens: wait for php-fpm's socket too,
            # or the first PHP request may meet a 502.
            wait_unix(sock)
            wait_http(self.http, "/")
        except Exception:
            self.stop()  # never leave nginx or php-fpm behind
            raise

    def pids(self):
        return tree(self.fpm.pid) + tree(self.nginx.pid)

    def php_workers(self):
        return [p for p in tree(self.fpm.pid) if p != self.fpm.pid]

    def stop(self):
        for p in (self.nginx, self.fpm):
            p.send_signal(signal.SIGTERM)
        for p in (self.nginx, self.fpm):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)




class NginxCache(Reference):
    """nginx + php-fpm with nginx's fastcgi_cache in front of PHP."""
    name = "nginx-cache"

    def __init__(self, workers, mode, tmp, root, **kw):
        super().__init__(workers, mode, tmp, root, cache=True, **kw)


class Varnish(Reference):
    """Varnish 7.1 from Debian, with its built-in VCL, in front of nginx +
    php-fpm (Varnish speaks HTTP to its backend, not FastCGI): the usual
    way PHP sites put it in front."""
    name = "varnish"

    def __init__(self, workers, mode, tmp, root, **kw):
        super().__init__(workers, mode, tmp, root, **kw)
        self.backend = self.http
        self.http = free_port()
        workdir = os.path.join(self.dir, "varnish")
        os.makedirs(workdir)
        args = ["varnishd", "-F", "-n", workdir, "-a", f"127.0.0.1:{self.http}", "-b", f"127.0.0.1:{self.backend}",
                "-s", "malloc,256m", "-p", "thread_pool_min=50"]
        if os.geteuid() == 0:
            args += ["-j", "unix,user=varnish"]
        # Not ours: none of the sanitizer runtime our builds are tested with
        # (its compiler of VCL, and the loaded VCL, would get it too).
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
        self.varnish = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            wait_http(self.http, "/")
        except Exception:
            self.stop()
            raise

    def pids(self):
        return super().pids() + tree(self.varnish.pid)

    def stop(self):
        self.varnish.send_signal(signal.SIGTERM)
        try:
            self.varnish.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.varnish.kill()
        super().stop()
