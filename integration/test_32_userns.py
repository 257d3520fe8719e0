"""`vc up --userns` (docs/SECURITY.md, "Without root"): started by a normal
user, the suite still runs its daemons as "vc" and each pool as its own
user, inside a user namespace whose ids come from the starter's ranges in
/etc/subuid and /etc/subgid. PHP is then neither the starter nor the
suite: it reads none of their files.

Run as root, the test starts the suite as "nobody" and gives it a range in
a mount namespace of the test's own (bind mounts over /etc/subuid and
/etc/subgid, gone with the suite's processes). Run as a normal user, it
uses that user's own range, and skips if the administrator gave none."""
# vc up --userns runs these (package uidmap):
# deps-test needs: program newuidmap
# deps-test needs: program newgidmap
import grp
import json
import os
import pwd
import subprocess

import pytest

from conftest import VC, Suite
from test_12_privileges import Hosting, proc_status, walk

GIVEN = 400000  # the first id of the range given to "nobody" when run as root


def own_range(path, user, uid):
    with open(path) as f:
        for line in f:
            parts = line.strip().split(":")
            if len(parts) == 3 and parts[0] in (user, str(uid)) and int(parts[2]) > 0:
                return int(parts[1])
    return None


class Starter:
    """Who starts the suite, the command prefix that starts it as them,
    and the first id of their range (inside id N is outside FIRST + N - 1)."""

    def __init__(self, workdir):
        if os.geteuid() == 0:
            self.uid, self.gid = pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
            self.first = GIVEN
            ranges = os.path.join(workdir, "subid")
            with open(ranges, "w") as f:
                f.write(f"nobody:{GIVEN}:65536\n")
            os.chmod(ranges, 0o644)
            self.become = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
            self.prefix = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                           f"mount --bind {ranges} /etc/subuid && mount --bind {ranges} /etc/subgid && "
                           'exec "$@"', "sh"] + self.become
        else:
            me = pwd.getpwuid(os.geteuid())
            self.uid, self.gid = me.pw_uid, me.pw_gid
            self.first = own_range("/etc/subuid", me.pw_name, me.pw_uid)
            if self.first is None or own_range("/etc/subgid", me.pw_name, me.pw_uid) != self.first:
                pytest.skip(f"{me.pw_name} has no range (the same in /etc/subuid and /etc/subgid) to start a suite "
                            "with --userns; only root can give one")
            self.become = []
            self.prefix = []

    def outside(self, inside_id):
        return self.first + inside_id - 1


@pytest.fixture(scope="module")
def userns_suite():
    h = Hosting(None, None, None, None)
    s = Suite(root="", conf=h.conf, as_root=False, args=["--userns"])
    st = Starter(s.dir)
    s.prefix = st.prefix
    vc = pwd.getpwnam("vc") if os.geteuid() == 0 else None
    if os.geteuid() == 0:
        os.chown(s.dir, st.uid, -1)
        for root, dirs, files in os.walk(h.dir):
            os.chmod(root, 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        # The sites' keys: the starter's, readable by the suite's group
        # inside (what `unshare --user --map-auto --map-root-user chgrp
        # vc KEY` does for a normal user), and by nobody else.
        for crt, key in h.certs.values():
            os.chown(key, st.uid, st.outside(vc.pw_gid))
            os.chmod(key, 0o640)
    else:
        for crt, key in h.certs.values():
            subprocess.run(["unshare", "--user", "--map-auto", "--map-root-user", "chgrp", "vc", key], check=True)
            os.chmod(key, 0o640)
    # A file of the starter's own, as in their home: PHP must not read it.
    private = os.path.join(s.dir, "starters-secret")
    with open(private, "w") as f:
        f.write("mine\n")
    os.chmod(private, 0o600)
    if os.geteuid() == 0:
        os.chown(private, st.uid, st.gid)
    s.start()
    yield s, h, st, private
    s.stop()
    s.cleanup()
    h.cleanup()


def test_the_daemons_and_php_run_as_ids_of_the_range_not_as_the_starter(userns_suite):
    s, h, st, private = userns_suite
    status = s.status()
    assert status["supervisor"]["separation"].startswith("users (in a user namespace"), status["supervisor"]
    vc_uid = pwd.getpwnam("vc").pw_uid
    www = pwd.getpwnam("www-data").pw_uid
    want = {"vc-bus": vc_uid, "vc-cache": vc_uid, "vc-front": vc_uid, "vc-acme": vc_uid, "vc-php": www,
            "vc-php.shop": www}
    for d in status["daemons"]:
        for pid in [int(d["pid"])] + [int(w["pid"]) for w in d.get("workers", [])]:
            ps = proc_status(pid)
            assert ps["Uid"].split()[0] == str(st.outside(want[d["daemon"]])), (d["daemon"], ps["Uid"])
            assert int(ps["CapEff"], 16) == 0 and int(ps["CapBnd"], 16) == 0, (d["daemon"], ps)
    # PHP believes it is www-data; outside it is an id nobody else has.
    a, _ = walk(s, "a", data=s.data, site_key=h.certs["b"][1], other_session=private)
    assert a["euid"] == www
    for what in ("read_tls_key", "read_tickets", "read_lmdb", "read_site_key", "read_other_session", "read_shadow"):
        assert a[what] is False, f"PHP could {what}: {a}"


def test_the_starter_speaks_to_the_suite_from_outside(userns_suite):
    """`vc` run by the starter joins the suite's namespace to read its
    state: status and reload answer as for a suite started as root."""
    s, h, st, private = userns_suite
    for verb in (["status", "--json"], ["reload"]):
        r = subprocess.run(st.become + [VC, "--data", s.data, "--conf", h.conf] + verb, capture_output=True,
                           text=True, timeout=30, env=s.env, cwd=s.dir)
        assert r.returncode == 0, (verb, r.stdout, r.stderr)
        if verb[0] == "status":
            assert json.loads(r.stdout)["supervisor"]["separation"].startswith("users (in a user namespace"), r.stdout


def test_a_starter_without_a_range_is_told_what_to_ask_for():
    if os.geteuid() != 0:
        pytest.skip("needs a user without a range; as a normal user, ours may have one")
    if own_range("/etc/subuid", "nobody", pwd.getpwnam("nobody").pw_uid) is not None:
        pytest.skip("this machine gives nobody a range")
    s = Suite(as_root=False, args=["--userns"], prefix=["setpriv", "--reuid=nobody", "--regid=nogroup",
                                                         "--clear-groups"])
    os.chown(s.dir, pwd.getpwnam("nobody").pw_uid, -1)
    try:
        r = subprocess.run(s.up_command(), capture_output=True, text=True, timeout=30, env=s.env, cwd=s.dir)
        assert r.returncode == 1 and "nobody has no range of its own in /etc/subuid" in r.stderr, r.stderr
        assert "usermod --add-subuids" in r.stderr
    finally:
        s.cleanup()
