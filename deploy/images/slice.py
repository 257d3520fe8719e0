#!/usr/bin/python3
"""Cuts one daemon's image out of a Debian root: the files of the packages
the daemon needs (their dependency closure, read from the root's dpkg
database), and nothing else: no shell unless asked, no package manager,
no documentation. Writes a tar for `podman build` (ADD slice.tar /).

usage: slice.py ROOT OUT.tar PACKAGE... [--extra PATH...]
  ROOT     a Debian root (mmdebstrap) where the packages are installed
  PACKAGE  the packages the daemon needs (from dpkg-shlibdeps, plus data)
  --extra  more paths of ROOT to take whole (a directory with all below)

Packages whose only use is to run maintainer scripts (debconf, ucf, perl,
dpkg...) are left out of the closure: an image is never upgraded in place,
it is replaced. The layout is Debian 12's merged /usr: /lib, /bin and
/sbin are links into /usr."""
import os
import re
import sys
import tarfile

# Needed by maintainer scripts, not by a running daemon.
SCRIPTS_ONLY = {
    "debconf", "debconf-2.0", "ucf", "perl-base", "perl", "dpkg", "sensible-utils", "coreutils",
    "debianutils", "lsb-base", "init-system-helpers", "adduser", "passwd", "login", "mount",
    "util-linux", "procps", "bash", "grep", "sed", "diffutils", "findutils", "gzip", "tar",
    "libpam-runtime", "libpam-modules", "libpam-modules-bin", "cron", "systemd", "systemd-sysv",
    "php-common", "mawk", "media-types", "ca-certificates-java", "openssl", "libc-bin",
}
MERGED = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
SKIP = re.compile(r"^/usr/share/(doc|man|info|locale|lintian|bug|bash-completion)/")


def read_status(root):
    """package name -> (depends text, provides list) for installed packages."""
    pkgs, provides = {}, {}
    with open(os.path.join(root, "var/lib/dpkg/status"), encoding="utf-8") as f:
        for block in f.read().split("\n\n"):
            fields, key = {}, None
            for line in block.splitlines():
                if line[:1] in (" ", "\t") and key:
                    fields[key] += "\n" + line
                elif ":" in line:
                    key, _, value = line.partition(":")
                    fields[key] = value.strip()
            name = fields.get("Package")
            if not name or "installed" not in fields.get("Status", "").split():
                continue
            deps = ", ".join(x for x in (fields.get("Pre-Depends"), fields.get("Depends")) if x)
            pkgs[name] = deps
            for p in (fields.get("Provides") or "").split(","):
                p = p.split("(")[0].strip()
                if p:
                    provides.setdefault(p, name)
    return pkgs, provides


def closure(wanted, pkgs, provides):
    """Every installed package the wanted ones depend on, alternatives
    resolved to the first installed one."""
    seen, todo = set(), list(wanted)
    while todo:
        name = todo.pop()
        name = name if name in pkgs else provides.get(name, name)
        if name in seen or name in SCRIPTS_ONLY and name not in wanted:
            continue
        if name not in pkgs:
            sys.exit(f"slice: {name} is not installed in the root")
        seen.add(name)
        for dep in filter(None, (d.strip() for d in pkgs[name].split(","))):
            for alt in dep.split("|"):
                alt = alt.split("(")[0].strip().split(":")[0]
                if alt in pkgs or alt in provides:
                    todo.append(alt)
                    break
    return seen


def canonical(path):
    """/lib/x86_64-linux-gnu/libc.so.6 -> usr/lib/x86_64-linux-gnu/libc.so.6"""
    rel = path.lstrip("/")
    top, _, rest = rel.partition("/")
    if top in MERGED and rest:
        rel = MERGED[top] + "/" + rest
    return rel


def package_files(root, name):
    info = os.path.join(root, "var/lib/dpkg/info")
    for candidate in (f"{name}:amd64.list", f"{name}.list"):
        path = os.path.join(info, candidate)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return [line.rstrip("\n") for line in f if line.strip() not in ("/.", "")]
    sys.exit(f"slice: no file list for {name}")


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    root, out = argv[1], argv[2]
    args = argv[3:]
    extra = args[args.index("--extra") + 1:] if "--extra" in args else []
    wanted = args[:args.index("--extra")] if "--extra" in args else args
    pkgs, provides = read_status(root)
    names = closure(wanted, pkgs, provides)
    paths = set()
    for name in names:
        for p in package_files(root, name):
            if not SKIP.match(p):
                paths.add(canonical(p))
    # The links ldconfig made for sonames that differ from the file's name
    # (libphp.so -> libphp8.2.so) are in no package's list.
    for libdir in ("usr/lib", "usr/lib/x86_64-linux-gnu"):
        for entry in os.listdir(os.path.join(root, libdir)):
            rel = f"{libdir}/{entry}"
            full = os.path.join(root, rel)
            if os.path.islink(full) and f"{libdir}/{os.readlink(full)}" in paths:
                paths.add(rel)
    with tarfile.open(out, "w") as tar:
        for top, target in MERGED.items():  # the merged-/usr links
            t = tarfile.TarInfo(top)
            t.type, t.linkname, t.mode = tarfile.SYMTYPE, target, 0o777
            tar.addfile(t)
        for rel in sorted(paths):
            full = os.path.join(root, rel)
            if os.path.islink(full) or os.path.isfile(full):
                tar.add(full, arcname=rel, recursive=False)
            elif os.path.isdir(full):
                tar.add(full, arcname=rel, recursive=False)
        for rel in extra:
            rel = rel.lstrip("/")
            if os.path.lexists(os.path.join(root, rel)):
                tar.add(os.path.join(root, rel), arcname=rel, recursive=True)
    print(f"slice: {out}: {len(names)} packages: {' '.join(sorted(names))}")


if __name__ == "__main__":
    main(sys.argv)
