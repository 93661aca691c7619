#!/usr/bin/env bash
# Draws the Crossover-SGD study's figures from the runs on disk (no training): for each per-rank
# batch B, accuracy_time_bB.png: rank 0's test accuracy against cumulative training time (the
# running sum of time_s: these metrics files predate elapsed_s) of each method's run at its best
# learning rate (best_runs.txt, written by summarize.py); and against the per-rank batch, at
# each method's best learning rate, accuracy_batch.png (rank 0's final test accuracy) and
# epoch_time_batch.png (median seconds per training epoch), the points from summarize.py.
#   studies/crossover/figures.sh            (run.sh calls it after summarize.py)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# The current dplab draws (run.sh's training binary may be older): DPLAB_PLOT overrides it.
DPLAB=${DPLAB_PLOT:-$ROOT/build/bin/dplab}
RUNS=${RUNS:-$HERE/runs}
declare -A NAME=([allreduce]="AllReduce-SGD" [sgp]="SGP" [crossover]="Crossover-SGD"
  [crossover_hier]="Hierarchical Crossover-SGD (groups of 2)")

batches=$(awk '{ split($2, p, "/"); print substr(p[1], 2) }' "$HERE/best_runs.txt" | sort -nu)
for batch in $batches; do
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

points=$(mktemp -d)
trap 'rm -rf "$points"' EXIT
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" "$points" "$points/by_batch" >/dev/null
files=() labels=()
for method in allreduce sgp crossover crossover_hier; do
  [ -s "$points/by_batch/$method.jsonl" ] || continue
  files+=("$points/by_batch/$method.jsonl") labels+=("${NAME[$method]}")
done
"$DPLAB" plot "${files[@]}" --label "${labels[@]}" --x batch --y test_acc \
  --title "Fashion-MNIST, mnist_cnn, 8 ranks, 4 epochs x 24k images, best lr of the grid" \
  --x-label "batch per rank (8 ranks)" --y-label "final test accuracy, rank 0's model" \
  --width 820 --height 460 --out "$HERE/accuracy_batch.png"
"$DPLAB" plot "${files[@]}" --label "${labels[@]}" --x batch --y epoch_s \
  --title "Time per epoch, emulated 100 us / 100 Mbit/s inter-node link" \
  --x-label "batch per rank (8 ranks)" --y-label "seconds per training epoch (median)" \
  --width 820 --height 460 --out "$HERE/epoch_time_batch.png"
