#!/usr/bin/python3
"""Holds a daemon's rooms to their rule: its core/ depends on no backend,
and a backend (every other folder of the daemon) on the core alone, never
on another backend (docs/front.md, "Inside the front"). Files at the
daemon's top (its settings.c, read by libcommon) belong to no room: any
room may use them.

Two kinds of arrow are read:
  includes   every #include "..." of the room's .c and .h files, resolved
             as the compiler does (the file's own folder, then the
             daemon's);
  calls      with --build DIR, every symbol an object of one room leaves
             undefined that an object of another room defines (nm): a
             function declared by hand instead of included is caught too.

Usage: ops/check_rooms.py [--build DIR] [DAEMON_DIR ...]
(default daemons/vc-front). Prints each forbidden arrow with its file and
line (or object and symbol) and exits 1 if there is one."""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = "core"


def rooms_of(daemon):
    return sorted(d for d in os.listdir(daemon) if os.path.isdir(os.path.join(daemon, d)))


def room_of(path, daemon):
    rel = os.path.relpath(path, daemon)
    return rel.split(os.sep)[0] if os.sep in rel else None


def allowed(src, dst):
    """May room src use room dst? None is the daemon's top: anyone's."""
    return dst is None or src == dst or dst == CORE


def include_arrows(daemon):
    bad = []
    for room in rooms_of(daemon):
        for path in sorted(glob.glob(os.path.join(daemon, room, "*.[ch]"))):
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    for base in (os.path.dirname(path), daemon):
                        target = os.path.normpath(os.path.join(base, m.group(1)))
                        if os.path.exists(target):
                            break
                    else:
                        continue  # libcommon's, generated, or a system one
                    if not target.startswith(daemon + os.sep):
                        continue
                    dst = room_of(target, daemon)
                    if not allowed(room, dst):
                        bad.append(f"{os.path.relpath(path, ROOT)}:{n}: {room} includes {dst}'s "
                                   f"{os.path.relpath(target, daemon)}")
    return bad


def symbols(obj, *flags):
    out = subprocess.run(["nm", "--format=posix", *flags, obj], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def call_arrows(daemon, build):
    name = os.path.basename(daemon)
    objdir = os.path.join(build, os.path.relpath(daemon, ROOT), "CMakeFiles", f"{name}.dir")
    objs = sorted(glob.glob(os.path.join(objdir, "*", "*.o")))
    if not objs:
        sys.exit(f"check_rooms: no objects of {name} under {objdir}: build it first, or leave out --build")
    defined = {}
    for o in objs:
        for sym in symbols(o, "--defined-only", "--extern-only"):
            defined[sym] = o
    bad = []
    for o in objs:
        src = os.path.basename(os.path.dirname(o))
        for sym in sorted(symbols(o, "--undefined-only")):
            if sym not in defined:
                continue
            dst = os.path.basename(os.path.dirname(defined[sym]))
            if not allowed(src, dst):
                bad.append(f"{src}/{os.path.basename(o)[:-2]} calls {sym}, which "
                           f"{dst}/{os.path.basename(defined[sym])[:-2]} defines")
    return bad


def main():
    args = sys.argv[1:]
    build = None
    if "--build" in args:
        i = args.index("--build")
        build = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    daemons = [os.path.abspath(a) for a in args] or [os.path.join(ROOT, "daemons", "vc-front")]
    bad = []
    for d in daemons:
        if CORE not in rooms_of(d):
            sys.exit(f"check_rooms: {d} has no {CORE}/ room")
        bad += include_arrows(d)
        if build:
            bad += call_arrows(d, build)
    for b in bad:
        print(b)
    if bad:
        print(f"check_rooms: {len(bad)} forbidden arrow(s): the core uses no backend, a backend only the core "
              "(core/seam.h says how backends offer each other things)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
