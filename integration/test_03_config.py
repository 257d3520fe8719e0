"""The configuration directory: configtest, ensite/dissite, reload."""
import json
import os
import re
import signal
import subprocess

from conftest import FIXTURES, VC, curl
from mesh import wait_until

GOOD = """site: {
  hosts = ["good.test", "www.good.test"];
  root = "%s";
  default = true;
};
"""

BROKEN = """site: {
  hosts = ["bad.test"]
  root = = "/nowhere";
};
"""


def make_conf(tmp_path):
    conf = tmp_path / "etc"
    (conf / "sites-available").mkdir(parents=True)
    (conf / "conf-available").mkdir()
    (conf / "vc.conf").write_text('php: { workers = 2; };\n')
    (conf / "sites-available" / "good.conf").write_text(GOOD % os.path.join(FIXTURES, "docroot"))
    (conf / "sites-available" / "bad.conf").write_text(BROKEN)
    (conf / "conf-available" / "tuning.conf").write_text('php: { max_requests = 500; };\n')
    return str(conf)


def test_configtest_and_enable_commands(make_suite, tmp_path):
    s = make_suite(conf=make_conf(tmp_path))
    r = s.vc("configtest")
    assert r.returncode == 0 and "Syntax OK" in r.stdout
    r = s.vc("ensite", "good")
    assert r.returncode == 0 and "vc reload" in r.stdout
    assert os.readlink(os.path.join(s.conf, "sites-enabled", "good.conf")) == "../sites-available/good.conf"
    assert s.vc("ensite", "good").stdout.startswith("Site good already enabled")
    assert s.vc("ensite", "nosuch").returncode != 0
    assert s.vc("ensite", "../etc/passwd").returncode != 0
    assert s.vc("enconf", "tuning").returncode == 0
    assert s.vc("configtest").returncode == 0
    assert s.vc("ensite", "bad").returncode == 0
    r = s.vc("configtest")
    assert r.returncode != 0
    assert "sites-enabled/bad.conf:3: syntax error" in r.stderr
    assert s.vc("dissite", "bad").returncode == 0
    assert s.vc("dissite", "bad").returncode != 0  # not enabled any more
    assert s.vc("disconf", "tuning").returncode == 0
    assert s.vc("configtest").returncode == 0


def test_broken_reload_keeps_serving(make_suite, tmp_path):
    s = make_suite(conf=make_conf(tmp_path))
    s.vc("ensite", "good", check=True)
    s.start()
    code, _, body = curl("-H", "Host: good.test", s.url("/hello.php"))
    assert code == 200 and body == b"hello world\n"
    before = s.status()["supervisor"]["config_version"]

    s.vc("ensite", "bad", check=True)
    r = s.vc("reload")
    assert r.returncode != 0
    assert "sites-enabled/bad.conf:3: syntax error" in r.stderr
    assert s.status()["supervisor"]["config_version"] == before
    code, _, body = curl("-H", "Host: good.test", s.url("/hello.php"))
    assert code == 200 and body == b"hello world\n"
    refused = s.events_of("config.refused")
    assert refused and "bad.conf:3" in refused[-1]["fields"]["reason"]

    s.vc("dissite", "bad", check=True)
    r = s.vc("reload")
    assert r.returncode == 0, r.stderr
    # Read whatever the pool's health: under the sanitizers its new
    # generation may still be forking its workers ("no workers").
    st = json.loads(s.vc("status", "--json").stdout)
    assert int(st["supervisor"]["config_version"]) == int(before) + 1
    assert s.events_of("config.changed")


def test_a_reload_while_the_front_is_replaced_waits_for_a_front_that_has_it(make_suite, tmp_path):
    """The successor a first reload started has read its configuration
    before a second reload stores the next: the second is answered once a
    front that read it serves, not before."""
    conf = make_conf(tmp_path)
    s = make_suite(conf=conf)
    s.vc("ensite", "good", check=True)
    s.start()
    started, loaded = s.logs().count("started vc-front"), s.logs().count("up: configuration version")

    def reload():
        return subprocess.Popen([VC, "--data", s.data, "--conf", conf, "reload"], env=s.env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)

    def successor_read_its_configuration():
        pids = re.findall(r"started vc-front \(pid (\d+)\)", s.logs())
        if len(pids) > started and "vc-front[%s] tls: loaded" % pids[-1] in s.logs():
            return int(pids[-1])

    first, second, successor = reload(), None, None
    try:
        successor = wait_until(successor_read_its_configuration, timeout=20, every=0.002)
        assert successor, s.logs()
        os.kill(successor, signal.SIGSTOP)  # before it says it is ready
        late = tmp_path / "late"
        late.mkdir()
        (late / "late.txt").write_text("late\n")
        (tmp_path / "etc" / "sites-available" / "late.conf").write_text(
            'site: {\n  hosts = ["late.test"];\n  root = "%s";\n};\n' % late)
        s.vc("ensite", "late", check=True)
        second = reload()
        assert wait_until(lambda: s.logs().count("up: configuration version") == loaded + 2), s.logs()
        os.kill(successor, signal.SIGCONT)
        successor = None
        out, _ = second.communicate(timeout=30)
        assert second.returncode == 0, out
        for _ in range(20):  # no front without the site answers any more
            code, _, body = curl("-H", "Host: late.test", s.url("/late.txt"))
            assert (code, body) == (200, b"late\n"), s.logs()
    finally:
        if successor:
            os.kill(successor, signal.SIGCONT)
        for p in (first, second):
            if p:
                p.communicate(timeout=30)
    assert first.returncode == 0, first.stdout


def test_up_refuses_a_broken_configuration(make_suite, tmp_path):
    s = make_suite(conf=make_conf(tmp_path))
    s.vc("ensite", "bad", check=True)
    r = s.vc("up", "--listen", f"127.0.0.1:{s.http}", timeout=20)
    assert r.returncode != 0 and "bad.conf:3" in r.stderr


def test_environment_overrides(make_suite):
    s = make_suite(env={"VC_WORKERS": "3"}).start()
    php = [d for d in s.status()["daemons"] if d["daemon"] == "vc-php"][0]
    assert php["status"]["workers_wanted"] == "3"
    assert len(php["workers"]) == 3
