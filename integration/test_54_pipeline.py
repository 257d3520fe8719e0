"""Pipelined lent workers (docs/php.md, "Workers lent to the front"):
while requests wait at the front, a busy lent worker may hold the next
one in its link behind the request it runs. A request held so and not
begun is taken back when its client leaves (it never runs), when the
worker dies, and when the worker ends after its last request
(php.max_requests): no request is lost or answered twice."""
import os
import re
import signal
import subprocess
import threading

import requests

from conftest import FIXTURES
from mesh import wait_until

DOCROOT = os.path.join(FIXTURES, "docroot")


def pipelined_suite(make_suite, tmp_path, php):
    """Started, its workers lent to the front (only a lent worker holds
    requests behind its job; one still with the broker serves through it)."""
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text("php: { %s };\n" % php)
    s = make_suite(root=DOCROOT, conf=str(conf)).start()

    def all_lent():
        php = [d for d in s.status()["daemons"] if d["daemon"] == "vc-php"][0]
        return php["workers"] and all(w["lent"] == "yes" for w in php["workers"])
    assert wait_until(all_lent), s.logs()
    return s


def pipelined(s):
    text = requests.get("http://127.0.0.1:%d/metrics" % s.admin, timeout=5).text
    m = re.search(r"^vc_front_php_pipelined_total(?:{[^}]*})? (\d+)", text, re.M)
    assert m, text
    return int(m.group(1))


def busy_worker(s):
    """The pid of the worker running sleep.php."""
    def find():
        php = [d for d in s.status()["daemons"] if d["daemon"] == "vc-php"][0]
        return next((int(w["pid"]) for w in php["workers"] if w["state"] == "busy" and "sleep.php" in w["uri"]), None)
    pid = wait_until(find, timeout=10, every=0.02)
    assert pid, s.logs()
    return pid


def in_thread(results, name, fn):
    def run():
        try:
            results[name] = fn()
        except Exception as e:  # the assertion below says which
            results[name] = e
    t = threading.Thread(target=run)
    t.start()
    return t


def answer(r):
    return r.status_code, r.text


def load(s, clients=12, each=150):
    """Each client a keep-alive connection asking for its own tags: the
    answers that were not its own."""
    wrong = []

    def client(n):
        with requests.Session() as sess:
            for i in range(each):
                tag = "%d-%d" % (n, i)
                r = sess.get(s.url("/mark.php?tag=" + tag), timeout=30)
                if answer(r) != (200, "marked %s\n" % tag):
                    wrong.append((tag, r.status_code, r.text[:80]))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return wrong


def test_under_load_requests_are_held_behind_and_each_gets_its_own_answer(make_suite, tmp_path):
    # Generous: under the sanitizers hello-world takes longer than 2 ms.
    s = pipelined_suite(make_suite, tmp_path, 'workers = 2; pipeline_below = "200ms";')
    wrong = load(s)
    assert wrong == [], wrong[:5]
    assert pipelined(s) > 0  # 12 clients, 2 workers: requests waited


def test_pipeline_below_0_holds_nothing(make_suite, tmp_path):
    s = pipelined_suite(make_suite, tmp_path, 'workers = 2; pipeline_below = 0;')
    wrong = load(s, each=50)
    assert wrong == [], wrong[:5]
    assert pipelined(s) == 0


def test_a_request_held_behind_whose_client_left_never_runs(make_suite, tmp_path):
    s = pipelined_suite(make_suite, tmp_path, 'workers = 1; pipeline_below = "10s";')
    assert requests.get(s.url("/sleep.php?ms=10"), timeout=10).status_code == 200  # its cost is known
    results = {}
    a = in_thread(results, "a", lambda: answer(requests.get(s.url("/sleep.php?ms=1500"), timeout=30)))
    busy_worker(s)
    # Held behind the sleep; its client gives up before the sleep ends.
    # Over HTTP/2, whose connection the front reads while a request waits
    # (an HTTP/1.1 client that leaves is seen when its answer is written).
    b = subprocess.run(["curl", "-sk", "--http2", "--max-time", "0.5", s.surl("/mark.php?log=1&tag=b")],
                       capture_output=True)
    assert b.returncode == 28, b  # curl's timeout
    assert pipelined(s) == 1
    c = requests.get(s.url("/mark.php?log=1&tag=c"), timeout=30)
    a.join()
    assert results["a"][0] == 200 and results["a"][1].startswith("slept "), results
    assert answer(c) == (200, "marked c\n")
    logs = s.logs()
    assert "mark c" in logs and "mark b" not in logs, logs[-2000:]


def test_a_request_held_behind_a_worker_that_dies_runs_on_the_next(make_suite, tmp_path):
    s = pipelined_suite(make_suite, tmp_path, 'workers = 1; pipeline_below = "10s";')
    # Their costs known: a request is held only behind requests usually short.
    for path in ("/sleep.php?ms=10", "/mark.php?tag=a"):
        assert requests.get(s.url(path), timeout=10).status_code == 200
    results = {}
    # A POST that has not begun answering is not run again: 502.
    a = in_thread(results, "a", lambda: requests.post(s.url("/sleep.php?ms=5000"), data={"x": "1"},
                                                      timeout=30).status_code)
    pid = busy_worker(s)
    held = []
    for tag in ("b", "c"):  # two held behind it
        held.append(in_thread(results, tag, lambda tag=tag: answer(
            requests.get(s.url("/mark.php?log=1&tag=" + tag), timeout=30))))
        assert wait_until(lambda: pipelined(s) == len(held)), s.logs()
    os.kill(pid, signal.SIGKILL)
    for t in [a] + held:
        t.join()
    assert results == {"a": 502, "b": (200, "marked b\n"), "c": (200, "marked c\n")}, results
    assert s.logs().count("mark b") == 1 and s.logs().count("mark c") == 1


def test_a_request_held_behind_a_workers_last_request_runs_on_the_next(make_suite, tmp_path):
    s = pipelined_suite(make_suite, tmp_path, 'workers = 1; max_requests = 2; pipeline_below = "10s";')
    assert requests.get(s.url("/sleep.php?ms=10"), timeout=10).status_code == 200  # the worker's first
    results = {}
    a = in_thread(results, "a", lambda: answer(requests.get(s.url("/sleep.php?ms=800"), timeout=30)))
    pid = busy_worker(s)  # its last: it ends after this one
    b = in_thread(results, "b", lambda: answer(requests.get(s.url("/mark.php?log=1&tag=b"), timeout=30)))
    a.join()
    b.join()
    assert results["a"][0] == 200 and results["a"][1] == "slept %d\n" % pid, results
    assert results["b"] == (200, "marked b\n"), results
    assert pipelined(s) == 1
    assert s.logs().count("mark b") == 1
