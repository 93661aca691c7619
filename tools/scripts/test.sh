#!/usr/bin/env bash
# Installs dependencies, builds dplab and runs the whole test suite through ctest. Idempotent:
# a re-run only rebuilds what changed. Extra arguments go to ctest (e.g. -L data, -LE train).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DPLAB_BUILD_DIR:-$root/build}"
"$root/tools/scripts/install-deps.sh"
DPLAB_BUILD_DIR="$build" "$root/tools/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure -j2 "$@"
