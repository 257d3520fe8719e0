#!/usr/bin/python3
"""Every global symbol a daemon, the CLI or libcommon defines names its
module (vc_config_parse, cache_store_purge, ...): a bare word such as
`begin` or `lookup` can collide with a library's, and then the dynamic
linker hands one of them the other's function. Reads the built objects
(nm) and fails on a global symbol with no underscore in its name, but for
the few the program defines on purpose in place of a library's (listed
below with why).

Usage: ops/check_symbols.py BUILD_DIR"""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ON_PURPOSE = {
    "main": "every program's",
    "open": "vc-front's, for libh2o's static files (daemons/vc-front/core/beneath.h)",
}
PARTS = ("daemons", "cli", "libcommon", "libhtaccess")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    objs = [o for part in PARTS for o in glob.glob(os.path.join(build, part, "**", "*.o"), recursive=True)]
    if not objs:
        sys.exit(f"check_symbols: no objects under {build}: build first")
    bad = []
    for o in sorted(objs):
        out = subprocess.run(["nm", "--format=posix", "--defined-only", "--extern-only", o], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            name, kind = line.split()[:2]
            if kind in "TDBR" and "_" not in name.lstrip("_") and name not in ON_PURPOSE:
                bad.append(f"{os.path.relpath(o, build)}: {name}")
    for b in bad:
        print(b)
    if bad:
        print(f"check_symbols: {len(bad)} global symbol(s) that name no module: give them their module's prefix, or "
              "make them static", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
