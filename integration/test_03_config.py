"""The configuration directory: configtest, ensite/dissite, reload."""
import json
import os

from conftest import FIXTURES, curl

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
