"""What the suite declares in one table, held to its docs and its users.
Every event topic (libcommon/vc_events.h): `vc events --list` prints the
table, docs/observing.md lists the same topics with the same fields, and
each publisher in the source names its topic from the table (never a
string of its own) and sends only the fields declared for it. Every vc
command (cli/commands.c): `vc help` lists it, and so does docs/man/vc.1.
No suite runs: the tables are in the program."""
import glob
import json
import os
import re
import subprocess

from conftest import VC

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def table():
    r = subprocess.run([VC, "events", "--list", "--json"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    return {e["topic"]: e for e in map(json.loads, r.stdout.splitlines())}


def documented():
    with open(os.path.join(REPO, "docs", "observing.md")) as f:
        text = f.read()
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| `([^`]+)` \| ((?:`[^`]+`(?:, )?)*) \|", line)
        if m:
            rows[m.group(1)] = re.findall(r"`([^`]+)`", m.group(2))
    return rows


def split_args(text):
    """The top-level arguments of a call, from just after its "(" to its
    ")": commas inside parentheses and strings do not split."""
    args, depth, cur, i = [], 0, "", 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur += text[i:j + 1]
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                args.append(cur.strip())
                return args
            depth -= 1
        elif c == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            i += 1
            continue
        cur += c
        i += 1
    raise AssertionError(f"unbalanced call: {text[:200]}")


def publish_calls():
    for path in sorted(glob.glob(os.path.join(REPO, "**", "*.c"), recursive=True)):
        rel = os.path.relpath(path, REPO)
        if rel.startswith(("build", "libcommon/vc_bus.c", "tests/", "fuzz/")):
            continue
        text = open(path).read()
        for m in re.finditer(r"\bvc_bus_publish\(", text):
            line = text.count("\n", 0, m.start()) + 1
            yield f"{rel}:{line}", split_args(text[m.end():])


def test_the_docs_list_every_topic_with_its_fields():
    t, d = table(), documented()
    assert set(t) == set(d), f"in the table only: {set(t) - set(d)}; in the docs only: {set(d) - set(t)}"
    for topic, e in t.items():
        assert d[topic] == e["fields"].split(), (topic, d[topic], e["fields"])


def test_publishers_name_declared_topics_and_send_declared_fields():
    t = table()
    by_name = {}
    with open(os.path.join(REPO, "libcommon", "vc_events.h")) as f:
        source = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        for m in re.finditer(r'X\(([A-Z_]+), "([^"]+)",\s*(?:\\\s*)?"([^"]*)"', source):
            by_name[m.group(1)] = (m.group(2), m.group(3).split())
    assert {v[0] for v in by_name.values()} == set(t)
    seen = 0
    for where, args in publish_calls():
        topic = args[1]
        assert not topic.startswith('"'), f"{where}: a topic written as a string ({topic}): use VC_EVENT(NAME)"
        names = re.findall(r"VC_EVENT\((\w+)\)", topic)
        if not names:
            continue  # a family's member, made by vc_event_topic_of()
        assert args[-1] == "NULL", f"{where}: not NULL-terminated"
        keys = args[3:-1:2]
        for name in names:
            declared = by_name[name][1]
            for k in keys:
                assert k.startswith('"'), f"{where}: a field name that is not a literal: {k}"
                assert k.strip('"') in declared, f"{where}: {k} is not a field of {by_name[name][0]} ({declared})"
        seen += 1
    assert seen >= 25, seen  # the publishers were found


def man_commands():
    """The command names of vc.1's COMMANDS entries: the bold words of
    each entry's first line, before its arguments."""
    with open(os.path.join(REPO, "docs", "man", "vc.1")) as f:
        text = f.read()
    section = text.split(".SH COMMANDS", 1)[1].split("\n.SH ", 1)[0]
    names = set()
    for entry in section.split(".TP\n")[1:]:
        first = entry.splitlines()[0]
        if first.startswith(".B "):
            names.add(first[3:].split()[0])
            continue
        head = re.split(r" \[| \\fI|\|", first)[0]
        names |= {w.split()[0] for w in re.findall(r"\\fB([a-z][a-z ]*)\\fR", head)}
    return names


def test_vc_help_and_the_man_page_list_the_same_commands():
    r = subprocess.run([VC, "help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0
    listed = {m.group(1) for m in re.finditer(r"^  ([a-z]+)\b", r.stdout, re.M)}
    assert "up" in listed and "cache" in listed and "keygen" in listed, r.stdout
    assert listed == man_commands(), (listed ^ man_commands())
    # Each one runs: an unknown one is refused with the list.
    r = subprocess.run([VC, "no-such-command"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and 'unknown command "no-such-command"' in r.stderr and "  configtest" in r.stderr


def settings(*args):
    r = subprocess.run([VC, "settings", *args], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_every_setting_has_its_help_and_docs_configuration_is_the_table():
    rows = [json.loads(line) for line in settings("--json").splitlines()]
    paths = [r["path"] for r in rows]
    assert len(paths) == len(set(paths)) and len(paths) > 150, paths
    assert {"listen", "site.root", "php.workers", "front.max_body", "cluster.node", "panel.listen"} <= set(paths)
    assert not [r["path"] for r in rows if len(r["help"]) < 10], "every setting says what it does"
    by_path = {r["path"]: r for r in rows}
    # The defaults are the parser's, as a file writes them.
    assert by_path["front.max_body"]["default"] == "8M" and by_path["front.max_body"]["range"] == "at least 0"
    assert by_path["php.queue_timeout"]["default"] == "30s" and by_path["front.temp_path"]["default"] == '"DATA/temp"'
    assert by_path["php.syscall_filter"]["default"] == '"auto"' and by_path["site.gzip"]["default"] == "true"
    with open(os.path.join(REPO, "docs", "configuration.md")) as f:
        text = f.read()
    m = re.search(r"<!-- settings table: begin[^>]*-->\n(.*?)<!-- settings table: end -->", text, re.S)
    assert m, "docs/configuration.md has the settings table between its markers"
    assert m.group(1) == settings("--markdown"), "docs/configuration.md's table is `vc settings --markdown`"


def test_vc_settings_prints_one_section_and_refuses_an_unknown_one():
    front = settings("front")
    assert front.startswith("front:\n") and "front.max_connections" in front and "php.workers" not in front
    assert "larger request bodies: 413" in front
    r = subprocess.run([VC, "settings", "fornt"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 1 and 'no section "fornt"' in r.stderr


VERB_ROW = re.compile(r'\{\s*"([^"]+)",\s*((?:"(?:[^"\\]|\\.)*"\s*)+),\s*((?:"(?:[^"\\]|\\.)*"\s*)+),\s*\w+\s*\}')


def verb_tables():
    """Each program's control verbs, read from its vc_verb_t tables (the
    supervisor's in cli/up.c): {"vc-front": ["status", ...], "vc": [...]}."""
    out = {}
    paths = sorted(glob.glob(os.path.join(REPO, "daemons", "**", "*.c"), recursive=True))
    for path in paths + [os.path.join(REPO, "cli", "up.c")]:
        with open(path) as f:
            src = f.read()
        rel = os.path.relpath(path, REPO)
        owner = "vc" if rel.startswith("cli") else rel.split(os.sep)[1]
        for m in re.finditer(r"vc_verb_t \w+\[\] = \{(.*?)\n\};", src, re.S):
            out.setdefault(owner, []).extend(r.group(1) for r in VERB_ROW.finditer(m.group(1)))
    return out


def man_verbs(program):
    page = os.path.join(REPO, "docs", "man", f"{program}.{1 if program == 'vc' else 8}")
    with open(page) as f:
        text = f.read()
    assert ".SH CONTROL" in text, f"{page} has no CONTROL section"
    section = text.split(".SH CONTROL", 1)[1].split("\n.SH ", 1)[0]
    return [re.match(r"\\fB(.+?)\\fR", e).group(1).replace("\\-", "-") for e in section.split(".TP\n")[1:]]


def test_every_programs_control_verbs_are_on_its_man_page():
    tables = verb_tables()
    assert {"vc", "vc-front", "vc-php", "vc-bus", "vc-cache", "vc-acme", "vc-fed", "vc-mesh", "vc-nats",
            "vc-panel"} <= set(tables), tables.keys()
    assert "rooms" in tables["vc-front"], "a backend's verbs are in a table too"
    assert sum(map(len, tables.values())) > 70
    for program, verbs in tables.items():
        assert man_verbs(program) == verbs, program
