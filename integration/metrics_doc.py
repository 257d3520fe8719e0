"""docs/observing.md's table of metrics, and a daemon's /metrics held to
it: every metric a front (or a node's vc-mesh, or vc-acme's certificates)
shows is a row with the same kind and help, so a counter added, renamed or
reworded without its docs fails the test that sees it."""
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- metrics table: begin -->\n", "<!-- metrics table: end -->"


def documented():
    """{name: (kind, help)} from the table."""
    with open(os.path.join(REPO, "docs", "observing.md")) as f:
        text = f.read()
    assert BEGIN in text and END in text, "docs/observing.md has the metrics table between its markers"
    rows = {}
    for line in text.split(BEGIN, 1)[1].split(END, 1)[0].splitlines():
        m = re.match(r"\| `(vc_[a-z0-9_]+)` \| (counter|gauge) \| (.+) \|$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3).replace("\\|", "|"))
    return rows


def shown(text):
    """{name: (kind, help)} from Prometheus text."""
    helps = dict(re.findall(r"^# HELP (\S+) (.*)$", text, re.M))
    kinds = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    assert set(helps) == set(kinds), "every metric has its HELP and TYPE"
    return {name: (kinds[name], helps[name]) for name in helps}


def assert_documented(text, prefix):
    """Every metric of text is a row of the table as shown; every row
    whose name starts with prefix is shown."""
    docs, seen = documented(), shown(text)
    wrong = {n: (v, docs.get(n)) for n, v in seen.items() if docs.get(n) != v}
    assert not wrong, f"shown as (kind, help), documented as: {wrong}"
    missing = sorted(n for n in docs if n.startswith(prefix) and n not in seen)
    assert not missing, f"documented but not shown: {missing}"
    return seen
