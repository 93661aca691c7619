#!/usr/bin/env bash
# ctest tools.install_example: `cmake --install` into a temporary prefix, then configure, build
# and run the example experiments against the installed package (find_package(dplab)):
# mnist_experiment (a Trainer built from objects, stepped by hand; one process and `mpiexec -n
# 2`); under `mpiexec -n 2`: vgg_fashion (its own model
# through the full driver), topk_algo (its own algorithm, algo=topk) and dpsgd (a decentralised
# algorithm on the communication meter, traced, with consensus evaluation), each stopped after 2
# epochs and resumed for a third, and csv_dataset (its own dataset and model).
set -euo pipefail
build="$1"
source="$2"
mpiexec="$3"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/dplab-install-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
test -f "$tmp/prefix/lib/cmake/dplab/dplabConfig.cmake"
test -f "$tmp/prefix/include/dplab/core/tensor.h"
test -f "$tmp/prefix/include/dplab/train/loop/trainer.h"
test -x "$tmp/prefix/bin/dplab"
cmake -S "$source/tools/examples/mnist_experiment" -B "$tmp/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" ||
  { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" || exit 1
# One process, then two ranks with an output directory: its exit status says whether the test
# accuracy passed 0.9 (chance 0.1); it prints a line of its own after each epoch.
OMP_NUM_THREADS=1 "$tmp/build/mnist_experiment" 1 >"$tmp/exp1.log" 2>&1 || { cat "$tmp/exp1.log"; exit 1; }
cat "$tmp/exp1.log"
OMP_NUM_THREADS=1 "$mpiexec" -n 2 "$tmp/build/mnist_experiment" 2 "$tmp/exp-run" >"$tmp/exp2.log" 2>&1 ||
  { cat "$tmp/exp2.log"; exit 1; }
cat "$tmp/exp2.log"
# 1024 samples over 2 ranks at batch 32: 16 steps an epoch.
grep -q "^after epoch 2 (global step 32): training loss .* (mean over the epoch's samples, all ranks)" "$tmp/exp2.log" ||
  { echo "mnist_experiment: no line of its own after epoch 2 at step 32"; exit 1; }
grep -Eq '"world_size": ?2,?$' "$tmp/exp-run/run.json" || { echo "run.json: not 2 ranks"; exit 1; }
test "$(grep -c '"kind": *"epoch"' "$tmp/exp-run/metrics.jsonl")" = 2 ||
  { echo "mnist_experiment: expected 2 epoch records"; exit 1; }
grep -q '"dplab.model":"mnist_cnn"' "$tmp/exp-run/final.safetensors" ||
  { echo "mnist_experiment: final.safetensors does not name mnist_cnn"; exit 1; }

cmake -S "$source/tools/examples/vgg_fashion" -B "$tmp/vgg" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure-vgg.log" ||
  { cat "$tmp/configure-vgg.log"; exit 1; }
cmake --build "$tmp/vgg" || exit 1
# Its --help lists its registry: the built-in names and small_vgg.
"$tmp/vgg/vgg_fashion" --help >"$tmp/vgg-help.log"
grep -q "^  small_vgg  *two VGG blocks" "$tmp/vgg-help.log" && grep -q "^  resnet18 " "$tmp/vgg-help.log" ||
  { echo "vgg_fashion --help does not list small_vgg and the built-in models"; cat "$tmp/vgg-help.log"; exit 1; }
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

build_example() {  # NAME: configure and build tools/examples/NAME against the prefix
  cmake -S "$source/tools/examples/$1" -B "$tmp/$1" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure-$1.log" ||
    { cat "$tmp/configure-$1.log"; exit 1; }
  cmake --build "$tmp/$1" || exit 1
}
json_number() {  # KEY LINE: the number KEY holds in one JSON line
  sed -nE "s/.*\"$1\": ?(-?[0-9.eE+-]+).*/\1/p" <<<"$2"
}

# ---- topk_algo: an algorithm written outside the library, chosen with algo=topk ----------------
build_example topk_algo
"$tmp/topk_algo/topk_algo" --help >"$tmp/topk-help.log"
grep -q "^  topk  *top-k sparsified .*\[keys: topk.ratio\]" "$tmp/topk-help.log" ||
  { echo "topk_algo --help does not list topk"; cat "$tmp/topk-help.log"; exit 1; }
run="$tmp/topk-run"
topk() {
  OMP_NUM_THREADS=1 "$mpiexec" -n 2 "$tmp/topk_algo/topk_algo" algo=topk topk.ratio=0.01 \
    batch=32 data.train_limit=2048 data.test_limit=500 progress=off threads=1 "$@"
}
topk epochs=2 out="$run" >"$tmp/topk.log" 2>&1 || { cat "$tmp/topk.log"; exit 1; }
cat "$tmp/topk.log"
# The second epoch's record: 32 steps, each two allgathers (k int32 indices, k f32 values) of
# this rank: 32 x 8 k bytes, k = algo.k (1% of the arena); a dense allreduce would be 100x more.
rec="$(grep '"kind": *"epoch"' "$run/metrics.jsonl" | sed -n 2p)"
k="$(json_number algo.k "$rec")"
bytes="$(json_number comm_bytes "$rec")"
colls="$(json_number comm_collectives "$rec")"
awk -v k="$k" -v b="$bytes" -v c="$colls" 'BEGIN { exit !(k >= 100 && b == 32 * 8 * k && c == 64) }' ||
  { echo "metrics.jsonl: epoch 2 comm_bytes $bytes, collectives $colls, k $k"; echo "$rec"; exit 1; }
topk epochs=3 resume="$run" out="$run" >"$tmp/topk-resume.log" 2>&1 ||
  { cat "$tmp/topk-resume.log"; exit 1; }
cat "$tmp/topk-resume.log"
grep -q "resumed from .* at epoch 3 step 0 (global step 64)" "$tmp/topk-resume.log" ||
  { echo "topk: the resumed run did not continue at global step 64"; exit 1; }
# Resuming restores each rank's residual (save_state): the final model is bitwise the one of an
# uninterrupted 3-epoch run.
topk epochs=3 out="$tmp/topk-straight" >"$tmp/topk-straight.log" 2>&1 ||
  { cat "$tmp/topk-straight.log"; exit 1; }
cmp "$run/final.safetensors" "$tmp/topk-straight/final.safetensors" ||
  { echo "topk: the resumed run's final model differs from the uninterrupted run's"; exit 1; }
acc="$(sed -n 's/^test accuracy: //p' "$tmp/topk-resume.log")"
# Fashion-MNIST has 10 classes: chance is 0.1, and a chance-level classifier's accuracy on 500
# test images has sd 0.013, so 0.5 is 30 sd above it (this run, 1% of the gradient per step,
# reaches 0.68 after 3 epochs; allreduce, 0.7).
awk -v a="$acc" 'BEGIN { exit !(a > 0.5) }' || { echo "topk: test accuracy $acc <= 0.5"; exit 1; }

# ---- dpsgd: a decentralised algorithm on the meter, its exchange overlapped across steps --------
build_example dpsgd
run="$tmp/dpsgd-run"
dpsgd() {
  OMP_NUM_THREADS=1 "$mpiexec" -n 2 "$tmp/dpsgd/dpsgd" algo=dpsgd batch=32 \
    data.train_limit=1024 data.test_limit=200 progress=off threads=1 "$@"
}
dpsgd epochs=2 out="$run" trace=true >"$tmp/dpsgd.log" 2>&1 || { cat "$tmp/dpsgd.log"; exit 1; }
cat "$tmp/dpsgd.log"
# Epoch 2: 16 steps, each posting one exchange (2 ranks: one neighbour, one message of the whole
# model). Communication counts where it completes (docs/metrics_schema.md): the exchange posted in
# epoch 1's last step completes in that epoch's drain (outside the epochs), and so does epoch 2's
# last, so epoch 2 counts 15. The consensus model is evaluated as the run's model (test_acc), beside
# rank 0's own (test_acc_rank0); the exchanges show in the trace under their name.
rec="$(grep '"kind": *"epoch"' "$run/metrics.jsonl" | sed -n 2p)"
msgs="$(json_number comm_messages "$rec")"
test "$msgs" = 15 || { echo "dpsgd: epoch 2 comm_messages $msgs, expected 15"; echo "$rec"; exit 1; }
grep -q '"test_acc_rank0"' <<<"$rec" || { echo "dpsgd: no evaluation of rank 0's own model"; exit 1; }
test "$(json_number test_loss "$rec")" != "$(json_number test_loss_rank0 "$rec")" ||
  { echo "dpsgd: test_loss is rank 0's model, not the consensus"; echo "$rec"; exit 1; }
grep -q '"name": *"dpsgd exchange"' "$run/trace/rank_0.json" ||
  { echo "dpsgd: no dpsgd exchange events in the trace"; exit 1; }
dpsgd epochs=3 resume="$run" out="$run" >"$tmp/dpsgd-resume.log" 2>&1 ||
  { cat "$tmp/dpsgd-resume.log"; exit 1; }
dpsgd epochs=3 out="$tmp/dpsgd-straight" >"$tmp/dpsgd-straight.log" 2>&1 ||
  { cat "$tmp/dpsgd-straight.log"; exit 1; }
cmp "$run/final.safetensors" "$tmp/dpsgd-straight/final.safetensors" ||
  { echo "dpsgd: the resumed run's final model differs from the uninterrupted run's"; exit 1; }

# ---- csv_dataset: a Dataset read from CSV, and an MLP ------------------------------------------
build_example csv_dataset
csv="$tmp/moons"
mkdir -p "$csv"
"$tmp/csv_dataset/csv_dataset" make-data "$csv"
test "$(grep -vc '^#' "$csv/train.csv")" = 2000 || { echo "make-data: not 2000 training lines"; exit 1; }
run="$tmp/csv-run"
OMP_NUM_THREADS=1 "$mpiexec" -n 2 "$tmp/csv_dataset/csv_dataset" data="csv:$csv" epochs=5 \
  progress=off threads=1 out="$run" >"$tmp/csv.log" 2>&1 || { cat "$tmp/csv.log"; exit 1; }
cat "$tmp/csv.log"
test "$(grep -c '"kind": *"epoch"' "$run/metrics.jsonl")" = 5 ||
  { echo "csv_dataset: expected 5 epoch records"; cat "$run/metrics.jsonl"; exit 1; }
grep -q '"dplab.model":"mlp"' "$run/final.safetensors" || { echo "final model is not mlp"; exit 1; }
# Two balanced classes (chance 0.5, sd 0.022 on 500 test points); the moons are not linearly
# separable: logistic regression on these files reaches 0.90 (torch, LBFGS), the MLP 1.0 after 5
# epochs, so 0.95 asks for what only a non-linear model learns.
acc="$(sed -n 's/^test accuracy: //p' "$tmp/csv.log")"
awk -v a="$acc" 'BEGIN { exit !(a > 0.95) }' || { echo "csv_dataset: test accuracy $acc <= 0.95"; exit 1; }
# A malformed line: a runtime error (exit 1) naming the file, the line and what was expected.
bad="$tmp/bad-csv"
mkdir -p "$bad"
printf '# x,y,class\n0.1,0.2,0\n0.3,abc,1\n' >"$bad/train.csv"
cp "$bad/train.csv" "$bad/test.csv"
set +e
"$tmp/csv_dataset/csv_dataset" data="csv:$bad" epochs=1 progress=off >"$tmp/bad.log" 2>&1
status=$?
set -e
test "$status" = 1 || { echo "malformed csv: exit status $status, expected 1"; cat "$tmp/bad.log"; exit 1; }
grep -q "train.csv:3: feature 2: expected a finite number, found 'abc'" "$tmp/bad.log" ||
  { echo "malformed csv: no FILE:LINE message"; cat "$tmp/bad.log"; exit 1; }

# The installed command runs from its prefix (RPATH $ORIGIN/../lib).
"$tmp/prefix/bin/dplab" --help >/dev/null
