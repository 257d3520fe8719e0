"""The response cache by the letter of RFC 9111 and RFC 9110, section by
section (docs/CACHE.md): each test names the section it checks. PHP's
runs are counted by cached.php, so a hit is an answer PHP did not make."""
import pytest

from test_04_php_pool import wait_for
from test_17_cache import get, new_id, page, run_of


@pytest.fixture(scope="module")
def rfc_suite(tmp_path_factory):
    from conftest import Suite
    conf = tmp_path_factory.mktemp("etc")
    (conf / "vc.conf").write_text("\n")
    s = Suite(conf=str(conf), args=["--workers", "2"]).start()
    yield s
    s.stop()
    s.cleanup()


def stored(s, path):
    """Whether the page's first answer was stored (its Cache-Status says
    so), and then served from the cache."""
    status = get(s, path)[1]["cache-status"]
    if not status.endswith("; stored"):
        assert "detail=" in status, status
        return False
    assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    return True


@pytest.mark.parametrize("lines, stores", [
    # RFC 9110 5.3: the field lines of a field are one list.
    (["Cache-Control: max-age=3600", "Cache-Control: private"], False),
    (["Cache-Control: max-age=3600", "Cache-Control: no-store"], False),
    (["Cache-Control: public", "Cache-Control: max-age=3600"], True),
])
def test_rfc9110_5_3_field_lines_combine(rfc_suite, lines, stores):
    assert stored(rfc_suite, page(new_id(), *lines)) == stores


def test_rfc9111_5_2_a_second_line_s_maxage_counts(rfc_suite):
    s, path = rfc_suite, page(new_id(), "Cache-Control: max-age=3600", "Cache-Control: s-maxage=1")
    assert stored(s, path)
    _, h, _ = get(s, path)
    assert h["cache-status"].startswith("Velocity; hit; ttl=") and int(h["cache-status"].rsplit("=", 1)[1]) <= 1


@pytest.mark.parametrize("expires, stores", [
    # RFC 9110 5.6.7: the three forms a recipient must read, letter case aside.
    ("Sun, 06 Nov 2094 08:49:37 GMT", True),
    ("Sun Nov  6 08:49:37 2094", True),
    ("Sun, 06 Nov 2094 08:49:37 gmt", True),
    # RFC 9111 5.3: an Expires that is not a date is already expired.
    ("Sun,  06 Nov 2094 08:49:37 GMT", False),
    ("Sun, 06 Nov 2094 8:49:37 GMT", False),
    ("0", False),
])
def test_rfc9111_5_3_expires_is_a_strict_date(rfc_suite, expires, stores):
    assert stored(rfc_suite, page(new_id(), f"Expires: {expires}")) == stores


def test_rfc9111_5_3_two_expires_lines_are_expired(rfc_suite):
    e = "Expires: Sun, 06 Nov 2094 08:49:37 GMT"
    assert not stored(rfc_suite, page(new_id(), e, e))


def test_rfc9111_5_2_no_whitespace_around_the_equals_sign(rfc_suite):
    assert not stored(rfc_suite, page(new_id(), "Cache-Control: max-age = 3600"))


def test_rfc9110_13_1_3_modified_since_a_later_date_is_not_modified(rfc_suite):
    s = rfc_suite
    path = page(new_id(), "Cache-Control: max-age=3600", "Last-Modified: Mon, 01 Jan 2024 00:00:00 GMT")
    assert stored(s, path)
    code, h, _ = get(s, path, "-H", "If-Modified-Since: Tue, 02 Jan 2024 00:00:00 GMT")
    assert code == 304 and h["cache-status"].startswith("Velocity; hit")
    code, _, _ = get(s, path, "-H", "If-Modified-Since: Sun, 31 Dec 2023 00:00:00 GMT")
    assert code == 200
    code, _, _ = get(s, path, "-H", "If-Modified-Since: Monday, 01-Jan-24 00:00:00 GMT")
    assert code == 304
    code, _, body = get(s, path, "-H", "If-Modified-Since: yesterday")
    assert code == 200 and run_of(body) == 1


@pytest.mark.parametrize("status", [302, 303, 307, 400, 403, 500, 502, 503])
def test_rfc9111_3_any_final_status_with_a_lifetime_is_stored(rfc_suite, status):
    s = rfc_suite
    lines = ["Cache-Control: max-age=60"] + (["Location: /elsewhere"] if 300 <= status < 400 else [])
    path = page(new_id(), *lines, status=status)
    assert stored(s, path)
    code, _, body = get(s, path)
    assert code == status and run_of(body) == 1


def test_rfc9110_15_1_a_rules_lifetime_only_for_heuristically_cacheable_statuses(tmp_path):
    from conftest import Suite, FIXTURES
    conf = tmp_path / "etc"
    (conf / "sites-enabled").mkdir(parents=True)
    (conf / "vc.conf").write_text("\n")
    (conf / "sites-enabled" / "a.conf").write_text(
        f'site: {{ hosts = ["127.0.0.1"]; default = true; root = "{FIXTURES}/docroot"; cache_rules = ["/ ttl=60s"]; }};\n')
    s = Suite(root="", conf=str(conf)).start()
    try:
        assert stored(s, page(new_id(), status=404))
        assert not stored(s, page(new_id(), status=302))
        assert not stored(s, page(new_id(), status=500))
    finally:
        s.stop()
        s.cleanup()


def test_rfc9111_4_2_3_an_age_from_upstream_counts(rfc_suite):
    s = rfc_suite
    assert not stored(s, page(new_id(), "Cache-Control: max-age=3600", "Age: 7200"))
    path = page(new_id(), "Cache-Control: max-age=3600", "Age: 600")
    assert stored(s, path)
    _, h, _ = get(s, path)
    assert 600 <= int(h["age"]) < 700, h
    assert int(h["cache-status"].rsplit("=", 1)[1]) <= 3000


def test_rfc9111_4_2_3_an_old_date_makes_an_old_answer(rfc_suite):
    import email.utils
    import time
    ten_minutes_ago = email.utils.formatdate(time.time() - 600, usegmt=True)
    assert not stored(rfc_suite, page(new_id(), "Cache-Control: max-age=60", f"Date: {ten_minutes_ago}"))
    path = page(new_id(), "Cache-Control: max-age=3600", f"Date: {ten_minutes_ago}")
    assert stored(rfc_suite, path)
    assert int(get(rfc_suite, path)[1]["age"]) >= 599


def test_rfc9111_4_2_1_expires_is_measured_from_the_answers_date(rfc_suite):
    """Its lifetime is Expires less Date (an hour), of which the ten
    minutes since Date are gone: the page is ten minutes old when it
    comes, as its Age says."""
    import email.utils
    import time
    date = int(time.time()) - 600
    path = page(new_id(), f"Date: {email.utils.formatdate(date, usegmt=True)}",
                f"Expires: {email.utils.formatdate(date + 3600, usegmt=True)}")
    assert stored(rfc_suite, path)
    _, h, _ = get(rfc_suite, path)
    assert 2990 <= int(h["cache-status"].rsplit("=", 1)[1]) <= 3000 and 600 <= int(h["age"]) <= 610, h


def test_rfc9111_4_3_4_a_304_updates_the_stored_fields(rfc_suite):
    """Past its lifetime the page is revalidated with PHP (its ETag); the
    304's fields replace the stored ones: each is sent once."""
    import re
    from conftest import curl
    s = rfc_suite
    path = page(new_id(), "Cache-Control: max-age=1", "X-Version: one", etag="v1")
    assert stored(s, path)

    def revalidated():
        _, head, body = curl(s.url(path))
        return (head, body) if "fwd-status=304" in head else None
    head, body = wait_for(revalidated, timeout=5)
    assert run_of(body) == 1
    for name in ("cache-control", "etag", "x-version"):
        assert len(re.findall(rf"^{name}:", head, re.I | re.M)) == 1, head


def test_rfc9111_4_1_vary_values_match_whatever_their_list_whitespace(rfc_suite):
    s = rfc_suite
    path = page(new_id(), "Cache-Control: max-age=60", "Vary: X-Lang")
    get(s, path, "-H", "X-Lang: fr,de")
    assert wait_for(lambda: get(s, path, "-H", "X-Lang: fr,de")[1]["cache-status"].startswith("Velocity; hit"),
                    timeout=5)
    for same in ("fr, de", "fr ,  de", "fr,\tde"):
        code, h, body = get(s, path, "-H", f"X-Lang: {same}")
        assert h["cache-status"].startswith("Velocity; hit") and run_of(body) == 1, (same, h)
    assert not get(s, path, "-H", "X-Lang: de, fr")[1]["cache-status"].startswith("Velocity; hit")


def test_rfc9111_5_2_1_5_a_requests_no_store_stores_nothing_of_its_answer(rfc_suite):
    s, path = rfc_suite, page(new_id(), "Cache-Control: max-age=3600")
    code, h, body = get(s, path, "-H", "Cache-Control: no-store")
    assert code == 200 and h["cache-status"] == "Velocity; fwd=uri-miss; detail=no-store", h
    # Nothing was stored: the next request runs PHP again, and its answer
    # is the one stored.
    _, h2, body2 = get(s, path)
    assert run_of(body2) == run_of(body) + 1 and h2["cache-status"].endswith("; stored"), h2
    assert wait_for(lambda: get(s, path)[1]["cache-status"].startswith("Velocity; hit"), timeout=5)
    # What is stored may answer it (the directive forbids storing only).
    _, h3, body3 = get(s, path, "-H", "Cache-Control: no-cache, no-store")
    assert h3["cache-status"].startswith("Velocity; hit") and run_of(body3) == run_of(body2)


def test_rfc9111_4_4_an_unsafe_methods_invalidation_is_done_before_its_answer(make_suite, tmp_path):
    """A GET sent the moment a PUT's answer came finds the page out of date,
    on either of two front processes (each connection may land on either):
    the invalidation is seen by every front before the answer leaves, not
    when vc-cache gets round to dropping the entry."""
    import http.client
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text("front: { processes = 2; };\n")
    s = make_suite(conf=str(conf), args=["--workers", "2"]).start()
    conns = [http.client.HTTPConnection("127.0.0.1", s.http, timeout=10) for _ in range(4)]

    def ask(c, method, path):
        c.request(method, path)
        r = c.getresponse()
        return r.status, r.getheader("Cache-Status", ""), r.read()

    stale = []
    try:
        for i in range(40):
            path = page(new_id(), "Cache-Control: max-age=600")
            assert stored(s, path)
            before = set()
            for c in conns:  # every connection (and so each front) has it as a hit
                _, status, body = ask(c, "GET", path)
                assert status.startswith("Velocity; hit"), (path, status)
                before.add(run_of(body))
            assert ask(conns[i % 4], "PUT", path)[0] == 200
            # What PHP made before the PUT must not come back (a new answer
            # may be stored and hit at once: it is another run).
            after = [ask(c, "GET", path) for c in conns]
            stale += [(i, st) for _, st, body in after if run_of(body) in before]
    finally:
        for c in conns:
            c.close()
    assert stale == [], stale
