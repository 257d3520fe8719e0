#!/bin/sh
# Installs what Velocity needs, builds it, and runs the suite in the
# foreground on the embedded default: ./public if it exists, else the
# bundled example app, on http://localhost:8080 and https://localhost:8443.
# Extra arguments go to `vc up` (for example --root DIR or --workers 8).
set -eu
cd "$(dirname "$0")/.."
./ops/install-deps.sh
./ops/build.sh build
exec ./build/bin/vc up "$@"
