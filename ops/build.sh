#!/bin/sh
# Configures and builds Velocity out of tree. Usage: ops/build.sh [DIR [TYPE]]
# TYPE is a CMake build type: RelWithDebInfo (default), Debug, Release, or
# Sanitize (AddressSanitizer + UndefinedBehaviorSanitizer).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
type=${2:-RelWithDebInfo}
# VC_CCACHE=1 (ops/test.sh): compile through ccache where it is installed.
launcher=
if [ -n "${VC_CCACHE:-}" ] && command -v ccache >/dev/null; then
    launcher=-DCMAKE_C_COMPILER_LAUNCHER=ccache
fi
# shellcheck disable=SC2086
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DVC_WERROR=ON $launcher >/dev/null
cmake --build "$dir" -j "$(nproc)"
