"""The cache under concurrency and failure (docs/CACHE.md): one request a
page goes to PHP while the others wait for its answer (collapsed
forwarding), an uncacheable page's requests stop waiting (hit-for-miss), a
stale entry is served while one request refreshes it
(stale-while-revalidate, cache.grace) and stands in when PHP fails
(stale-if-error). PHP's runs are counted by the script (cached.php)."""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest
import requests

from test_04_php_pool import wait_for
from test_17_cache import get, new_id, page, run_of, stored


def suite_with(tmp_path_factory, vc_conf):
    """A suite of two workers with vc_conf as its vc.conf, for a module."""
    from conftest import Suite
    conf = tmp_path_factory.mktemp("etc")
    (conf / "vc.conf").write_text(vc_conf)
    s = Suite(conf=str(conf), args=["--workers", "2"]).start()
    yield s
    s.stop()
    s.cleanup()


@pytest.fixture(scope="module")
def flight_suite(tmp_path_factory):
    yield from suite_with(tmp_path_factory, 'cache: { lock_timeout = "1s"; };\n')


def metric(s, name):
    text = requests.get(f"http://127.0.0.1:{s.admin}/metrics", timeout=5).text
    return sum(int(v) for v in re.findall(rf"^{name}\S* (\d+)", text, re.M))


def together(s, path, n, headers=None):
    """n requests for path sent at once (connected first, then released
    together): [(status, Cache-Status, body)]."""
    host = s.url("/").split("//")[1].rstrip("/")
    barrier = threading.Barrier(n, timeout=30)
    out = [None] * n

    def one(i):
        c = http.client.HTTPConnection(host, timeout=30)
        c.connect()
        barrier.wait()
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        out[i] = (r.status, r.getheader("Cache-Status"), r.read())
        c.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(out), "a request did not finish"
    return out


def test_500_misses_for_a_cold_page_make_one_php_run(flight_suite):
    s, id_ = flight_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", ms=200)
    before = metric(s, "vc_front_cache_collapsed_total")
    t0 = time.monotonic()
    answers = together(s, path, 500)
    took = time.monotonic() - t0
    assert {code for code, _, _ in answers} == {200}
    # One PHP run served everyone (with 2 workers, 500 runs would take 50 s).
    assert {run_of(body) for _, _, body in answers} == {1}, took
    statuses = [st for _, st, _ in answers]
    assert statuses.count("Velocity; fwd=uri-miss; stored") == 1, statuses
    assert all(st == "Velocity; fwd=uri-miss; stored" or st == "Velocity; fwd=uri-miss; collapsed"
               or st.startswith("Velocity; hit") for st in statuses), statuses
    assert metric(s, "vc_front_cache_collapsed_total") - before >= 1
    # The next request is a hit of that same run.
    assert run_of(get(s, path)[2]) == 1


def test_an_uncacheable_page_is_not_waited_for_again(flight_suite):
    s, id_ = flight_suite, new_id()
    path = page(id_, ms=300)  # no lifetime: never stored
    before = metric(s, "vc_front_cache_collapsed_total")
    first = together(s, path, 4)
    # Those that waited went to PHP once the answer proved uncacheable.
    assert sorted(run_of(b) for _, _, b in first) == [1, 2, 3, 4]
    assert all(st == "Velocity; fwd=uri-miss; detail=no-lifetime" for _, st, _ in first), first
    waited = metric(s, "vc_front_cache_collapsed_total") - before
    assert waited >= 1
    # Now marked hit-for-miss: nobody waits, they run side by side.
    second = together(s, path, 4)
    assert sorted(run_of(b) for _, _, b in second) == [5, 6, 7, 8]
    assert metric(s, "vc_front_cache_collapsed_total") - before == waited


def test_a_stale_entry_is_served_while_one_request_refreshes_it(flight_suite):
    s, id_ = flight_suite, new_id()
    path = page(id_, "Cache-Control: max-age=1, stale-while-revalidate=60", ms=400)
    stored(s, path)
    assert wait_for(lambda: "ttl=-" in get(s, path)[1]["cache-status"], timeout=5)
    # That request found it stale: a refresh runs for 400 ms. Those that
    # come meanwhile get the stale entry at once, and start no other.
    t0 = time.monotonic()
    for _ in range(5):
        code, h, body = get(s, path)
        assert code == 200 and run_of(body) == 1
        assert re.fullmatch(r"Velocity; hit; ttl=-\d+; detail=stale-while-revalidate", h["cache-status"]), h
    assert time.monotonic() - t0 < 0.4 * 5
    assert wait_for(lambda: run_of(get(s, path)[2]) == 2, timeout=5)
    code, h, body = get(s, path)
    assert h["cache-status"].startswith("Velocity; hit; ttl=") and "ttl=-" not in h["cache-status"]
    # Only one refresh ran: PHP's next run (bypassing the cache) is the 3rd.
    code, h, body = get(s, path, "-H", "Cookie: PHPSESSID=x")
    assert run_of(body) == 3


@pytest.mark.parametrize("fail", ["503", "500", "kill"])
def test_a_stale_entry_stands_in_when_php_fails(flight_suite, fail):
    s, id_ = flight_suite, new_id()
    path = page(id_, "Cache-Control: max-age=1, stale-if-error=60")
    stored(s, path)
    assert wait_for(lambda: get(s, path, "-H", "Cookie: fail=503")[1]["cache-status"].endswith("stale-if-error"),
                    timeout=5)
    code, h, body = get(s, path, "-H", f"Cookie: fail={fail}")
    assert code == 200 and run_of(body) == 1, (code, h, body)
    failed = "502" if fail == "kill" else fail
    assert re.fullmatch(rf"Velocity; fwd=stale; fwd-status={failed}; ttl=-\d+; detail=stale-if-error",
                        h["cache-status"]), h
    assert "age" in h and "etag" in h
    # Once PHP answers again, the page is refreshed.
    code, h, body = get(s, path)
    assert code == 200 and h["cache-status"] == "Velocity; fwd=stale; stored" and "failed" not in body.decode()


def test_without_stale_if_error_a_failure_reaches_the_client(flight_suite):
    s, id_ = flight_suite, new_id()
    path = page(id_, "Cache-Control: max-age=1")
    stored(s, path)
    assert wait_for(lambda: get(s, path, "-H", "Cookie: fail=503")[0] == 503, timeout=5)
    code, h, body = get(s, path, "-H", "Cookie: fail=503")
    assert code == 503 and b"failed run" in body
    # Not stored either: it gives no lifetime of its own.
    assert h["cache-status"] == "Velocity; fwd=stale; detail=no-lifetime"


def test_a_waiter_leads_when_the_leader_leaves(flight_suite):
    s, id_ = flight_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", ms=1500)
    # The first client leaves once the second waits for it (over HTTP/2,
    # whose connection the front reads while PHP works: it sees it close).
    before = metric(s, "vc_front_cache_misses_total")
    collapsed = metric(s, "vc_front_cache_collapsed_total")
    leader = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "--http2-prior-knowledge", "--max-time", "20",
                               s.url(path)])
    try:
        # Counted once its flight is up: the second request finds it under way.
        assert wait_for(lambda: metric(s, "vc_front_cache_misses_total") > before, timeout=5)
        answer, t0 = [], time.monotonic()
        second = threading.Thread(target=lambda: answer.append((get(s, path), time.monotonic() - t0)))
        second.start()
        assert wait_for(lambda: metric(s, "vc_front_cache_collapsed_total") == collapsed + 1, timeout=5)
    finally:
        leader.kill()
        leader.wait()
    second.join(20)
    (code, h, body), took = answer[0]
    # It went to PHP itself as soon as the first left (run 2, stored by it),
    # not after the 1 s lock timeout plus the page's 1.5 s.
    assert code == 200 and run_of(body) == 2 and h["cache-status"] == "Velocity; fwd=uri-miss; stored", h
    assert took < 2.3, took


def test_a_waiter_goes_to_php_itself_after_the_lock_timeout(flight_suite):
    s, id_ = flight_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", ms=2500)
    before = metric(s, "vc_front_cache_misses_total")
    leader = threading.Thread(target=get, args=(s, path))
    leader.start()
    assert wait_for(lambda: metric(s, "vc_front_cache_misses_total") > before, timeout=5)
    t0 = time.monotonic()
    code, h, body = get(s, path)
    took = time.monotonic() - t0
    leader.join()
    # lock_timeout = 1s, then its own run of 2.5 s: before the leader's
    # answer would have come for it, after the timeout.
    assert code == 200 and run_of(body) == 2, h
    assert 1.0 <= took < 2.5 + 1.0 + 1.0, took


@pytest.fixture(scope="module")
def grace_suite(tmp_path_factory):
    yield from suite_with(tmp_path_factory, 'cache: { grace = "30s"; debug = true; };\n')


def test_grace_serves_stale_unless_the_page_forbids_it(grace_suite):
    s = grace_suite
    graced = page(new_id(), "Cache-Control: max-age=1")
    strict = page(new_id(), "Cache-Control: max-age=1, must-revalidate")
    stored(s, graced)
    stored(s, strict)
    assert wait_for(lambda: "ttl=-" in get(s, graced)[1]["cache-status"], timeout=5)
    # cache.debug: Cache-Status says the key (RFC 9211).
    assert f'; key="http://127.0.0.1:{s.http}/cached.php?' in get(s, graced)[1]["cache-status"]
    # The strict page, stored a moment later, expires a moment later: its
    # first answer that is not a hit.
    def past_hit():
        r = get(s, strict)
        return None if r[1]["cache-status"].startswith("Velocity; hit") else r
    code, h, body = wait_for(past_hit, timeout=5)
    assert h["cache-status"].startswith("Velocity; fwd=stale; stored; key=") and run_of(body) == 2


def test_the_purge_api_is_off_without_a_token(flight_suite):
    s = flight_suite
    code, _, body = __import__("conftest").curl("-X", "PURGE", "-H", "Authorization: Bearer x",
                                                 f"http://127.0.0.1:{s.admin}/")
    assert code == 403 and b"cache.purge_token" in body


def test_kill_9_during_writes_and_purges_leaves_the_cache_whole(make_suite, tmp_path):
    """vc-cache killed twice and the front once, while a load stores new
    pages (evicting: max_size is small) and purges by tag run: the
    databases still agree (vc cache check walks them), and the suite
    stores and serves again."""
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text('cache: { max_size = "2M"; };\n')
    s = make_suite(conf=str(conf), args=["--workers", "2"]).start()
    script = tmp_path / "pages.lua"
    script.write_text(
        'local n = 0\n'
        'request = function()\n'
        '  n = n + 1\n'
        '  return wrk.format("GET", "/cached.php?id=kill9&n=" .. n .. "&pad=3000"\n'
        '    .. "&h[]=Cache-Control:%20max-age=60&h[]=xkey:%20t" .. (n % 10))\n'
        'end\n')
    load = {}
    loader = threading.Thread(target=lambda: load.update(r=__import__("conftest").wrk(
        s.url("/"), seconds=6, conns=8, script=str(script))))
    loader.start()
    stop = threading.Event()
    purges = []

    def purger():
        i = 0
        while not stop.is_set():
            args = ["cache", "purge", "--tag", f"t{i % 10}"] + (["--soft"] if i % 3 == 0 else [])
            # A purge whose vc-cache is killed under it fails after the
            # CLI's own wait for long verbs (30 s): let it say so.
            purges.append(s.vc(*args, timeout=45).returncode)
            i += 1

    p = threading.Thread(target=purger)
    p.start()
    try:
        for daemon in ("vc-cache", "vc-cache", "vc-front"):
            assert wait_for(lambda: s.vc("cache", "stats").returncode == 0 and
                            json.loads(s.vc("cache", "stats", "--json").stdout)["stored"] > 50, timeout=10)
            pid = s.daemon_pid(daemon)
            os.kill(pid, signal.SIGKILL)
            assert wait_for(lambda: s.vc("status").returncode == 0 and s.daemon_pid(daemon) != pid, timeout=15)
    finally:
        loader.join()
        # Purges work again once vc-cache is back. One sent while it was
        # dead waits out the CLI's 30 s; on a loaded machine the load's 6 s
        # could end with only two done before it: purge on until three
        # have succeeded, within a bound.
        enough = wait_for(lambda: purges.count(0) >= 3, timeout=45)
        stop.set()
        p.join()
    assert load["r"][0] > 500, load
    assert enough, purges
    r = s.vc("cache", "check")
    assert r.returncode == 0 and "consistent" in r.stdout, r.stdout + r.stderr
    path = page(new_id(), "Cache-Control: max-age=60")
    stored(s, path)
    assert run_of(get(s, path)[2]) == 1


def test_eviction_spares_what_is_used(make_suite, tmp_path):
    """Past max_size the least recently used entries go: a page hit lately
    outlives one stored right after it and never hit."""
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text('cache: { max_size = "1M"; };\n')
    s = make_suite(conf=str(conf), args=["--workers", "2"]).start()

    def new_page():
        return page(new_id(), "Cache-Control: max-age=600", pad=25000)

    used, unused = new_page(), new_page()
    stored(s, used)
    stored(s, unused)
    # Eight newer pages put both in the older half of the eviction order:
    # a hit on the used one is reported (within a second) and moves it to
    # the recent end.
    for _ in range(8):
        stored(s, new_page())
    assert get(s, used)[1]["cache-status"].startswith("Velocity; hit")
    assert wait_for(lambda: metric(s, "vc_front_cache_touches_total") > 0, timeout=5)
    # Then pages until the first eviction (1M holds about 40): the oldest
    # go, about a tenth, the unused page first.
    n = 0
    while json.loads(s.vc("cache", "stats", "--json").stdout)["evicted"] == 0:
        n += 1
        assert n < 80, "nothing evicted"
        stored(s, new_page())
    assert get(s, unused)[1]["cache-status"] == "Velocity; fwd=uri-miss; stored"
    code, h, body = get(s, used)
    assert h["cache-status"].startswith("Velocity; hit") and run_of(body) == 1


def test_waiters_for_another_variant_get_their_own(flight_suite):
    """Misses for a cold page that turns out to vary: a waiter whose
    headers pick another variant than the first request's goes to PHP for
    its own; one that picks the same gets the first's answer."""
    s, id_ = flight_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", "Vary: X-Lang", ms=300)
    out = {}

    def one(name, lang):
        out[name] = get(s, path, "-H", f"X-Lang: {lang}")

    before = metric(s, "vc_front_cache_misses_total")
    first = threading.Thread(target=one, args=("first", "fr"))
    first.start()
    # The first is at PHP (its miss counted once its flight is up): the
    # others wait for it.
    assert wait_for(lambda: metric(s, "vc_front_cache_misses_total") > before, timeout=5)
    others = [threading.Thread(target=one, args=(n, lang)) for n, lang in (("same", "fr"), ("other", "de"))]
    for t in others:
        t.start()
    for t in [first] + others:
        t.join(10)
    assert run_of(out["first"][2]) == 1 and run_of(out["same"][2]) == 1
    assert out["same"][1]["cache-status"] == "Velocity; fwd=uri-miss; collapsed"
    assert run_of(out["other"][2]) == 2 and out["other"][1]["cache-status"] == "Velocity; fwd=uri-miss; stored"


def test_a_stale_entry_is_revalidated_with_php(flight_suite):
    """Past its lifetime, PHP is asked with the entry's ETag: its 304 makes
    the stored page good again (the client gets the page, not the 304);
    the background refresh does the same. A client's own If-None-Match is
    PHP's to answer."""
    s, id_ = flight_suite, new_id()
    path = page(id_, "Cache-Control: max-age=1", etag="v1")
    stored(s, path)
    before = metric(s, "vc_front_cache_revalidated_total")

    def past_hit():
        r = get(s, path)
        return None if r[1]["cache-status"].startswith("Velocity; hit") else r
    code, h, body = wait_for(past_hit, timeout=5)
    assert code == 200 and run_of(body) == 1, (code, h, body)
    assert h["cache-status"] == "Velocity; fwd=stale; fwd-status=304; stored" and h["etag"] == '"v1"'
    assert metric(s, "vc_front_cache_revalidated_total") == before + 1
    code, h, body = get(s, path)
    assert h["cache-status"].startswith("Velocity; hit") and run_of(body) == 1
    # A client that has the page: once the entry is stale, its own
    # If-None-Match goes to PHP, whose 304 is for it.
    def php_304():
        code, h, _ = get(s, path, "-H", 'If-None-Match: "v1"')
        return code == 304 and h["cache-status"] == "Velocity; fwd=stale; detail=status"
    assert wait_for(php_304, timeout=5)
    # In the background (stale-while-revalidate): the refresh is a 304 too.
    swr = page(new_id(), "Cache-Control: max-age=1, stale-while-revalidate=60", etag="w1")
    stored(s, swr)
    assert wait_for(lambda: "stale-while-revalidate" in get(s, swr)[1]["cache-status"], timeout=5)
    assert wait_for(lambda: metric(s, "vc_front_cache_revalidated_total") >= before + 2, timeout=5)
    assert wait_for(lambda: re.fullmatch(r"Velocity; hit; ttl=\d+", get(s, swr)[1]["cache-status"]), timeout=5)
    assert run_of(get(s, swr)[2]) == 1


def test_two_front_processes_send_one_miss_between_them(make_suite, tmp_path):
    """Claims: with two front processes sharing the port (the kernel
    spreads connections between them), concurrent misses for a cold page
    still make one PHP run: the front that did not claim it waits for the
    other's answer to land in the cache."""
    from test_04_php_pool import front_requests
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text("front: { processes = 2; };\n")
    s = make_suite(conf=str(conf), args=["--workers", "2"]).start()
    before = front_requests(s)
    path = page(new_id(), "Cache-Control: max-age=60", ms=300)
    answers = together(s, path, 200)
    after = front_requests(s)
    assert all(after[d] > before.get(d, 0) for d in after) and len(after) == 2, (before, after)
    assert {code for code, _, _ in answers} == {200}
    assert {run_of(body) for _, _, body in answers} == {1}
