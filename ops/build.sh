#!/bin/sh
# Configures and builds Velocity out of tree. Usage: ops/build.sh [DIR [TYPE]]
# TYPE is a CMake build type: RelWithDebInfo (default), Debug, Release, or
# Sanitize (AddressSanitizer + UndefinedBehaviorSanitizer).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
type=${2:-RelWithDebInfo}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DVC_WERROR=ON >/dev/null
cmake --build "$dir" -j "$(nproc)"
