#!/usr/bin/env bash
# ctest tools.install_example: `cmake --install` into a temporary prefix, then configure, build
# and run the example experiments against the installed package (find_package(dplab)):
# mnist_experiment (a hand-written loop), and vgg_fashion (its own model through the full
# driver) under `mpiexec -n 2`, stopped after 2 epochs and resumed for a third.
set -euo pipefail
build="$1"
source="$2"
mpiexec="$3"
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

cmake -S "$source/tools/examples/vgg_fashion" -B "$tmp/vgg" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure-vgg.log" ||
  { cat "$tmp/configure-vgg.log"; exit 1; }
cmake --build "$tmp/vgg" || exit 1
run="$tmp/vgg-run"
vgg() {
  OMP_NUM_THREADS=1 "$mpiexec" -n 2 "$tmp/vgg/vgg_fashion" algo=allreduce batch=32 \
    data.train_limit=2048 data.test_limit=500 progress=off threads=1 out="$run" "$@"
}
vgg epochs=2 >"$tmp/vgg.log" 2>&1 || { cat "$tmp/vgg.log"; exit 1; }
cat "$tmp/vgg.log"
# Two ranks of 1024 samples each, 32 per batch: 32 steps per epoch.
grep -Eq '"world_size": ?2,?$' "$run/run.json" || { echo "run.json: not 2 ranks"; exit 1; }
test "$(grep -c '"kind": *"epoch"' "$run/metrics.jsonl")" = 2 ||
  { echo "metrics.jsonl: expected 2 epoch records"; cat "$run/metrics.jsonl"; exit 1; }
grep -q '"dplab.model":"small_vgg"' "$run/final.safetensors" ||
  { echo "final.safetensors does not name small_vgg"; exit 1; }
vgg epochs=3 resume="$run" >"$tmp/vgg-resume.log" 2>&1 || { cat "$tmp/vgg-resume.log"; exit 1; }
cat "$tmp/vgg-resume.log"
grep -q "resumed from .* at epoch 3 step 0 (global step 64)" "$tmp/vgg-resume.log" ||
  { echo "the resumed run did not continue at global step 64"; exit 1; }
# Fashion-MNIST has 10 classes (chance 0.1); three epochs of 2048 images reach well above 0.6.
acc="$(sed -n 's/^test accuracy: //p' "$tmp/vgg-resume.log")"
awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }' || { echo "test accuracy $acc <= 0.6"; exit 1; }
# The installed command runs from its prefix (RPATH $ORIGIN/../lib).
"$tmp/prefix/bin/dplab" --help >/dev/null
