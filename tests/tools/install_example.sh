#!/usr/bin/env bash
# ctest tools.install_example: `cmake --install` into a temporary prefix, then configure, build
# and run the example experiment against the installed package (find_package(dplab)).
set -euo pipefail
build="$1"
source="$2"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/dplab-install-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
test -f "$tmp/prefix/lib/cmake/dplab/dplabConfig.cmake"
test -f "$tmp/prefix/include/dplab/core/tensor.h"
test -x "$tmp/prefix/bin/dplab"
cmake -S "$source/tools/examples/mnist_experiment" -B "$tmp/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" ||
  { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" || exit 1
"$tmp/build/mnist_experiment" 20
# The installed command runs from its prefix (RPATH $ORIGIN/../lib).
"$tmp/prefix/bin/dplab" --help >/dev/null
