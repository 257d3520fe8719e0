"""A throwaway MariaDB (Debian's mariadb-server) for the application tests:
its own data directory under a temporary directory, listening on a free
loopback port and a socket there, nothing global touched, stopped by pid."""
import os
import pwd
import signal
import subprocess
import time

from reference import free_port

# MariaDB is not ours to sanitise: the sanitized test run's preload and
# options stay out of its processes.
ENV = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith(("ASAN_", "UBSAN_", "LSAN_"))}


class MariaDB:
    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "mariadb")
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "mariadb.sock")
        self.port = free_port()
        os.makedirs(self.dir)
        me = pwd.getpwuid(os.geteuid()).pw_name
        # Root may only run mariadbd when it says so (--user=root).
        r = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={self.data}", f"--user={me}",
                            "--auth-root-authentication-method=normal", "--skip-test-db"],
                           capture_output=True, text=True, timeout=120, env=ENV)
        if r.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed:\n{r.stdout}\n{r.stderr}")
        self.log = os.path.join(self.dir, "error.log")
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", f"--datadir={self.data}", f"--socket={self.sock}",
             f"--port={self.port}", "--bind-address=127.0.0.1", f"--user={me}", f"--log-error={self.log}",
             f"--pid-file={self.dir}/mariadb.pid", "--skip-log-bin", "--innodb-buffer-pool-size=64M",
             "--skip-name-resolve"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
        try:
            self._wait()
        except Exception:
            self.stop()
            raise

    def sql(self, statements):
        r = subprocess.run(["mariadb", "--no-defaults", f"--socket={self.sock}", "-uroot", "-e", statements],
                           capture_output=True, text=True, timeout=60, env=ENV)
        if r.returncode != 0:
            raise RuntimeError(f"mariadb: {statements!r} failed: {r.stderr}")
        return r.stdout

    def _wait(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mariadbd exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                self.sql("SELECT 1")
                return
            except RuntimeError:
                time.sleep(0.2)
        raise RuntimeError(f"mariadbd did not start:\n{self.tail()}")

    def tail(self):
        try:
            with open(self.log) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def reset(self, db, user, password):
        """An empty database db, all of it granted to user over TCP."""
        self.sql(f"DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db};"
                 f"CREATE USER IF NOT EXISTS '{user}'@'127.0.0.1' IDENTIFIED BY '{password}';"
                 f"GRANT ALL ON {db}.* TO '{user}'@'127.0.0.1';")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
