#!/usr/bin/python3
"""Lists what the project's own scripts call, read from the scripts
themselves, so that ops/deps-test.sh checks a list nobody keeps by hand:

    programs   what a script declares it needs though no line of it calls
               it (a program another program runs, a plugin's file), as
               "# deps-test needs: program NAME" or "... file PATH"
               (in any of the scripts below);
               the first word of each command in the shell scripts
               (ops/*.sh, .ci/run, deploy/images/build.sh), and the
               program of each subprocess call with a literal name in the Python ones (integration/, bench/,
               deploy/images/);
    modules    the top-level modules the Python ones import, less the
               project's own.

Usage: ops/deps_called.py [--root CHECKOUT]; prints "program NAME FILE",
"file PATH FILE" and "module NAME FILE" lines. A word it cannot tell from a program (a
shell function, a variable's value) it leaves out: it errs on the side of
a shorter list, never on a false alarm."""
import ast
import glob
import os
import re
import sys

SHELL_WORDS = {
    # keywords and builtins of sh, and words that stand before a command
    "if", "then", "else", "elif", "fi", "for", "in", "do", "done", "while", "until", "case", "esac", "function",
    "!", "{", "}", "[", "[[", "]]", "test", "echo", "printf", "read", "set", "unset", "export", "local", "return",
    "exit", "exec", "eval", "cd", "pwd", "shift", "trap", "wait", "kill", "true", "false", "command", "type",
    "break", "continue", "readonly", "umask", "ulimit", "times", "getopts", "hash", "alias", ".", ":", "source",
}
PREFIXES = {"sudo", "env", "time", "nohup", "exec", "command", "timeout", "runuser", "setpriv", "unshare", "chroot"}
# Called only when asked for: not needed by the build, the run or the tests.
OPTIONAL = {
    "perf": "bench/realtime profiles the front with it only when VC_BENCH_PERF is set",
    "systemctl": "ops/install-deps.sh stops the services it installed where systemd runs, after command -v",
}
NAME = re.compile(r"^[a-z][a-z0-9_.+-]*$")


def strip_quotes_and_comments(text):
    """Quoted strings emptied (they are arguments, never commands, and may
    span lines), comments dropped (a '#' that begins a word)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            out.append(text[i:i + 2])
            i += 2
        elif c in "'\"":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if c == '"' and text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;"):
            while i < n and text[i] != "\n":
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def shell_commands(path):
    with open(path) as f:
        text = f.read()
    # Here-documents are data, not commands.
    lines, out, end = text.split("\n"), [], None
    for line in lines:
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if m:
            end = m.group(1)
        out.append(line)
    text = strip_quotes_and_comments("\n".join(out).replace("\\\n", " "))
    text = re.sub(r"\$\(\([^)]*\)\)", "0", text)  # arithmetic
    # A case branch's patterns ("bus | acme)") are not commands.
    lines, depth = [], 0
    for line in text.split("\n"):
        if re.match(r"^\s*case\b", line):
            depth += 1
        elif re.match(r"^\s*esac\b", line):
            depth -= 1
        elif depth:
            line = re.sub(r"^\s*[^()\s][^()]*\)", "", line)
        lines.append(line)
    text = "\n".join(lines)
    functions = set(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(\)", text, re.M))
    found = set()
    for line in text.split("\n"):
        for seg in re.split(r"\|\||&&|[;|&()`]|\$\(|\bthen\b|\bdo\b|\belse\b", line):
            words = seg.split()
            while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or words[0] in PREFIXES or
                             words[0].startswith("-") or words[0] in ("!", "$SUDO")):
                words = words[1:]
                # timeout's duration, runuser's -u USER --, and such: options and their values
                while words and (words[0].startswith("-") or re.match(r"^[0-9.]+[smh]?$", words[0])):
                    words = words[1:]
            if not words:
                continue
            w = words[0]
            if w in ("for", "case"):  # for VAR in WORDS; case WORD in
                continue
            if seg.split()[:2] == ["command", "-v"]:  # asks whether it is there
                continue
            if w.startswith("./") or "/" in w or "$" in w or w in SHELL_WORDS or w in functions:
                continue
            if NAME.match(w):
                found.add(w)
    return found


def python_calls(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    programs, modules = set(), set()
    # shutil.which() asks whether a program is there: optional ones (perf).
    calls = {"run", "Popen", "check_output", "check_call", "call"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args:
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            owner = fn.value.id if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) else ""
            if name not in calls or owner not in ("subprocess", ""):
                continue
            a = node.args[0]
            first = a.elts[0] if isinstance(a, (ast.List, ast.Tuple)) and a.elts else a
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                w = first.value.split()[0] if first.value.split() else ""
                if w.startswith("/usr/") or w.startswith("/bin/") or w.startswith("/sbin/"):
                    w = os.path.basename(w)
                if NAME.match(w) and w not in SHELL_WORDS:
                    programs.add(w)
    return programs, modules


def needs(path, root):
    for kind, name in re.findall(r"^# deps-test needs: (program|file) (\S+)$", open(path).read(), re.M):
        print(kind, name, os.path.relpath(path, root))


def main():
    root = sys.argv[sys.argv.index("--root") + 1] if "--root" in sys.argv else \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shells = sorted(glob.glob(f"{root}/ops/*.sh")) + [f"{root}/.ci/run", f"{root}/deploy/images/build.sh"]
    pythons = sorted(glob.glob(f"{root}/integration/*.py") + glob.glob(f"{root}/integration/*/*.py") +
                     glob.glob(f"{root}/deploy/images/*.py") + glob.glob(f"{root}/ops/*.py"))
    pythons += [p for p in glob.glob(f"{root}/bench/*") if os.path.isfile(p) and open(p, "rb").read(20).startswith(b"#!/usr/bin/python3")]
    own = {os.path.splitext(os.path.basename(p))[0] for p in pythons}
    own |= {os.path.basename(d) for d in glob.glob(f"{root}/integration/*") if os.path.isdir(d)}
    for path in shells:
        for w in sorted(shell_commands(path) - set(OPTIONAL)):
            print("program", w, os.path.relpath(path, root))
        needs(path, root)
    for path in pythons:
        needs(path, root)
        programs, modules = python_calls(path)
        for w in sorted(programs - set(OPTIONAL)):
            print("program", w, os.path.relpath(path, root))
        for m in sorted(modules - own - set(sys.builtin_module_names)):
            print("module", m, os.path.relpath(path, root))


if __name__ == "__main__":
    main()
