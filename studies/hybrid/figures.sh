#!/usr/bin/env bash
# Draws the hybrid study's figures from the runs on disk (no training): one per dataset and K,
# test accuracy per epoch, each algorithm the mean of its finished seeds with a min-max band,
# its final record (after the final average) a hollow circle, stage changes dashed.
#   studies/hybrid/figures.sh            (run.sh calls it after the runs)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB:-$ROOT/build/bin/dplab}  # the current dplab (run.sh's training binary may be older)
DATASETS=${DATASETS:-"mnist fashion-mnist"}
KS=${KS:-"1 2 4 8"}
PLOT_ALGOS="each_iter hybrid_8_12 hybrid_8_16 only_end hybrid_8_12_mean hybrid_printed"
RUNS=${RUNS:-$HERE/runs}

for data in $DATASETS; do
  for K in $KS; do
    runs=() labels=()
    for algo in $PLOT_ALGOS; do
      for done in "$RUNS/$data/$algo/K$K"/seed*/done; do
        [ -f "$done" ] || continue
        runs+=("$(dirname "$done")") labels+=("$algo")
      done
    done
    [ ${#runs[@]} -gt 0 ] || continue
    # The runs have no run.json: --group-by groups them by their --label, the algorithm.
    "$DPLAB" plot "${runs[@]}" --label "${labels[@]}" --group-by algo --band minmax --final \
      --vline-key algo.stage --x epoch --y test_acc --width 820 --height 480 \
      --title "mnist_cnn on $data, K = $K: mean over seeds (dashed: stage changes)" \
      --out "$HERE/accuracy_${data}_K$K.png" 2> >(grep -v '^note: .* has no run.json' >&2)
  done
done
