#!/usr/bin/python3
"""Holds the source to its layers (docs/testing.md, "Layers"):

  proto/        the wire's messages: uses nothing of ours
  libcommon/    what every program shares (its settings/ too): proto only
  libhtaccess/  the .htaccess and mod_rewrite engine: libcommon and proto
  cli/          vc: the libraries above, never a daemon
  daemons/NAME  one daemon: the libraries above, never cli or another daemon

and, inside a daemon made of folders (vc-front), its parts: core/ uses no
backend, and a backend (every other folder) uses core/ alone, never
another backend (docs/front.md, "Backends, and the parts of the front").
Files at a daemon's top belong to no part: any part may use them.

Two kinds of arrow are read:
  includes   every #include "..." of every .c and .h file, resolved as the
             compiler does (the file's own folder, then its program's
             folder, then the libraries' folders);
  calls      with --build DIR, every symbol an object leaves undefined
             that only an object of a forbidden place defines (nm): a
             function declared by hand instead of included is caught too;
             and any symbol another object takes from a program's main.c,
             which is a leaf.

Usage: ops/check_layers.py [--build DIR]
Prints each forbidden arrow with its file and line (or object and symbol)
and exits 1 if there is one."""
import concurrent.futures
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARIES = ["proto", "libcommon", "libhtaccess"]
# What each layer may use besides itself.
USES = {
    "proto": [],
    "libcommon": ["proto"],
    "libhtaccess": ["libcommon", "proto"],
    "cli": ["libhtaccess", "libcommon", "proto"],
}
DAEMON_USES = ["libhtaccess", "libcommon", "proto"]
INCLUDE_DIRS = ["libcommon", "libcommon/settings", "libhtaccess"]
CORE = "core"


def place_of(rel):
    """(layer, part) of a path relative to ROOT: layer is "libcommon",
    "cli", "daemons/vc-front"...; part is a daemon's folder or None."""
    bits = rel.split(os.sep)
    if bits[0] == "daemons" and len(bits) > 2:
        return "/".join(bits[:2]), bits[2] if len(bits) > 3 else None
    if bits[0] in LIBRARIES or bits[0] == "cli":
        return bits[0], None
    return None, None


def may_use(src, dst):
    """May place src (layer, part) use place dst?"""
    (sl, sp), (dl, dp) = src, dst
    if dl is None or sl is None:
        return True
    if sl == dl:
        return dp is None or sp == dp or dp == CORE
    return dl in USES.get(sl, DAEMON_USES)


def sources():
    for top in LIBRARIES + ["cli", "daemons"]:
        for path in sorted(glob.glob(os.path.join(ROOT, top, "**", "*.[ch]"), recursive=True)):
            yield os.path.relpath(path, ROOT)


def include_arrows():
    bad = []
    for rel in sources():
        src = place_of(rel)
        program = rel.split(os.sep)[0] if src[0] in LIBRARIES + ["cli"] else src[0]
        bases = [os.path.dirname(rel), program] + INCLUDE_DIRS
        with open(os.path.join(ROOT, rel)) as f:
            for n, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                for base in bases:
                    target = os.path.normpath(os.path.join(base, m.group(1)))
                    if os.path.exists(os.path.join(ROOT, target)):
                        break
                else:
                    continue  # generated (proto's .pb-c.h) or a system one
                dst = place_of(target)
                if not may_use(src, dst):
                    bad.append(f"{rel}:{n}: {describe(src)} includes {target}, of {describe(dst)}")
    return bad


def describe(place):
    layer, part = place
    return f"{layer}'s {part}/" if part else layer


def symbols(obj):
    """(defined global symbols, undefined symbols) of an object: one nm."""
    out = subprocess.run(["nm", "--format=posix", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        bits = line.split()
        if len(bits) < 2:
            continue
        if bits[1] == "U":
            undefined.add(bits[0])
        elif bits[1].isupper():  # upper case: global
            defined.add(bits[0])
    return defined, undefined


def objects(build):
    """Each object of ours that the build links (its link.txt: a stale
    object of a moved file is not read), with the place of its source:
    CMake mirrors the target's source folder under TARGET.dir/, with "__"
    for "..": a daemon's file compiled into vc is the daemon's."""
    for link in sorted(glob.glob(os.path.join(build, "**", "CMakeFiles", "*.dir", "link.txt"), recursive=True)):
        here = os.path.dirname(os.path.dirname(os.path.dirname(link)))  # the target's build folder
        with open(link) as f:
            objs = re.findall(r"(CMakeFiles/[^ ]+\.dir/[^ ]+\.o)\b", f.read())
        for obj in objs:
            bits = os.path.relpath(os.path.join(here, obj), build).split(os.sep)
            i = bits.index("CMakeFiles")
            src = os.path.normpath(os.path.join(*bits[:i], *[".." if b == "__" else b for b in bits[i + 2:]]))[:-2]
            place = place_of(src)
            if place[0] is not None:
                yield os.path.join(here, obj), src, place


def interposed():
    """Symbols a program defines to take the place of a system library's
    (vc-front's open() and phr_parse_request(), exported with
    --export-dynamic-symbol so libh2o binds to them): another program's
    call to open() is libc's, not a call into that program."""
    names = set()
    for cm in glob.glob(os.path.join(ROOT, "**", "CMakeLists.txt"), recursive=True):
        with open(cm) as f:
            names.update(re.findall(r"--export-dynamic-symbol=(\w+)", f.read()))
    return names


def call_arrows(build):
    objs = list(objects(build))
    if not any(p[0] == "libcommon" for _, _, p in objs):
        sys.exit(f"check_layers: no objects of libcommon under {build}: build it first, or leave out --build")
    # nm a few objects at once: it waits on the disk as much as the CPU.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        syms = list(pool.map(symbols, [o for o, _, _ in objs]))
    defined, skip = {}, interposed()
    for (o, src, place), (defs, _) in zip(objs, syms):
        for sym in defs - skip:
            defined.setdefault(sym, []).append((src, place))
    bad = []
    for (o, src, place), (_, undefs) in zip(objs, syms):
        for sym in sorted(undefs):
            where = defined.get(sym)
            if not where or any(may_use(place, p) for _, p in where):
                continue
            bad.append(f"{src} ({describe(place)}) calls {sym}, which {where[0][0]} ({describe(where[0][1])}) defines")
    # A program's main.c is a leaf: what others call lives in a module.
    for (o, src, place), (_, undefs) in zip(objs, syms):
        for sym in sorted(undefs):
            mains = [d for d, _ in defined.get(sym, []) if os.path.basename(d) == "main.c" and d != src]
            if mains and sym != "main":
                bad.append(f"{src} calls {sym}, which {mains[0]} defines: main.c is a leaf, move it to a module")
    return bad


def main():
    args = sys.argv[1:]
    build = None
    if "--build" in args:
        i = args.index("--build")
        build = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if args:
        sys.exit(__doc__)
    bad = include_arrows() + (call_arrows(build) if build else [])
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} forbidden arrow(s): libcommon uses nothing of ours above it; libhtaccess "
              "libcommon only; cli the libraries; a daemon the libraries, never another daemon or cli; in the "
              "front, core/ no backend and a backend core/ alone (core/seam.h says how backends offer each other "
              "things); a main.c is a leaf", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
