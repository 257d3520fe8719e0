#!/bin/sh
# Installs what Velocity needs, builds it, and runs the suite in the
# foreground on the embedded default: ./public if it exists, else the
# bundled example app, on http://localhost:8080 and https://localhost:8443.
# Extra arguments go to `vc up` (for example --root DIR or --workers 8).
set -eu
cd "$(dirname "$0")/.."
# Only what building and running need: the test tools come with ops/test.sh.
./ops/install-deps.sh run
./ops/build.sh build
# Started as root, the daemons run as "vc" and PHP as "www-data"
# (docs/SECURITY.md): they must be able to enter this checkout, which
# holds the example app and ./var. A checkout under a directory they
# cannot enter (root's home) runs everything as root instead, and says so.
if [ "$(id -u)" -eq 0 ] && [ -z "${VC_ALLOW_ROOT:-}" ]; then
    for u in vc www-data; do
        if ! runuser -u "$u" -- test -x "$PWD/build/bin" 2>/dev/null ||
            ! runuser -u "$u" -- test -r "$PWD/examples/hello/public/index.php" 2>/dev/null; then
            echo "run.sh: user $u cannot enter $PWD (a directory above it is closed to others):" \
                "running the daemons and PHP as root for this demo. Put the checkout where other users" \
                "can read it (for example under /opt) to run it as an installation runs." >&2
            export VC_ALLOW_ROOT=1
            break
        fi
    done
fi
exec ./build/bin/vc up "$@"
