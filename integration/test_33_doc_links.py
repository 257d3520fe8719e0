"""Every link between the project's own pages leads somewhere: a relative
link in README.md or docs/ names a file of the repository, with the case
it has (a link that works on a case-blind disk and 404s on GitHub is
caught), and a #fragment names a heading of the page it points at; and a
source file the pages name (`daemons/vc-php/worker_link.h`) is where they
say, so a file moved or renamed takes its pages with it. No suite runs."""
import glob
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
# A path of the repository's source named in backquotes: a top folder of
# ours, then a file with a source or page extension (no NAME placeholder:
# an upper-case word stands for any).
SOURCE = re.compile(
    r"`((?:docs|daemons|libcommon|libhtaccess|cli|ops|integration|tests|fuzz|bench|deploy|debian|examples|panel|proto)"
    r"/[a-z0-9_./-]+\.(?:c|h|py|sh|md|php|js|mjs|proto|txt|json|conf|service))`")


def pages():
    return [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True))


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped,
    spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    with open(path) as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    seen, out = {}, set()
    for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, flags=re.M):
        s = slug(m.group(1))
        n = seen.get(s, 0)
        out.add(s if n == 0 else f"{s}-{n}")
        seen[s] = n + 1
    return out


def exists_with_case(path):
    """os.path.exists, but each part of the path spelled as on disk."""
    rel = os.path.relpath(path, REPO)
    here = REPO
    for part in rel.split(os.sep):
        if part == "..":
            return False
        if part == ".":
            continue
        if part not in os.listdir(here):
            return False
        here = os.path.join(here, part)
    return True


def links(path):
    with open(path) as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    for n, line in enumerate(text.splitlines(), 1):
        for m in LINK.finditer(line):
            yield n, m.group(1)


def test_every_relative_link_names_a_file_and_a_heading_that_exist():
    bad = []
    for page in pages():
        for n, target in links(page):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto: ...: not ours to check here
            file, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
            where = f"{os.path.relpath(page, REPO)}:{n}: ({target})"
            if not exists_with_case(dest):
                bad.append(f"{where} no such file")
            elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                bad.append(f"{where} no heading #{fragment} in {os.path.relpath(dest, REPO)}")
    assert not bad, "\n".join(bad)


def test_every_source_file_the_pages_name_exists():
    bad = []
    for page in pages():
        with open(page) as f:
            for n, line in enumerate(f, 1):
                for m in SOURCE.finditer(line):
                    if not exists_with_case(os.path.join(REPO, m.group(1))):
                        bad.append(f"{os.path.relpath(page, REPO)}:{n}: {m.group(1)} is not in the repository")
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_broken_link():
    """The checks themselves: a case-changed name and a missing heading
    are both caught."""
    assert exists_with_case(os.path.join(REPO, "docs", "REALTIME.md"))
    assert not exists_with_case(os.path.join(REPO, "docs", "realtime.md"))
    assert "backends-and-the-parts-of-the-front" in anchors(os.path.join(REPO, "docs", "front.md"))
    assert "no-such-heading" not in anchors(os.path.join(REPO, "docs", "front.md"))
    assert SOURCE.search("see `daemons/vc-php/wlink.h` and") and not SOURCE.search("`daemons/NAME/settings.c`")
