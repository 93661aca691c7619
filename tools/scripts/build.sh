#!/usr/bin/env bash
# Configures and builds dplab (Release, Ninja) into ${DPLAB_BUILD_DIR:-build}. Re-runs are
# incremental (ccache + Ninja); the CUDA backend is built when a CUDA compiler is found.
# DPLAB_TARGETS: only these targets (e.g. "dplab_cli", the `dplab` command: main-job.sh); all by
# default (tests and examples included).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DPLAB_BUILD_DIR:-$root/build}"
jobs="${DPLAB_JOBS:-$(nproc)}"
# ccache keys on paths relative to the checkout, so a fresh clone reuses earlier builds.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${DPLAB_CMAKE_ARGS:-}
fi
# shellcheck disable=SC2086  # a list of target names
cmake --build "$build" -j "$jobs" ${DPLAB_TARGETS:+--target $DPLAB_TARGETS}
