#!/bin/sh
# Builds the Debian package from this checkout (debian/, debhelper,
# dpkg-buildpackage) and checks it with lintian.
# Usage: ops/package.sh [OUTDIR [VERSION]]
#   OUTDIR   where the .deb goes (default: ./dist)
#   VERSION  a version for this build instead of debian/changelog's (an
#            upgrade test builds a newer one from the same tree)
set -eu
cd "$(dirname "$0")/.."
out=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
version=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The tracked files as they are in the working tree (uncommitted changes
# included), without build trees.
mkdir "$work/velocity"
git ls-files -z --cached --others --exclude-standard | grep -zv '^dist/' |
    xargs -0 cp --parents -t "$work/velocity"
# The panel's browser-side libraries, from npm at the lock's versions
# (never committed): the build copies them into the pages.
(cd "$work/velocity/panel/npm" && npm ci --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1) || {
    cat "$work/npm.log"
    echo "package: npm ci in panel/npm failed"
    exit 1
}
if [ -n "$version" ]; then
    (cd "$work/velocity" && {
        printf 'velocity (%s) unstable; urgency=medium\n\n  * Built by ops/package.sh.\n\n -- %s  %s\n\n' \
            "$version" "Velocity developers <team@velocity-server.org>" "$(date -R)"
        cat debian/changelog
    } >debian/changelog.new && mv debian/changelog.new debian/changelog)
fi
(cd "$work/velocity" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -b -uc -us >"$work/build.log" 2>&1) || {
    tail -60 "$work/build.log"
    echo "package: dpkg-buildpackage failed"
    exit 1
}
deb=$(ls "$work"/velocity_*.deb | grep -v dbgsym)
# An error or a warning from lintian fails the build (there are none).
lintian --fail-on error,warning "$work"/velocity_*.changes || {
    echo "package: lintian found the problems above"
    exit 1
}
cp "$deb" "$out/"
echo "package: $out/$(basename "$deb")"
