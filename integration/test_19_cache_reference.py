"""The cache's behaviour beside the references' (docs/CACHE.md, "Beside
nginx and Varnish"): the same cases against our cache, nginx's
fastcgi_cache and Varnish 7.1 with its built-in VCL (in front of nginx +
php-fpm), all serving integration/fixtures/docroot/cached.php, whose run
counter tells a stored answer from a new one. Each case states what each
stack does, from its documentation, and checks it: where they differ, the
table in docs/CACHE.md says why."""
import email.utils
import os
import shutil
import tempfile
import threading
import time

import pytest

from conftest import FIXTURES, Suite, curl
from reference import NginxCache, Varnish
from test_04_php_pool import wait_for
from test_17_cache import new_id, page, run_of

DOCROOT = os.path.join(FIXTURES, "docroot")


class OurStack:
    name = "velocity"

    def __init__(self):
        self.suite = Suite(args=["--workers", "2"]).start()
        self.http = self.suite.http

    def stop(self):
        self.suite.stop()
        self.suite.cleanup()


@pytest.fixture(scope="module", params=["velocity", "nginx-cache", "varnish"])
def stack(request):
    if request.param == "velocity":
        st = OurStack()
        yield st
        st.stop()
        return
    tmp = tempfile.mkdtemp(prefix="vc-ref-cache-")
    cls = NginxCache if request.param == "nginx-cache" else Varnish
    st = cls(2, "classic", tmp, DOCROOT)
    try:
        yield st
    finally:
        st.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def fetch(st, path, *args):
    code, head, body = curl(*args, f"http://127.0.0.1:{st.http}{path}")
    return code, body, head.lower()


def reused(st, path, *args):
    """Whether a request (args) gets the answer a plain GET stored: PHP's
    run counter does not move. nginx and Varnish store before they answer;
    vc-cache a moment after: ours is waited for when it said "stored"."""
    _, body, head = fetch(st, path)
    if st.name == V and "; stored" in head:
        assert wait_for(lambda: "cache-status: velocity; hit" in fetch(st, path)[2], timeout=5)
    _, again, _ = fetch(st, path, *args)
    return run_of(again) == run_of(body)


# (case, headers of the answer, query, request args, {stack: reused?})
V, N, R = "velocity", "nginx-cache", "varnish"
CASES = [
    ("max-age", ["Cache-Control: max-age=60"], {}, [], {V: True, N: True, R: True}),
    ("expires", ["Expires: Thu, 01 Jan 2099 00:00:00 GMT"], {}, [], {V: True, N: True, R: True}),
    ("set-cookie", ["Cache-Control: max-age=60"], {"cookie": 1}, [], {V: False, N: False, R: False}),
    ("private", ["Cache-Control: private, max-age=60"], {}, [], {V: False, N: False, R: False}),
    ("no-store", ["Cache-Control: no-store, max-age=60"], {}, [], {V: False, N: False, R: False}),
    ("no-cache", ["Cache-Control: no-cache, max-age=60"], {}, [], {V: False, N: False, R: False}),
    ("vary-star", ["Cache-Control: max-age=60", "Vary: *"], {}, [], {V: False, N: False, R: False}),
    # No lifetime: Varnish gives one (default_ttl, 120 s); nginx and we
    # store only what says it may be.
    ("no-lifetime", [], {}, [], {V: False, N: False, R: True}),
    ("max-age-0", ["Cache-Control: max-age=0"], {}, [], {V: False, N: False, R: False}),
    # s-maxage is for shared caches: all three read it first.
    ("s-maxage", ["Cache-Control: max-age=0, s-maxage=60"], {}, [], {V: True, N: True, R: True}),
    ("404", ["Cache-Control: max-age=60"], {"status": 404}, [], {V: True, N: True, R: True}),
    # An error with a lifetime: nginx and we store it, as RFC 9111 3 allows
    # any final status with explicit freshness; Varnish's built-in VCL
    # keeps only its list of statuses.
    ("500", ["Cache-Control: max-age=60"], {"status": 500}, [], {V: True, N: True, R: False}),
    # What a request brings: nginx serves whatever it stored to anyone;
    # Varnish passes any request with a cookie or Authorization; we pass
    # Authorization and session cookies only.
    ("authorization", ["Cache-Control: max-age=60"], {}, ["-H", "Authorization: Basic dTpw"],
     {V: False, N: True, R: False}),
    ("session-cookie", ["Cache-Control: max-age=60"], {}, ["-H", "Cookie: PHPSESSID=abc"],
     {V: False, N: True, R: False}),
    ("other-cookie", ["Cache-Control: max-age=60"], {}, ["-H", "Cookie: theme=dark"],
     {V: True, N: True, R: False}),
    # An answer that varies: a request with another value of the header is
    # another variant, for all three.
    ("vary-other-value", ["Cache-Control: max-age=60", "Vary: X-Lang"], {}, ["-H", "X-Lang: de"],
     {V: False, N: False, R: False}),
    # A tracker's parameter makes no page of its own for us.
    ("utm-param", ["Cache-Control: max-age=60"], {}, "utm", {V: True, N: False, R: False}),
]


# RFC 9111's requirements (and RFC 9110's on the fields it reads), as
# test_31_cache_rfc.py checks ours, beside the references: the cases the
# RFC decides, named by section, with what each stack does. docs/CACHE.md
# ("By the letter of RFC 9111") tabulates them.
TEN_MINUTES_AGO = email.utils.formatdate(time.time() - 600, usegmt=True)
RFC_CASES = [
    # RFC 9110 5.3: a field's lines are one list.
    ("9110-5.3-second-line-private", ["Cache-Control: max-age=3600", "Cache-Control: private"], {}, [],
     {V: False, N: False, R: False}),
    ("9110-5.3-second-line-no-store", ["Cache-Control: max-age=3600", "Cache-Control: no-store"], {}, [],
     {V: False, N: False, R: False}),
    ("9110-5.3-second-line-max-age", ["Cache-Control: public", "Cache-Control: max-age=3600"], {}, [],
     {V: True, N: True, R: True}),
    # RFC 9110 5.6.7: the three date forms a recipient must read.
    ("9110-5.6.7-expires-imf", ["Expires: Sun, 06 Nov 2094 08:49:37 GMT"], {}, [], {V: True, N: True, R: True}),
    ("9110-5.6.7-expires-asctime", ["Expires: Sun Nov  6 08:49:37 2094"], {}, [], {V: True, N: True, R: True}),
    ("9110-5.6.7-expires-rfc850", ["Expires: Saturday, 06-Nov-49 08:49:37 GMT"], {}, [], {V: True, N: True, R: True}),
    # RFC 9111 5.3: an Expires that is not a valid date means expired.
    ("9111-5.3-expires-two-spaces", ["Expires: Sun,  06 Nov 2094 08:49:37 GMT"], {}, [],
     {V: False, N: True, R: True}),
    ("9111-5.3-expires-one-digit-hour", ["Expires: Sun, 06 Nov 2094 8:49:37 GMT"], {}, [],
     {V: False, N: False, R: True}),
    ("9111-5.3-expires-0", ["Expires: 0"], {}, [], {V: False, N: False, R: True}),
    ("9111-5.3-expires-twice", ["Expires: Sun, 06 Nov 2094 08:49:37 GMT"] * 2, {}, [], {V: False, N: True, R: True}),
    # RFC 9111 5.2: no whitespace around a directive's "=".
    ("9111-5.2-max-age-spaced", ["Cache-Control: max-age = 3600"], {}, [], {V: False, N: False, R: True}),
    # RFC 9111 4.2.3: an Age from upstream, and an old Date, count.
    ("9111-4.2.3-age-past-max-age", ["Cache-Control: max-age=3600", "Age: 7200"], {}, [],
     {V: False, N: True, R: False}),
    ("9111-4.2.3-old-date", ["Cache-Control: max-age=60", f"Date: {TEN_MINUTES_AGO}"], {}, [],
     {V: False, N: True, R: True}),
    # RFC 9111 3: any final status with explicit freshness may be stored.
    ("9111-3-302", ["Cache-Control: max-age=60", "Location: /elsewhere"], {"status": 302}, [],
     {V: True, N: True, R: True}),
    ("9111-3-403", ["Cache-Control: max-age=60"], {"status": 403}, [], {V: True, N: True, R: False}),
    ("9111-3-503", ["Cache-Control: max-age=60"], {"status": 503}, [], {V: True, N: True, R: False}),
]


@pytest.mark.parametrize("case,headers,params,args,expect", CASES + RFC_CASES,
                         ids=[c[0] for c in CASES + RFC_CASES])
def test_what_is_stored_and_reused(stack, case, headers, params, args, expect):
    path = page(new_id(), *headers, **params)
    if args == "utm":
        _, body, head = fetch(stack, path)
        if stack.name == V:
            assert wait_for(lambda: "cache-status: velocity; hit" in fetch(stack, path)[2], timeout=5)
        got = run_of(fetch(stack, path + "&utm_source=news")[1]) == run_of(body)
    else:
        got = reused(stack, path, *args)
    assert got == expect[stack.name], f"{stack.name} {case}: reused={got}"


def test_a_post_drops_the_stored_page(stack):
    """RFC 9111 4.4: we drop what a successful POST's URL had stored; nginx
    and Varnish's built-in VCL keep serving it."""
    path = page(new_id(), "Cache-Control: max-age=60")
    assert reused(stack, path)
    before = run_of(fetch(stack, path)[1])
    fetch(stack, path, "-d", "x=1")
    # Ours reaches vc-cache a moment after the POST's answer.
    if stack.name == V:
        assert wait_for(lambda: "velocity; hit" not in fetch(stack, path)[2], timeout=5)
    else:
        assert run_of(fetch(stack, path)[1]) == before


def test_a_head_never_stores_an_empty_get(stack):
    path = page(new_id(), "Cache-Control: max-age=60")
    code, _, _ = fetch(stack, path, "-I")
    assert code == 200
    code, body, _ = fetch(stack, path)
    assert code == 200 and body.startswith(b"run "), (stack.name, body)


def test_concurrent_misses_make_one_php_run(stack):
    """All three collapse concurrent misses for one page (nginx with
    fastcgi_cache_lock, as set up here; Varnish by its waiting list)."""
    path = page(new_id(), "Cache-Control: max-age=60", ms=300)
    bodies = []

    def one():
        bodies.append(fetch(stack, path)[1])

    threads = [threading.Thread(target=one) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(bodies) == 20 and {run_of(b) for b in bodies} == {1}, stack.name


@pytest.mark.parametrize("case,headers,args,expect", [
    # Past its lifetime, within stale-while-revalidate: the stale page at
    # once, refreshed behind (nginx: fastcgi_cache_background_update, as
    # set up here; Varnish: its grace).
    ("stale-while-revalidate", ["Cache-Control: max-age=1, stale-while-revalidate=30"], [],
     {V: True, N: True, R: True}),
    # PHP answers 503 within stale-if-error: the stale page stands in for
    # us and nginx (fastcgi_cache_use_stale http_503); Varnish's built-in
    # VCL passes a backend's 503 on.
    ("stale-if-error", ["Cache-Control: max-age=1, stale-if-error=30"], ["-H", "Cookie: fail=503"],
     {V: True, N: True, R: False}),
])
def test_stale_answers(stack, case, headers, args, expect):
    path = page(new_id(), *headers)
    _, body, head = fetch(stack, path)
    first = run_of(body)
    if stack.name == V:
        assert wait_for(lambda: "cache-status: velocity; hit" in fetch(stack, path)[2], timeout=5)
    # The lifetime (1 s) runs out: time itself is what is waited for.
    stored_at = time.monotonic()
    assert wait_for(lambda: time.monotonic() - stored_at > 1.5, timeout=5, step=0.1)
    _, body, _ = fetch(stack, path, *args)
    got = body.startswith(b"run %d of" % first)
    assert got == expect[stack.name], f"{stack.name} {case}: stale={got} {body[:40]!r}"
