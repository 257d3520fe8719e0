"""The response cache (docs/CACHE.md): vc-cache stores what PHP's answers
say may be stored, the front serves hits from LMDB, `vc cache purge`
removes them. PHP's runs are counted by the script itself (cached.php:
"run N of ID"), so a hit is an answer PHP did not make."""
import json
import os
import re
import signal
import subprocess
import uuid
from urllib.parse import quote

import pytest
import requests

from conftest import curl
from test_04_php_pool import wait_for


TOKEN = "t0ken-for-the-purge-api"


def page(id_, *headers, **params):
    q = [f"id={id_}"] + [f"h[]={quote(h)}" for h in headers] + [f"{k}={quote(str(v))}" for k, v in params.items()]
    return "/cached.php?" + "&".join(q)


def new_id():
    return uuid.uuid4().hex[:12]


def get(s, path, *args, method=None):
    extra = ["-X", method] if method else []
    code, head, body = curl(*extra, *args, s.url(path))
    return code, {k.lower(): v for k, v in re.findall(r"^([^:\r\n]+): ?(.*?)\r?$", head, re.M)}, body


def run_of(body):
    m = re.match(rb"run (\d+) of", body)
    assert m, body
    return int(m.group(1))


@pytest.fixture(scope="module")
def cache_suite(tmp_path_factory):
    from conftest import Suite
    conf = tmp_path_factory.mktemp("etc")
    (conf / "vc.conf").write_text(f'cache: {{ max_object = "64k"; purge_token = "{TOKEN}"; }};\n'
                                  'front: { access_log = "json"; };\n')
    s = Suite(conf=str(conf), args=["--workers", "2"]).start()
    yield s
    s.stop()
    s.cleanup()


def test_a_fresh_answer_is_stored_once_and_served_from_the_cache(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: public, max-age=60")
    code, h, body = get(s, path)
    assert code == 200 and run_of(body) == 1
    assert h["cache-status"] == "Velocity; fwd=uri-miss; stored"
    # Stored once vc-cache has taken the offer: poll for the hit.
    assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    for _ in range(5):
        code, h, body = get(s, path)
        assert code == 200 and run_of(body) == 1, body
        assert re.fullmatch(r"Velocity; hit; ttl=(\d+)", h["cache-status"])
        assert int(h["age"]) >= 0 and h["etag"].startswith('W/"vc-')
        assert h["cache-control"] == "public, max-age=60" and h["content-type"].startswith("text/html")
    # Over HTTP/2 as well.
    code, h2, body = get(s, path, "--http2-prior-knowledge")
    assert code == 200 and run_of(body) == 1 and h2["cache-status"].startswith("Velocity; hit")
    # The front counts its hits.
    metrics = requests.get(f"http://127.0.0.1:{s.admin}/metrics", timeout=5).text
    assert int(re.search(r"^vc_front_cache_hits_total\S* (\d+)", metrics, re.M).group(1)) >= 6


@pytest.mark.parametrize("headers,params,why", [
    (["Cache-Control: max-age=60"], {"cookie": 1}, "set-cookie"),
    (["Cache-Control: private, max-age=60"], {}, "private"),
    (["Cache-Control: max-age=60, no-store"], {}, "private"),
    (["Cache-Control: no-cache, max-age=60"], {}, "no-cache"),
    (["Cache-Control: max-age=60", "Vary: *"], {}, "vary"),
    (["Cache-Control: max-age=60", "Vary: a, b, c, d, e, f, g, h, i"], {}, "vary"),
    ([], {}, "no-lifetime"),
    (["Cache-Control: max-age=0"], {}, "expired"),
    # Any final status with its own lifetime is stored (RFC 9111 3:
    # test_31_cache_rfc.py), but a partial one.
    (["Cache-Control: max-age=60"], {"status": 206}, "status"),
    (["Velocity-Cache-Control: no-store", "Cache-Control: max-age=60"], {}, "no-store"),
])
def test_what_must_not_be_stored_is_not(cache_suite, headers, params, why):
    s, id_ = cache_suite, new_id()
    path = page(id_, *headers, **params)
    for n in (1, 2, 3):
        code, h, body = get(s, path)
        assert run_of(body) == n, (n, h)
        assert h["cache-status"] == f"Velocity; fwd=uri-miss; detail={why}", h


@pytest.mark.parametrize("args,why", [
    (["-H", "Authorization: Basic dXNlcjpwYXNz"], "authorization"),
    (["-H", "Cookie: theme=dark; PHPSESSID=abc123"], "session"),
    # The frameworks' and CMSs' own session and sign-in cookies.
    (["-H", "Cookie: theme=dark; laravel_session=eyJpdiI6"], "session"),
    (["-H", "Cookie: shop_session=eyJpdiI6; XSRF-TOKEN=x"], "session"),
    (["-H", "Cookie: wordpress_logged_in_0123abcd=admin%7C1"], "session"),
    (["-H", "Cookie: SESS5f4dcc3b5aa765d61d8327deb882cf99=x"], "session"),
    (["-H", "Cookie: 5f4dcc3b5aa765d61d8327deb882cf99=j1"], "session"),
    (["-H", "Cookie: CAKEPHP=abc"], "session"),
    # X-Forwarded-Host, X-Original-URL and kin: from a client they never
    # reach PHP, and from a trusted proxy they bypass (test_30_trust.py).
])
def test_requests_that_bypass_the_cache_neither_read_nor_store(cache_suite, args, why):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60")
    # Stored by a plain request first: the bypassing one must not read it.
    get(s, path)
    assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    for _ in range(2):
        code, h, body = get(s, path, *args)
        assert h["cache-status"] == f"Velocity; fwd=bypass; detail={why}", h
        assert run_of(body) >= 2
    # A cookie that is not a session's is not a reason.
    code, h, body = get(s, path, "-H", "Cookie: theme=dark; NOTPHPSESSID=1")
    assert h["cache-status"].startswith("Velocity; hit")


def test_a_page_that_varies_is_stored_once_per_variant(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", "Vary: X-Lang, Accept-Encoding")
    fr, de = ["-H", "X-Lang: fr"], ["-H", "X-Lang:  de "]
    code, h, body = get(s, path, *fr)
    assert h["cache-status"] == "Velocity; fwd=uri-miss; stored" and run_of(body) == 1
    assert wait_for(lambda: get(s, path, *fr)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    # Another value, or none: variants of their own, found missing.
    code, h, body = get(s, path, *de)
    assert h["cache-status"] == "Velocity; fwd=vary-miss; stored" and run_of(body) == 2
    code, h, body = get(s, path)
    assert h["cache-status"] == "Velocity; fwd=vary-miss; stored" and run_of(body) == 3
    assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    assert wait_for(lambda: get(s, path, "-H", "X-Lang: de")[1]["cache-status"].startswith("Velocity; hit"),
                    timeout=5)
    for args, run in ((fr, 1), (["-H", "x-lang: de"], 2), ([], 3)):
        code, h, body = get(s, path, *args)
        assert h["cache-status"].startswith("Velocity; hit") and run_of(body) == run, (args, h)
        assert h["vary"] == "X-Lang, Accept-Encoding"
    # A purge of the URL takes every variant.
    n, _ = purge(s, "--url", s.url(path))
    assert n == 4  # the page's marker and its three variants
    code, h, body = get(s, path, *fr)
    assert h["cache-status"] == "Velocity; fwd=uri-miss; stored" and run_of(body) == 4


def test_ranges_are_answered_from_a_stored_body(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", "Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT", pad=100)
    # Not stored yet: PHP gets the Range, and its answer is not stored.
    code, h, body = get(s, path, "-H", "Range: bytes=0-3")
    assert h["cache-status"] == "Velocity; fwd=bypass; detail=range" and run_of(body) == 1
    stored(s, path)
    whole = get(s, path)[2]
    size = len(whole)
    code, h, body = get(s, path, "-H", "Range: bytes=0-3")
    assert code == 206 and body == whole[:4] and h["content-range"] == f"bytes 0-3/{size}", h
    assert h["cache-status"].startswith("Velocity; hit")
    code, h, body = get(s, path, "-H", "Range: bytes=-5")
    assert code == 206 and body == whole[-5:] and h["content-range"] == f"bytes {size - 5}-{size - 1}/{size}"
    code, h, body = get(s, path, "-H", "Range: bytes=10-")
    assert code == 206 and body == whole[10:]
    code, h, body = get(s, path, "-H", f"Range: bytes={size}-")
    assert code == 416 and h["content-range"] == f"bytes */{size}" and body == b""
    # Several ranges, or a copy that is not this one: the whole body.
    code, h, body = get(s, path, "-H", "Range: bytes=0-1,5-6")
    assert code == 200 and body == whole
    code, h, body = get(s, path, "-H", "Range: bytes=0-3", "-H", "If-Range: Mon, 30 Nov 2026 10:00:00 GMT")
    assert code == 200 and body == whole
    code, h, body = get(s, path, "-H", "Range: bytes=0-3", "-H", "If-Range: Tue, 01 Dec 2026 10:00:00 GMT")
    assert code == 206 and body == whole[:4]
    # The weak ETag the cache made never matches If-Range (a strong
    # comparison).
    etag = get(s, path)[1]["etag"]
    code, h, body = get(s, path, "-H", "Range: bytes=0-3", "-H", f"If-Range: {etag}")
    assert code == 200 and body == whole
    assert run_of(whole) == 2


def test_an_entry_expires_with_its_lifetime(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=1")
    get(s, path)
    assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    # Past its second it is stale: PHP runs again, and the new answer is
    # stored in its place.
    assert wait_for(lambda: get(s, path)[1]["cache-status"] == "Velocity; fwd=stale; stored", timeout=5)
    code, h, body = get(s, path)
    assert run_of(body) >= 2


@pytest.mark.parametrize("headers,ttl", [
    (["Cache-Control: public, max-age=5, s-maxage=100"], 100),
    (["Cache-Control: no-cache", "Surrogate-Control: max-age=200"], 200),
    (["Cache-Control: max-age=0", "Velocity-Cache-Control: max-age=300"], 300),
    (["Expires: Thu, 01 Jan 2099 00:00:00 GMT"], 365 * 86400),
])
def test_the_lifetime_comes_from_the_field_that_targets_us(cache_suite, headers, ttl):
    s, id_ = cache_suite, new_id()
    path = page(id_, *headers, "Surrogate-Key: t1 t2")
    code, h, body = get(s, path)
    # Ours never reach the client; Cache-Control is the client's.
    for name in ("velocity-cache-control", "surrogate-control", "surrogate-key"):
        assert name not in h, h
    assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    code, h, body = get(s, path)
    got = int(h["cache-status"].rsplit("=", 1)[1])
    assert ttl - 5 <= got <= ttl, h
    for name in ("velocity-cache-control", "surrogate-control", "surrogate-key"):
        assert name not in h, h


def test_a_client_that_has_the_entry_gets_304(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", "Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT")
    get(s, path)
    assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    code, h, body = get(s, path)
    etag = h["etag"]
    code, h304, body = get(s, path, "-H", f"If-None-Match: {etag}")
    assert code == 304 and body == b"" and h304["etag"] == etag and "content-type" not in h304
    code, _, body = get(s, path, "-H", 'If-None-Match: "other"')
    assert code == 200 and run_of(body) == 1
    code, _, _ = get(s, path, "-H", "If-Modified-Since: Tue, 01 Dec 2026 10:00:00 GMT")
    assert code == 304
    code, _, _ = get(s, path, "-H", "If-Modified-Since: Mon, 30 Nov 2026 10:00:00 GMT")
    assert code == 200


def head(s, path):
    """A HEAD by curl (the same bytes of the URL as get's: the key is the
    path as sent)."""
    r = subprocess.run(["curl", "-sS", "-I", "--max-time", "10", s.url(path)], capture_output=True, timeout=15)
    lines = r.stdout.decode("latin-1").split("\r\n")
    return int(lines[0].split()[1]), {k.lower(): v for k, _, v in (l.partition(": ") for l in lines[1:] if l)}


def test_head_never_stores_and_reads_a_stored_get(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60")
    code, h = head(s, path)
    assert h["cache-status"] == "Velocity; fwd=uri-miss; detail=head"
    code, h, body = get(s, path)
    assert run_of(body) == 2 and h["cache-status"] == "Velocity; fwd=uri-miss; stored"
    assert wait_for(lambda: head(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    code, h = head(s, path)
    assert code == 200 and int(h["content-length"]) == len(body)


def test_the_key_ignores_parameter_order_and_trackers(cache_suite):
    s, id_ = cache_suite, new_id()
    get(s, page(id_, "Cache-Control: max-age=60") + "&b=2&a=1")
    other = f"/cached.php?utm_source=news&a=1&id={id_}&fbclid=x&h[]={quote('Cache-Control: max-age=60')}&b=2"
    assert wait_for(lambda: get(s, other)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    code, h, body = get(s, page(id_, "Cache-Control: max-age=60") + "&b=3&a=1")
    assert h["cache-status"].startswith("Velocity; fwd=uri-miss")


def test_an_odd_host_reads_but_never_stores(cache_suite):
    """A Host in another case shares the key of its plain form; what PHP
    makes of it (this page prints its Host) is never stored."""
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60")
    code, h, body = get(s, path, "-H", f"Host: LocalHost:{s.http}")
    assert h["cache-status"] == "Velocity; fwd=uri-miss; detail=host-form" and b"host=LocalHost" in body
    code, h, body = get(s, path, "-H", f"Host: localhost:{s.http}")
    assert h["cache-status"] == "Velocity; fwd=uri-miss; stored"
    assert wait_for(lambda: get(s, path, "-H", f"Host: LOCALHOST:{s.http}")[1]["cache-status"].startswith(
        "Velocity; hit"), timeout=5)
    code, h, body = get(s, path, "-H", f"Host: LOCALHOST:{s.http}")
    assert b"host=localhost:" in body


def test_an_answer_over_max_object_is_not_stored(cache_suite):
    """cache.max_object is 64k here."""
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", pad=100000)
    for n in (1, 2):
        code, h, body = get(s, path)
        assert run_of(body) == n and len(body) > 100000
        # Streamed: its length was not known when the headers left.
        assert h["cache-status"] == "Velocity; fwd=uri-miss", h
    small = page(id_, "Cache-Control: max-age=60", pad=1000)
    stored(s, small)


def purge(s, *args):
    r = s.vc("cache", "purge", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.match(r"purged (\d+) entr(?:y|ies) \(purge (\S+)\)", r.stdout)
    assert m, r.stdout
    return int(m.group(1)), m.group(2)


def stored(s, path):
    get(s, path)
    assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)


@pytest.mark.parametrize("kind", ["tag", "url", "prefix", "all"])
def test_a_purge_leaves_nothing_served(cache_suite, kind):
    s, id_, other = cache_suite, new_id(), new_id()
    path = page(id_, "Cache-Control: max-age=60", f"Surrogate-Key: post-{id_} home")
    kept = page(other, "Cache-Control: max-age=60", f"Cache-Tag: post-{other}")
    stored(s, path)
    stored(s, kept)
    # A prefix is of the key: scheme, host and path, then the query; the
    # path's prefix takes every query.
    value = {"tag": ["--tag", f"post-{id_}"],
             "url": ["--url", s.url(path)],
             "prefix": ["--prefix", s.url("/cached.php")],
             "all": ["--all"]}[kind]
    n, pid = purge(s, *value)
    assert n >= 1
    # Once vc cache purge has returned, no request gets the purged answer.
    code, h, body = get(s, path)
    assert run_of(body) == 2 and h["cache-status"] == "Velocity; fwd=uri-miss; stored", h
    if kind in ("tag", "url"):
        code, h, body = get(s, kept)
        assert run_of(body) == 1 and h["cache-status"].startswith("Velocity; hit")
    def this_one(events):
        return any(e["fields"]["id"] == pid and e["fields"]["kind"] == kind for e in events)
    events = s.events_of("cache.purged", this_one)
    assert this_one(events), events


def test_a_soft_purge_keeps_the_entry_stale(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", f"xkey: soft-{id_}")
    stored(s, path)
    n, _ = purge(s, "--tag", f"soft-{id_}", "--soft")
    assert n == 1
    # Stale: served while one request of the front's own refreshes it.
    code, h, body = get(s, path)
    assert re.fullmatch(r"Velocity; hit; ttl=-\d+; detail=stale-while-revalidate", h["cache-status"]), h
    assert run_of(body) == 1
    assert wait_for(lambda: run_of(get(s, path)[2]) == 2, timeout=5)
    code, h, body = get(s, path)
    assert h["cache-status"].startswith("Velocity; hit; ttl=") and run_of(body) == 2


def test_a_soft_purge_is_a_mark_then_applied_to_each_entry(cache_suite):
    """A soft purge of a tag commits as one row (vc_cache.h); vc-cache then
    makes each entry stale itself, in the background, and drops the row:
    what was purged stays stale, what was stored since stays fresh."""
    s, a, b = cache_suite, new_id(), new_id()
    tag = f"mark-{a}"
    old = page(a, "Cache-Control: max-age=60", f"xkey: {tag}")
    later = page(b, "Cache-Control: max-age=60", f"xkey: {tag}")
    stored(s, old)
    purge(s, "--tag", tag, "--soft")
    stored(s, later)  # after the mark: not its
    assert wait_for(lambda: json.loads(s.vc("cache", "stats", "--json").stdout)["soft_pending"] == 0, timeout=10)
    assert "stale-while-revalidate" in get(s, old)[1]["cache-status"]
    code, h, body = get(s, later)
    assert h["cache-status"].startswith("Velocity; hit; ttl=") and "ttl=-" not in h["cache-status"]


def test_purge_refuses_what_it_cannot_read(cache_suite):
    r = cache_suite.vc("cache", "purge", "--url", "not a url")
    assert r.returncode == 1 and "expected a URL" in r.stderr
    r = cache_suite.vc("cache", "purge")
    assert r.returncode == 2 and "usage" in r.stderr


def test_stats_count_entries_and_hits(cache_suite):
    s, id_ = cache_suite, new_id()
    stored(s, page(id_, "Cache-Control: max-age=60"))
    r = s.vc("cache", "stats", "--json", check=True)
    st = json.loads(r.stdout)
    assert st["entries"] >= 1 and st["bytes"] > 0 and st["hits"] >= 1 and 0 < st["hit_ratio"] <= 1, st
    assert all(k in st for k in ("stale", "collapsed", "refreshes", "misses", "bypass")), st
    assert st["stored"] >= 1 and "invalidated" in st and "purged" in st, st


def test_the_cache_outlives_its_daemon_and_the_front(make_suite):
    """Entries live in LMDB: a killed vc-cache, or a replaced front, loses
    none, and hits go on while vc-cache is away (fronts read LMDB)."""
    s = make_suite(args=["--workers", "1"]).start()
    id_ = new_id()
    path = page(id_, "Cache-Control: max-age=60")
    stored(s, path)
    pid = s.daemon_pid("vc-cache")
    os.kill(pid, signal.SIGKILL)
    code, h, body = get(s, path)
    assert run_of(body) == 1 and h["cache-status"].startswith("Velocity; hit")
    assert wait_for(lambda: s.vc("status").returncode == 0 and s.daemon_pid("vc-cache") != pid, timeout=10)
    assert s.vc("restart", "front").returncode == 0
    code, h, body = get(s, path)
    assert run_of(body) == 1 and h["cache-status"].startswith("Velocity; hit")
    # And it stores again.
    id2 = new_id()
    stored(s, page(id2, "Cache-Control: max-age=60"))


def test_cache_enabled_false_turns_it_off(make_suite, tmp_path):
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text("cache: { enabled = false; };\n")
    s = make_suite(conf=str(conf), args=["--workers", "1"]).start()
    id_ = new_id()
    path = page(id_, "Cache-Control: max-age=60")
    for n in (1, 2, 3):
        code, h, body = get(s, path)
        assert run_of(body) == n and "cache-status" not in h


def test_a_successful_unsafe_method_drops_the_entry(cache_suite):
    """RFC 9111 4.4: a POST, PUT, PATCH or DELETE that did not fail drops
    what is stored for its URL, whoever sent it; a failed one does not."""
    s, id_, other = cache_suite, new_id(), new_id()
    path = page(id_, "Cache-Control: max-age=60")
    failing = page(other, "Cache-Control: max-age=60")
    stored(s, path)
    stored(s, failing)
    code, _, _ = get(s, failing, "-d", "status=500")
    assert code == 500
    # With a session (it bypasses reading, not invalidating).
    code, _, body = get(s, path, "-H", "Cookie: PHPSESSID=abc", "-d", "x=1")
    assert code == 200 and run_of(body) == 2
    assert wait_for(lambda: not get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    # Invalidations leave a front in order: the failed POST, sent first,
    # would have taken effect by now.
    code, h, body = get(s, failing)
    assert h["cache-status"].startswith("Velocity; hit") and run_of(body) == 1
    for method in ("PUT", "DELETE", "PATCH"):
        stored(s, path)
        get(s, path, method=method)
        assert wait_for(lambda: not get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5), method


def test_an_unsafe_method_drops_what_its_answer_names_on_its_own_host(cache_suite):
    """RFC 9111 4.4: the URLs in the answer's Location and Content-Location
    go too, but only on the request's own host."""
    s = cache_suite
    named, located, elsewhere = (page(new_id(), "Cache-Control: max-age=60") for _ in range(3))
    for p in (named, located, elsewhere):
        stored(s, p)
    host = s.url("/").split("//")[1].rstrip("/")
    form = page(new_id(), f"Content-Location: {named}", f"Location: http://{host.upper()}{located}",
                f"Location: http://other.example{elsewhere}")
    code, _, _ = get(s, form, "-d", "x=1")
    assert code in (200, 302)
    for p in (named, located):
        assert wait_for(lambda: not get(s, p)[1]["cache-status"].startswith("Velocity; hit"), timeout=5), p
    # Invalidations leave a front in order: that one's would be done.
    code, h, body = get(s, elsewhere)
    assert h["cache-status"].startswith("Velocity; hit") and run_of(body) == 1


def api_purge(s, path="/", *headers, token=TOKEN):
    """The admin listener's PURGE API: (status, JSON or text)."""
    args = ["-X", "PURGE"] + [a for h in headers for a in ("-H", h)]
    if token:
        args += ["-H", f"Authorization: Bearer {token}"]
    code, _, body = curl(*args, f"http://127.0.0.1:{s.admin}{path}")
    try:
        return code, json.loads(body)
    except ValueError:
        return code, body.decode()


def test_the_purge_api_on_the_admin_listener(cache_suite):
    s = cache_suite
    host = s.url("/").split("//")[1].rstrip("/")
    tagged, by_url, soft = new_id(), new_id(), new_id()
    p_tag = page(tagged, "Cache-Control: max-age=60", f"xkey: api-{tagged} other-{tagged}")
    p_url = page(by_url, "Cache-Control: max-age=60")
    p_soft = page(soft, "Cache-Control: max-age=60", f"Cache-Tag: api-{soft}")
    for p in (p_tag, p_url, p_soft):
        stored(s, p)
    # Without the token, or with another: refused, nothing purged.
    assert api_purge(s, "/", f"xkey-purge: api-{tagged}", token=None)[0] == 401
    assert api_purge(s, "/", f"xkey-purge: api-{tagged}", token="wrong")[0] == 401
    assert get(s, p_tag)[1]["cache-status"].startswith("Velocity; hit")
    # By tags, as xkey users send them: one entry had both.
    code, r = api_purge(s, "/", f"xkey-purge: api-{tagged} other-{tagged}")
    assert code == 200 and r == {"ok": True, "entries": 1}, r
    code, h, body = get(s, p_tag)
    assert h["cache-status"] == "Velocity; fwd=uri-miss; stored" and run_of(body) == 2
    # By URL: the path on the host the Host header names.
    code, r = api_purge(s, p_url, f"Host: {host}")
    assert code == 200 and r["entries"] == 1, r
    code, h, body = get(s, p_url)
    assert h["cache-status"] == "Velocity; fwd=uri-miss; stored" and run_of(body) == 2
    # Soft: stale, served while refreshed.
    code, r = api_purge(s, "/", f"xkey-softpurge: api-{soft}")
    assert code == 200 and r["entries"] == 1, r
    assert "detail=stale-while-revalidate" in get(s, p_soft)[1]["cache-status"]
    # Malformed: a clear 400.
    code, body = api_purge(s, "/", "Velocity-Purge: everything")
    assert code == 400 and "expected all or prefix" in body
    # Other methods still get /metrics (or its 404).
    assert requests.get(f"http://127.0.0.1:{s.admin}/metrics", timeout=5).status_code == 200


def test_php_purges_tags_of_its_own_hosts_only(cache_suite):
    """vc_cache_purge_tags() in PHP: the answer's head carries the tags
    (never to the client), and only the site's own hosts' entries go."""
    s, id_ = cache_suite, new_id()
    tag = f"php-{id_}"
    path = page(id_, "Cache-Control: max-age=60", f"Surrogate-Key: {tag}")
    other_host = ["-H", f"Host: localhost:{s.http}"]
    stored(s, path)
    get(s, path, *other_host)
    assert wait_for(lambda: get(s, path, *other_host)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    other_run = run_of(get(s, path, *other_host)[2])
    code, h, body = get(s, f"/purge.php?tags={tag},unused", "-d", "x=1")
    assert code == 200 and body == b"purged\n"
    assert not any(k.startswith("velocity-purge") for k in h), h
    # Purged for the host that asked, a moment later (it goes with the
    # answer to vc-cache); the other host's entry is not this site's to purge.
    assert wait_for(lambda: get(s, path)[1]["cache-status"] == "Velocity; fwd=uri-miss; stored", timeout=5)
    code, h, body = get(s, path, *other_host)
    assert h["cache-status"].startswith("Velocity; hit") and run_of(body) == other_run
    # Soft, from a GET.
    stored(s, path)
    assert get(s, f"/purge.php?tags={tag}&soft=1")[2] == b"purged\n"
    assert wait_for(lambda: "stale-while-revalidate" in get(s, path)[1]["cache-status"], timeout=5)
    def by_php(events):
        return any(e["fields"].get("by") == "php" and e["fields"]["value"] == tag for e in events)
    events = s.events_of("cache.purged", by_php)
    assert by_php(events), events
    # Too late (after output), or not a tag: refused, and said so.
    assert get(s, f"/purge.php?tags={tag}&late=1")[2] == b"output first\nrefused\n"
    code, h, body = get(s, "/purge.php?tags=a%20b")
    assert body.startswith(b"ValueError: vc_cache_purge_tags(): Argument #1 ($tags) must hold tags"), body


def test_a_prefix_purge_takes_both_schemes(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60")
    stored(s, path)
    # The same host over https (keys keep a port that is not the scheme's
    # default): the prefix names both.
    host = ["-H", f"Host: 127.0.0.1:{s.http}"]
    code, _, _ = curl("-k", *host, s.surl(path))
    assert code == 200
    assert wait_for(lambda: "velocity; hit" in curl("-k", *host, s.surl(path))[1].lower(), timeout=5)
    n, _ = purge(s, "--prefix", s.url("/cached.php"))
    assert n >= 2
    assert get(s, path)[1]["cache-status"] == "Velocity; fwd=uri-miss; stored"


def test_the_access_log_says_how_the_cache_took_each_request(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60")
    stored(s, path)
    get(s, path)

    def lines():
        with open(os.path.join(s.data, "log", "access.log")) as f:
            return [json.loads(x) for x in f.read().splitlines() if id_ in x]

    assert wait_for(lambda: any(e["cache"].startswith("Velocity; hit") for e in lines()), timeout=5)
    caches = [e["cache"] for e in lines()]
    assert caches[0] == "Velocity; fwd=uri-miss; stored", caches
    code, _, _ = curl(s.url("/hello.php"))
    assert wait_for(lambda: any(json.loads(x)["uri"] == "/hello.php" and json.loads(x)["cache"] ==
                                "Velocity; fwd=uri-miss; detail=no-lifetime"
                                for x in open(os.path.join(s.data, "log", "access.log")).read().splitlines()),
                    timeout=5)


def test_show_says_what_is_stored_for_a_url(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", "Vary: X-Lang", f"xkey: show-{id_}")
    r = s.vc("cache", "show", s.url(path))
    assert r.returncode == 1 and "nothing stored" in r.stdout
    get(s, path, "-H", "X-Lang: fr")
    assert wait_for(lambda: s.vc("cache", "show", s.url(path)).returncode == 0, timeout=5)
    r = s.vc("cache", "show", s.url(path) + "&utm_source=x", "--json")
    shown = json.loads(r.stdout)
    assert [e["kind"] for e in shown] == ["marker", "variant"], shown
    assert shown[0]["vary"] == "x-lang" and shown[1]["key"].endswith(" | fr | ")
    v = shown[1]
    assert v["status"] == "200" and v["tags"] == f"show-{id_}" and 0 < int(v["fresh_s"]) <= 60
    r = s.vc("cache", "show", "not a url")
    assert r.returncode == 1 and "expected a URL" in r.stderr


def test_a_sites_rules_turn_paths_off_give_and_cap_lifetimes(make_suite, tmp_path):
    """site.cache_rules: "/x/ off" skips the cache, ttl= gives answers
    that say nothing a lifetime, max_ttl= caps what they say; the longest
    prefix decides. A bad rule is refused with its file and line."""
    root = tmp_path / "root"
    for d in ("api", "news", "news/live", "open"):
        (root / d).mkdir(parents=True)
        (root / d / "cached.php").write_text(open(os.path.join(os.path.dirname(__file__), "fixtures", "docroot",
                                                               "cached.php")).read())
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "sites-enabled" / "s.conf").write_text(
        f'site: {{ root = "{root}"; default = true;\n'
        '  cache_rules = ["/api/ off", "/news/ ttl=60s max_ttl=120s", "/news/live/ max_ttl=0s",\n'
        '                 "/open/ sessions"]; };\n')
    s = make_suite(conf=str(conf), root=str(root)).start()
    api = "/api" + page(new_id(), "Cache-Control: max-age=60")
    code, h, body = get(s, api)
    assert h["cache-status"] == "Velocity; fwd=bypass; detail=rule"
    silent = "/news" + page(new_id())  # says nothing about caching
    code, h, body = get(s, silent)
    assert h["cache-status"] == "Velocity; fwd=uri-miss; stored"
    assert wait_for(lambda: re.fullmatch(r"Velocity; hit; ttl=(5\d|60)", get(s, silent)[1]["cache-status"]), timeout=5)
    long_lived = "/news" + page(new_id(), "Cache-Control: max-age=86400")
    stored(s, long_lived)
    assert 100 <= int(re.search(r"ttl=(\d+)", get(s, long_lived)[1]["cache-status"]).group(1)) <= 120
    live = "/news/live" + page(new_id(), "Cache-Control: max-age=60")
    assert get(s, live)[1]["cache-status"] == "Velocity; fwd=uri-miss; detail=expired"
    # Where the site vouches for it, a session cookie does not bypass.
    opened = "/open" + page(new_id(), "Cache-Control: max-age=60")
    code, h, body = get(s, opened, "-H", "Cookie: PHPSESSID=abc")
    assert h["cache-status"] == "Velocity; fwd=uri-miss; stored"
    # A rule that does not read: configtest says where.
    (conf / "sites-enabled" / "s.conf").write_text(
        f'site: {{ root = "{root}"; default = true;\n  cache_rules = ["/api/ sometimes"]; }};\n')
    r = s.vc("configtest")
    assert r.returncode != 0 and "s.conf:1" in r.stderr and "cache rule" in r.stderr and "sometimes" in r.stderr


def test_warm_fills_the_cache_from_a_sitemap_or_a_list(cache_suite, tmp_path):
    s = cache_suite
    a, b, c = new_id(), new_id(), new_id()
    sitemap = s.url(f"/sitemap.php?index=1&ids={a},{b}&plain={c}")
    r = s.vc("cache", "warm", "--sitemap", sitemap, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout) == {"urls": 3, "stored": 2, "already": 0, "uncacheable": 1, "errors": 0}
    for id_ in (a, b):
        path = "/cached.php?id=" + id_ + "&h[]=" + quote("Cache-Control: max-age=60")
        assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
        assert run_of(get(s, path)[2]) == 1
    # Again: already there. A list, with an error among its lines.
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{s.url('/cached.php?id=' + a + '&h[]=' + quote('Cache-Control: max-age=60'))}\n"
                    f"\n  {s.url('/cached.php?id=' + new_id() + '&status=500')}  \nnot a url\n")
    r = s.vc("cache", "warm", "--list", str(urls))
    assert r.returncode == 1
    assert r.stdout.strip() == "warmed 2 URLs: 0 stored, 1 already there, 0 not cacheable, 1 errors", r.stdout
    # A URL on a name that resolves nowhere: asked of this node all the same.
    other = f"/cached.php?id={new_id()}&h[]=" + quote("Cache-Control: max-age=60")
    urls.write_text(f"http://warm.example:{s.http}{other}\n")
    assert s.vc("cache", "warm", "--list", str(urls)).returncode == 0
    host = ["-H", f"Host: warm.example:{s.http}"]
    assert wait_for(lambda: get(s, other, *host)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    r = s.vc("cache", "warm", "--sitemap", s.url("/hello.php"))
    assert r.returncode == 1 and "is not XML" in r.stderr
    assert s.vc("cache", "warm").returncode == 2


def test_a_tag_too_long_is_left_out_and_said(cache_suite):
    s, id_ = cache_suite, new_id()
    path = page(id_, "Cache-Control: max-age=60", f"xkey: kept-{id_} " + "x" * 200)
    stored(s, path)
    shown = json.loads(s.vc("cache", "show", s.url(path), "--json").stdout)
    assert shown[0]["tags"] == f"kept-{id_}"
    assert wait_for(lambda: "a tag was left out of an answer's tags: longer than 128 bytes" in s.logs(), timeout=5)


def test_a_purge_of_a_site_takes_its_hosts_only(make_suite, tmp_path):
    docroot = os.path.join(os.path.dirname(__file__), "fixtures", "docroot")
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    for name in ("one", "two"):
        (conf / "sites-enabled" / f"{name}.conf").write_text(
            f'site: {{ hosts = ["{name}.test", "www.{name}.test"]; root = "{docroot}"; }};\n')
    # A site with more names than a fixed list held (64, and 4 KiB of them).
    many = [f"shop-{i:03}.a-rather-long-name-for-a-storefront.example" for i in range(150)]
    (conf / "sites-enabled" / "many.conf").write_text(
        "site: { hosts = [" + ", ".join(f'"{h}"' for h in many) + f']; root = "{docroot}"; }};\n')
    s = make_suite(conf=str(conf)).start()
    path = page(new_id(), "Cache-Control: max-age=60")
    hosts = {h: ["-H", f"Host: {h}:{s.http}"] for h in ("one.test", "www.one.test", "two.test")}
    for args in hosts.values():
        get(s, path, *args)
        assert wait_for(lambda: get(s, path, *args)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    n, _ = purge(s, "--site", "one")
    assert n == 2
    assert get(s, path, *hosts["one.test"])[1]["cache-status"] == "Velocity; fwd=uri-miss; stored"
    assert get(s, path, *hosts["www.one.test"])[1]["cache-status"] == "Velocity; fwd=uri-miss; stored"
    assert get(s, path, *hosts["two.test"])[1]["cache-status"].startswith("Velocity; hit")
    r = s.vc("cache", "purge", "--site", "nosuch")
    assert r.returncode == 1 and "no such site" in r.stderr
    for h in (many[0], many[-1]):
        get(s, path, "-H", f"Host: {h}:{s.http}")
        assert wait_for(lambda: get(s, path, "-H", f"Host: {h}:{s.http}")[1]["cache-status"].startswith(
            "Velocity; hit"), timeout=5)
    n, _ = purge(s, "--site", "many")
    assert n == 2
    assert get(s, path, "-H", f"Host: {many[-1]}:{s.http}")[1]["cache-status"] == "Velocity; fwd=uri-miss; stored"


def test_a_purge_from_another_node_delivered_again_is_applied_once(cache_suite):
    """vc-mesh hands vc-cache each purge of another node (replay ORIGIN ID
    ...); the stream may deliver one again (its ack lost with a leader):
    applied once, so a page stored since the first is kept, also after
    vc-cache restarts."""
    s, id_ = cache_suite, new_id()
    tag = f"node-{id_}"
    path = page(id_, "Cache-Control: max-age=60", f"Surrogate-Key: {tag}")
    stored(s, path)
    replay = ["ctl", "vc-cache", "replay", "web9", f"17-{id_}", "tag", tag, "0"]
    r = s.vc(*replay, check=True)
    assert "replayed: 1" in r.stdout, r.stdout
    assert get(s, path)[1]["cache-status"] == "Velocity; fwd=uri-miss; stored"
    stored(s, path)
    run = run_of(get(s, path)[2])
    # The same purge again: nothing purged; the page stored since stays.
    assert "already applied" in s.vc(*replay, check=True).stdout
    code, h, body = get(s, path)
    assert h["cache-status"].startswith("Velocity; hit") and run_of(body) == run, h
    assert s.vc("restart", "cache").returncode == 0
    assert wait_for(lambda: "already applied" in s.vc(*replay).stdout, timeout=10)
    assert run_of(get(s, path)[2]) == run
    # Another id of the same node is another purge.
    assert "replayed: 1" in s.vc(*replay[:4], f"17b-{id_}", *replay[5:], check=True).stdout
    st = json.loads(s.vc("ctl", "--json", "vc-cache", "status", check=True).stdout)
    assert int(st["fields"]["purges_repeated"]) >= 1, st
