#!/usr/bin/env bash
# Draws the Oscars study's figures with `dplab plot` from the runs on disk (no training); each
# method the mean of its seeds with a min-max band; times virtual (metrics.jsonl).
#   oscars_accuracy_time_<setup>.png   test accuracy against virtual elapsed time
#   oscars_images_s_<setup>.png        images/s (virtual) per epoch
#   oscars_wait_<setup>.png            Oscars: rank 0's predicted and measured wait per round per
#                                      epoch (metrics.jsonl holds rank 0's algo.* state only)
#   RUNS=... OUT=... studies/oscars/figures.sh    (run.sh calls it)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
source "$HERE/../lib/plot.sh"
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
OUT=${OUT:-$(study_out_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent
declare -A NAME=([bsp]="BSP (AllReduce-SGD)" [local_sgd]="local SGD (H=4)" [oscars]="Oscars")
for sdir in "$RUNS"/r*; do
  [ -d "$sdir" ] || continue
  s=$(basename "$sdir")
  TITLE="mnist_cnn / Fashion-MNIST, $s (slowed ranks), cpu-10gbe"
  plot_clear
  for m in bsp local_sgd oscars; do collect "${NAME[$m]}" "$sdir/$m"; done
  plot_mean --title "$TITLE" --x elapsed_s --y test_acc --x-label "virtual elapsed time, s" \
    --y-label "test accuracy" --out "$OUT/oscars_accuracy_time_$s.png"
  plot_mean --title "$TITLE" --x epoch --y images_per_s --y-label "images/s (virtual, all ranks)" \
    --out "$OUT/oscars_images_s_$s.png"
  # rank 0's predicted and measured wait per round (metrics.jsonl: algo.* is rank 0's state)
  plot_clear
  collect "Oscars" "$sdir/oscars"
  plot_mean --title "Oscars, $s: rank 0's wait per round, predicted and measured" --x epoch \
    --y algo.wait_pred_us --y algo.wait_meas_us --y-label "wait per round, us (virtual)" \
    --out "$OUT/oscars_wait_$s.png"
done
