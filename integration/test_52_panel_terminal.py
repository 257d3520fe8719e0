"""vc-panel's terminal (panel.terminal = true; docs/panel.md): a shell over
a WebSocket from a pseudo-terminal, opened by an admin with a fresh TOTP
code, as panel.terminal_user (started as root) and never as root; each
session audited; closed when the shell exits or the session ends. The
page's widget (xterm.js) is test_50_panel_browser.py's."""
import os
import pwd
import re
import time

import pytest

from conftest import descendants
from panel import Client, admin, panel_suite, totp, viewer
from wsclient import OP_BINARY, OP_CLOSE, OP_TEXT, Conn, frame


@pytest.fixture(scope="module")
def term():
    # The privilege model as deployed: started as root, the daemons run as
    # the suite's user, the starter keeps root, the shells are nobody's.
    s = panel_suite(panel='terminal = true; terminal_user = "nobody"; slow_after = 100; lockout_after = 100;',
                    as_root=False).start()
    s.c = admin(s)
    yield s
    s.stop()
    s.cleanup()


class TotpAdmin:
    """An admin of its own, signed in, with TOTP enrolled by a code of the
    step before now: the panel takes a code for its step and one either
    side, each once, so the steps now and next are left for its tickets
    and sign-ins (each test takes its own admin, and no test waits for
    the clock)."""

    def __init__(self, s, name):
        r = s.c.post("/api/users/add", s.c.step_up({"user": name, "role": "admin"}))
        assert r.status_code == 200, r.text
        self.s, self.name, self.password = s, name, name + "'s own long password"
        self.c = Client(s)
        self.c.login(name, r.json()["password"])
        assert self.c.post("/api/password", {"old": r.json()["password"], "new": self.password}).status_code == 200
        self.secret = self.c.post("/api/totp/begin").json()["secret"]
        self.at, self.step = time.time() - 30, 0
        assert self.c.post("/api/totp/confirm", {"code": self.code()}).status_code == 200

    def code(self):
        """The next step's code: good once."""
        got = totp(self.secret, at=self.at, step=self.step)
        self.step += 1
        return got

    def ticket(self):
        r = self.c.post("/api/terminal/ticket", {"password": self.password, "code": self.code()})
        assert r.status_code == 200, r.text
        return r.json()["ticket"]


def connect(s, t, c, origin=None):
    cookie = "; ".join(f"{k}={v}" for k, v in c.http.cookies.items())
    return Conn("127.0.0.1", s.panel_port, f"/api/terminal?ticket={t}", tls=True, timeout=10,
                headers={"Origin": origin or s.panel, "Cookie": cookie})


def read_until(ws, text, timeout=10.0):
    """The terminal's output until text is in it."""
    out, deadline = b"", time.monotonic() + timeout
    while text.encode() not in out:
        assert time.monotonic() < deadline, out
        fin, op, payload = ws.recv_frame()
        assert op in (OP_BINARY, OP_CLOSE), op
        if op == OP_CLOSE:
            raise AssertionError(f"closed: {payload!r} after {out!r}")
        out += payload
    return out.decode(errors="replace")


def expected_user():
    """Started as root, the shell is panel.terminal_user's; started as
    anyone else, everything runs as that user."""
    return "nobody" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name


def test_a_shell_as_the_configured_user_with_its_size_and_audited(term):
    a = TotpAdmin(term, "ann")
    ws = connect(term, a.ticket(), a.c)
    assert ws.status == 101, ws.head
    ws.send(frame(OP_TEXT, '{"cols": 132, "rows": 40}'))
    ws.send(frame(OP_BINARY, "echo sum=$((6*7)) user=$(id -un) uid=$(id -u) size=$(stty size)\n"))
    out = read_until(ws, "size=40 132")
    assert "sum=42" in out and f"user={expected_user()}" in out and "uid=0" not in out
    ws.send(frame(OP_BINARY, "exit\n"))
    code, why = ws.recv_close()
    assert code == 1000 and why == "the shell exited"
    events = term.events_of("panel.audit", lambda es: any(e["fields"]["action"] == "terminal.close" for e in es))
    opened = [e["fields"] for e in events if e["fields"]["action"] == "terminal.open"]
    closed = [e["fields"] for e in events if e["fields"]["action"] == "terminal.close"]
    assert opened and opened[-1]["user"] == "ann" and opened[-1]["result"] == "ok"
    assert closed and "the shell exited" in closed[-1]["result"] and " bytes in" in closed[-1]["result"]


def test_a_ticket_takes_a_fresh_code_and_is_good_once_for_its_session_and_origin(term):
    a = TotpAdmin(term, "bea")
    c = a.c
    used = totp(a.secret, at=a.at, step=a.step - 1)  # the enrolment's
    for body in ({"password": a.password, "code": used}, {"password": a.password, "code": "000000"},
                 {"password": a.password}, {"code": totp(a.secret, at=a.at, step=a.step)}, {}):
        r = c.post("/api/terminal/ticket", body)
        assert r.status_code == 403 and r.json()["need"] == "step_up", (body, r.text)
    t = a.ticket()
    # Another session of the same admin cannot use it.
    other = Client(term)
    other.login(a.name, a.password, code=a.code())
    assert connect(term, t, other).status == 403
    # Nor another origin (a page elsewhere, with the admin's cookie): a
    # ticket is one try.
    assert connect(term, t, c, origin="https://evil.example").status == 400
    assert connect(term, t, c).status == 403
    # Good once; and a ticket is needed at all.
    b = TotpAdmin(term, "cid")
    t = b.ticket()
    assert connect(term, t, b.c).status == 101
    assert connect(term, t, b.c).status == 403
    assert connect(term, "made-up", b.c).status == 403


def test_a_viewer_gets_no_terminal(term):
    v = viewer(term, term.c, "vic")
    assert v.post("/api/terminal/ticket", {"code": "123456"}).status_code == 403
    assert connect(term, "x", v).status == 403


def test_signing_out_closes_the_open_terminal(term):
    a = TotpAdmin(term, "dan")
    c = a.c
    ws = connect(term, a.ticket(), c)
    assert ws.status == 101
    ws.send(frame(OP_BINARY, "echo ready\n"))
    read_until(ws, "ready")
    assert c.post("/api/logout").status_code == 200
    code, why = ws.recv_close()  # within a tick of the panel
    assert code == 1008 and why == "the session ended"


def test_the_starter_is_the_one_root_process_and_holds_only_its_link(term):
    """Started as root: the terminal starter, vc-panel's child, keeps root
    and holds nothing but its socket pair (and the log); vc-panel and
    every other daemon are the suite's user."""
    if os.geteuid() != 0:
        pytest.skip("started as another user, no process has root to keep")
    tree = descendants(term.proc.pid)
    ids = {p: uids(p) for p in tree}
    root = [p for p, u in ids.items() if u == 0]
    assert len(root) == 1, ids
    (starter,) = root
    assert comm(parent_of(starter)) == "vc-panel", comm(parent_of(starter))
    fds = sorted(int(f) for f in os.listdir(f"/proc/{starter}/fd"))
    assert fds == [0, 1, 2, 3], fds
    assert os.readlink(f"/proc/{starter}/fd/3").startswith("socket:")


def uids(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^Uid:\s+(\d+)", f.read(), re.M).group(1))


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def comm(pid):
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def test_the_terminal_is_off_unless_turned_on_and_never_root(make_suite, tmp_path):
    s = panel_suite().start()
    try:
        c = admin(s)
        r = c.post("/api/terminal/ticket", c.step_up({}))
        assert r.status_code == 403 and "the terminal is off" in r.json()["error"], r.text
    finally:
        s.stop()
        s.cleanup()
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "vc.conf").write_text('panel: {\n  terminal = true;\n  terminal_user = "root";\n};\n')
    r = make_suite(root="", conf=str(conf)).vc("configtest")
    assert r.returncode != 0 and 'panel.terminal_user "root" is root' in r.stderr, r.stderr
    assert "vc.conf" in r.stderr
