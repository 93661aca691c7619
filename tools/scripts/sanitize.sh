#!/usr/bin/env bash
# Builds the CPU test suite with AddressSanitizer and UndefinedBehaviorSanitizer (gcc, CUDA off)
# into ${DPLAB_ASAN_BUILD_DIR:-build-asan} and runs it through ctest. Any sanitizer report fails
# its test: UBSan aborts on the first finding (-fno-sanitize-recover), ASan on a memory error or,
# at exit, a leak. Leaks inside MPICH, libgomp and oneDNN's own start-up are suppressed by name
# (tools/scripts/sanitize/lsan.supp), not by turning leak detection off.
#
#   tools/scripts/sanitize.sh                 # build + ctest -LE 'cuda|train'
#   tools/scripts/sanitize.sh -R Tar          # extra arguments go to ctest
#   DPLAB_SANITIZE_LABELS_EXCLUDE='cuda' tools/scripts/sanitize.sh   # include the train tests
#
# The train-labelled tests (whole training runs, about a minute each in a release build) are left
# out by default: under ASan they take several times longer and add nothing the unit tests of the
# same code do not already cover.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DPLAB_ASAN_BUILD_DIR:-$root/build-asan}"
jobs="${DPLAB_JOBS:-$(nproc)}"
exclude="${DPLAB_SANITIZE_LABELS_EXCLUDE:-cuda|train}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ ! -f "$build/build.ninja" ]; then
  # -O1 -g1: fast to build (the usual sanitizer setting), line tables for symbolised stacks.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPLAB_CUDA=OFF \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
fi
cmake --build "$build" -j "$jobs"

supp="$root/tools/scripts/sanitize"
# detect_leaks stays on; the suppression files name the third-party leaks. abort_on_error gives
# a core-style stop ctest reports as a failure; print_stacktrace makes UBSan say where.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=0:check_initialization_order=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$supp/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp}"
# Tests that configure a project of their own against this build (tools.install_example) must
# link the sanitizer runtime too: CMake takes CXXFLAGS and LDFLAGS from the environment.
CXXFLAGS="$san" LDFLAGS="-fsanitize=address,undefined" \
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -LE "$exclude" "$@"
