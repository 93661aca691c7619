#!/usr/bin/env bash
# Installs dependencies, builds dplab and runs the whole test suite through ctest. Idempotent:
# a re-run only rebuilds what changed. Extra arguments go to ctest (e.g. -L data, -LE train).
#
# Without arguments it then builds the fuzz targets (clang, ASan + UBSan; tests/fuzz) into
# build-fuzz and fuzzes each for DPLAB_FUZZ_SECONDS (20) through ctest -L fuzz (a few minutes in
# all, mostly building). DPLAB_TEST_FUZZ=0 leaves that out, =1 runs it also with arguments.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DPLAB_BUILD_DIR:-$root/build}"
fuzz="${DPLAB_TEST_FUZZ:-$([ $# -eq 0 ] && echo 1 || echo 0)}"
"$root/tools/scripts/install-deps.sh"
DPLAB_BUILD_DIR="$build" "$root/tools/scripts/build.sh"
status=0
# The fuzz entries first, so the main suite's ctest summary is the run's closing line.
if [ "$fuzz" = 1 ]; then
  "$root/tools/scripts/fuzz.sh" --ctest || status=$?
fi
ctest --test-dir "$build" --output-on-failure -j2 "$@" || status=$?
exit $status
