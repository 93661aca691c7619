#!/usr/bin/env bash
# Draws the hybrid study's figures with `dplab plot` from the runs on disk (no training): one per
# dataset and K, test accuracy per epoch, each algorithm the mean of its finished seeds with a
# min-max band, its final record (after the final average) a hollow circle, stage changes
# dashed; and per dataset the virtual training time per epoch at the largest K.
#   RUNS=... OUT=... studies/hybrid/figures.sh            (run.sh calls it after the runs)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
source "$HERE/../lib/plot.sh"
DATASETS=${DATASETS:-"mnist fashion-mnist"}
KS=${KS:-"1 2 4 8 16"}
PLOT_ALGOS="each_iter hybrid_8_12 hybrid_8_16 only_end hybrid_8_12_mean hybrid_printed"
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
OUT=${OUT:-$(study_out_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent

for data in $DATASETS; do
  for K in $KS; do
    plot_clear
    for algo in $PLOT_ALGOS; do collect "$algo" "$RUNS/$data/$algo/K$K"; done
    [ ${#PLOT_DIRS[@]} -gt 0 ] || continue
    plot_mean --final --vline-key algo.stage --x epoch --y test_acc \
      --title "mnist_cnn on $data, K = $K, cpu-10gbe: mean over seeds (dashed: stage changes)" \
      --out "$OUT/accuracy_${data}_K$K.png"
    plot_mean --x epoch --y time_s --y-label "virtual training time per epoch, s" \
      --title "mnist_cnn on $data, K = $K, cpu-10gbe: virtual time per epoch" \
      --out "$OUT/epoch_time_${data}_K$K.png"
  done
done
