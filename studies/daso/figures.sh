#!/usr/bin/env bash
# Draws the DASO study's figures from the runs on disk (no training), each method the mean of
# its repeats with a min-max band:
#   daso_epoch_time.png     training time per epoch (rank 0's time_s, evaluation excluded)
#   daso_accuracy_time.png  test accuracy against cumulative training time (the running sum of
#                           time_s: these metrics files predate elapsed_s)
#   studies/daso/figures.sh            (run.sh calls it after summarize.py)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# The current dplab draws (run.sh's training binary may be older): DPLAB_PLOT overrides it.
DPLAB=${DPLAB_PLOT:-$ROOT/build/bin/dplab}
RUNS=${RUNS:-$HERE/runs}
METHODS="allreduce_f32 allreduce_f16 classic daso"
declare -A NAME=([allreduce_f32]="AllReduce-SGD (f32, fused)"
  [allreduce_f16]="AllReduce-SGD (f16 wire, fused)"
  [classic]="classic (f32, one allreduce per tensor)" [daso]="DASO (B_max=4, S=1)")
TITLE="mnist_cnn / Fashion-MNIST, 8 ranks = 4 nodes x 2, inter-node link 2 ms, 2 MB/s"

runs=() labels=()
for m in $METHODS; do
  for done in "$RUNS/$m"/rep*/done; do
    [ -f "$done" ] || continue
    runs+=("$(dirname "$done")") labels+=("${NAME[$m]}")
  done
done
[ ${#runs[@]} -gt 0 ] || { echo "no finished runs under $RUNS" >&2; exit 1; }

plot() {  # The runs have no run.json: --group-by groups them by their --label, the method.
  "$DPLAB" plot "${runs[@]}" --label "${labels[@]}" --group-by method --band minmax \
    --width 900 --height 480 --title "$TITLE" "$@" \
    2> >(grep -v '^note: .* has no run.json' >&2)
}
plot --x epoch --y time_s --y-label "training time per epoch, s" --out "$HERE/daso_epoch_time.png"
plot --x elapsed_s --y test_acc --x-label "cumulative training time, s (evaluation excluded)" \
  --y-label "test accuracy (5,000 images)" --out "$HERE/daso_accuracy_time.png"
