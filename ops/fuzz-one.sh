#!/bin/sh
# One fuzz target from its committed corpus for 4 s (ops/test.sh runs
# them side by side, one a core): prints libFuzzer's summary, or on a
# failure its last lines and where the input is kept, and exits 1.
set -eu
t=$1
work=$(mktemp -d)
cp fuzz/corpus/"$t"/* "$work"/
if ! LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan.supp ./build-fuzz/fuzz/fuzz_"$t" -max_total_time=4 \
    -artifact_prefix="$work/" "$work" >"$work/log" 2>&1; then
    tail -40 "$work/log"
    echo "fuzz_$t failed; the input is in $work"
    exit 1
fi
echo "fuzz_$t: $(grep -E "^Done" "$work/log" || echo done)"
rm -rf "$work"
