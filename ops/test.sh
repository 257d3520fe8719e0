#!/bin/sh
# Installs what Velocity needs, builds it, and runs every test: the format
# check, the unit tests (plain and under ASan + UBSan), and the integration
# tests against the real daemons. Exits non-zero on the first failure.
set -eu
cd "$(dirname "$0")/.."
./ops/install-deps.sh

echo "== format (clang-format)"
files=$(git ls-files '*.c' '*.h')
clang-format --dry-run --Werror $files

echo "== build"
./ops/build.sh build

echo "== unit tests"
(cd build && ctest --output-on-failure)

echo "== unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
./ops/build.sh build-asan Sanitize
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure)

echo "== integration tests"
# Debian's python3 has the python3-* packages the tests use.
cd integration
/usr/bin/python3 -m pytest -q -p no:cacheprovider "$@"
