"""The panel's operations pages in Chromium (node/panel_driver.mjs): each
loads with no axe-core violation and does its job, and markup from the
server stays text: a presence member's id (the name of a room can hold
no markup: Pusher's channel names are letters, digits and "-_=@,.;"), a
log line and an event. Logs are followed, paused and resumed; a worker
is recycled; an app's secret is shown and rotated; the terminal runs a
command typed into xterm.js; and repeated failed sign-ins lock the form
out with the panel's message."""
import os
import re
import time

import pytest

from conftest import FIXTURES, curl
from panel import PASSWORD, Browser, admin, no_violations, panel_suite, sign_in, totp
from pusher import Client as PusherClient
from pusher import app_of

XSS_MEMBER = '<img src=x onerror="window.xss=3">'
XSS_LINE = '<svg onload="window.xss=4">'


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    main = 'site: { hosts = ["127.0.0.1", "main.test"]; default = true; root = "%s"; };\n' % os.path.join(
        FIXTURES, "docroot")
    www = tmp_path_factory.mktemp("warm")
    (www / "sitemap.xml").write_text(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s</urlset>' % "".join(
            "<url><loc>http://main.test/hello.php?n=%d</loc></url>" % i for i in range(5)))
    os.chmod(www, 0o755)
    warm = 'site: { hosts = ["warm.test"]; root = "%s"; };\n' % www
    s = panel_suite(root="", sites={"main": main, "warm": warm},
                    panel='terminal = true; terminal_user = "nobody"; slow_after = 100; lockout_after = 100;')
    s.start()
    c = admin(s)  # the password changed through the API: the page signs in with it and a code
    secret = c.post("/api/totp/begin").json()["secret"]
    at = time.time() - 30  # enrolled with the step before now: now and next are left for the page
    r = c.post("/api/totp/confirm", {"code": totp(secret, at=at)})
    assert r.status_code == 200
    s.recovery = r.json()["recovery"]  # for the step-ups past the one next_code buys
    b = Browser()
    assert b("goto", s.panel + "/") == 200
    sign_in(b, "admin", PASSWORD)
    b("waitVisible", "#signin-code")
    b("fill", "#signin-code", totp(secret, at=at, step=1))
    b("click", "#signin-form button[type=submit]")
    b("waitVisible", "#dashboard")
    s.next_code = totp(secret, at=at, step=2)
    yield s, b
    err = b.close()
    s.stop()
    s.cleanup()
    assert "pageerror" not in err, err
    # The CSP holds with xterm.js in the page: nothing was refused.
    assert "Refused to" not in err, err


def no_xss(b):
    assert b("eval", "window.xss === undefined")


def test_a_worker_recycled_and_the_pool_reloaded_from_the_page(ops):
    s, b = ops
    b("goto", s.panel + "/#pools")
    b("waitText", "#pools-list", "Pool default")
    first = b("text", "#workers-2 tbody tr td")
    b("click", "#workers-2 tbody tr button")
    b("waitText", "#notice", f"worker {first} recycled")
    # The page keeps the table current: the worker leaves it.
    b("waitFn", "![...document.querySelectorAll('#pools-list table tbody tr td:first-child')]"
                f".some(td => td.textContent === '{first}')")
    b("click", "#pools-list > button")
    b("waitText", "#notice", "generation")


def test_a_warm_up_started_from_the_cache_page_shows_its_progress(ops):
    s, b = ops
    b("goto", s.panel + "/#cache")
    b("waitVisible", "#warm-form")
    b("fill", "#warm-sitemap", "http://warm.test/sitemap.xml")
    b("click", "#warm-form button[type=submit]")
    # hello.php is not cacheable: each URL is asked and says so.
    b("waitText", "#warm-state", "Warmed http://warm.test/sitemap.xml: 5 of 5 URLs, 0 stored, 0 already there, "
                                 "5 not cacheable, 0 errors.")
    assert b("eval", "document.getElementById('warm-progress').value") == 5
    no_violations(b, "cache (warm-up)")


def test_certificates_and_cluster_pages_say_there_is_nothing_to_show(ops):
    s, b = ops
    b("goto", s.panel + "/#certs")
    b("waitText", "#certs-state", 'No site has tls = "acme"')
    no_violations(b, "certificates")
    b("goto", s.panel + "/#cluster")
    b("waitText", "#nodes-state", "not in a cluster")
    b("waitText", "#releases-state", "vc-fed does not run")
    no_violations(b, "cluster")


def test_realtime_members_as_text_the_secret_shown_and_rotated(ops):
    s, b = ops
    app_id, _, old_secret = app_of(s)
    member = PusherClient(s)
    try:
        assert member.subscribe("presence-lobby", user=XSS_MEMBER)["event"] == \
            "pusher_internal:subscription_succeeded"
        b("goto", s.panel + "/#realtime")
        b("waitText", "#rooms-table", f"{app_id}:presence-lobby")
        b("click", "#rooms-table tbody button")
        b("waitText", "#members-table", XSS_MEMBER)
        assert b("eval", "document.querySelectorAll('#members-table img').length") == 0
        no_xss(b)
        no_violations(b, "realtime")
    finally:
        member.close()
    b("click", "#apps-table tbody button[aria-label^='Show']")
    # Showing a secret asks for the password and a code again (a step-up).
    b("waitVisible", "#stepup-form")
    b("fill", "#stepup-password", PASSWORD)
    b("fill", "#stepup-code", s.recovery.pop())
    b("click", "#stepup-form button[type=submit]")
    b("waitText", "#apps-table", old_secret)
    b("click", "#apps-table tbody button[aria-label^='Rotate']")
    b("waitVisible", "#rotate-form")
    b("fill", "#rotate-confirm", "not the id")
    b("click", "#rotate-form button[type=submit]")
    b("waitText", "#notice", "typing the app's id again")
    assert app_of(s)[2] == old_secret
    b("fill", "#rotate-confirm", app_id)
    b("click", "#rotate-form button[type=submit]")
    b("waitText", "#notice", f"The secret of app {app_id} is new")
    assert app_of(s)[2] != old_secret


def test_logs_followed_with_a_filter_paused_and_resumed_markup_as_text(ops):
    s, b = ops
    b("goto", s.panel + "/#logs")
    b("waitVisible", "#follow-form")
    b("select", "#follow-what", "access")
    b("fill", "#follow-q", "mark-")
    b("click", "#follow-form button[type=submit]")
    b("waitText", "#follow-state", "Following")
    curl(s.url("/hello.php?mark-1=" + XSS_LINE.replace(" ", "%20")))
    curl(s.url("/hello.php?not-this"))
    b("waitText", "#follow-lines", "mark-1=<svg")
    assert "not-this" not in b("text", "#follow-lines")
    no_xss(b)
    no_violations(b, "logs")
    # Paused, a line waits; resumed, it comes in.
    b("click", "#follow-pause")
    curl(s.url("/hello.php?mark-2"))
    b("waitText", "#follow-state", "1 lines wait")
    assert "mark-2" not in b("text", "#follow-lines")
    b("click", "#follow-pause")
    b("waitText", "#follow-lines", "mark-2")
    # Events, by topic: a purge whose target is markup, as text.
    b("select", "#follow-what", "events")
    b("fill", "#follow-q", "")
    b("fill", "#follow-topic", "panel.")
    b("click", "#follow-form button[type=submit]")
    b("eval", "api('POST', '/api/cache/purge', {kind: 'tag', value: %r})" % XSS_LINE)
    b("waitText", "#follow-lines", "target=tag " + XSS_LINE)
    assert b("eval", "document.querySelectorAll('#follow-lines svg').length") == 0
    no_xss(b)


def test_the_terminal_runs_what_is_typed_into_it(ops):
    s, b = ops
    b("goto", s.panel + "/#terminal")
    b("waitVisible", "#terminal-form")
    no_violations(b, "terminal")
    b("click", "#terminal-form button[type=submit]")
    b("waitVisible", "#stepup-form")
    no_violations(b, "step-up")
    b("fill", "#stepup-password", PASSWORD)
    b("fill", "#stepup-code", s.next_code)
    b("click", "#stepup-form button[type=submit]")
    b("waitText", "#terminal-state", "Open.")
    b("typeLine", "echo product=$((6*7))")
    assert b("waitFn", "document.querySelector('#terminal-screen .xterm-rows').textContent.includes('product=42')")
    b("click", "#terminal-close")
    b("waitText", "#terminal-state", "Closed")
    assert s.events_of("panel.audit", lambda es: any(e["fields"]["action"] == "terminal.close" for e in es))


def test_repeated_failed_sign_ins_lock_the_form_out(ops):
    _, b = ops
    s = panel_suite(panel="slow_after = 3; lockout_after = 3; lockout_time = \"60s\";").start()
    try:
        assert b("goto", s.panel + "/") == 200
        messages = []
        for _ in range(4):
            sign_in(b, "admin", "not the password at all")
            b("waitFn", "document.getElementById('signin-error').textContent !== ''")
            messages.append(b("text", "#signin-error"))
            b("eval", "document.getElementById('signin-error').textContent = ''")
        assert messages[0] == "wrong user name, password or code"
        assert re.search(r"locked", messages[-1]), messages
    finally:
        s.stop()
        s.cleanup()
