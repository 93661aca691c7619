#!/usr/bin/env bash
# Draws the Crossover-SGD study's figures from the runs on disk (no training): for each per-rank
# batch B, accuracy_time_bB.png: rank 0's test accuracy against cumulative training time (the
# running sum of time_s: these metrics files predate elapsed_s) of each method's run at its best
# learning rate (best_runs.txt, written by summarize.py).
#   studies/crossover/figures.sh            (run.sh calls it after summarize.py)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB_PLOT:-$ROOT/build/bin/dplab}  # the current dplab (run.sh's training binary may be older)
RUNS=${RUNS:-$HERE/runs}
declare -A NAME=([allreduce]="AllReduce-SGD" [sgp]="SGP" [crossover]="Crossover-SGD"
  [crossover_hier]="Hierarchical Crossover-SGD (groups of 2)")

for batch in $(awk '{ split($2, p, "/"); print substr(p[1], 2) }' "$HERE/best_runs.txt" | sort -nu); do
  runs=() labels=()
  while read -r method run; do
    [ "${run%%/*}" = "b$batch" ] || continue
    runs+=("$RUNS/$method/$run") labels+=("${NAME[$method]}, lr ${run#*/lr}")
  done <"$HERE/best_runs.txt"
  "$DPLAB" plot "${runs[@]}" --label "${labels[@]}" --x elapsed_s --y test_acc \
    --title "Fashion-MNIST, mnist_cnn, 8 ranks x batch $batch, best lr of the grid" \
    --x-label "cumulative training time, s (evaluation excluded; 100 us / 100 Mbit/s link)" \
    --y-label "test accuracy, rank 0's model" --width 820 --height 460 \
    --out "$HERE/accuracy_time_b$batch.png"
done
