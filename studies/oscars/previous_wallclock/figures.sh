#!/usr/bin/env bash
# Draws the Oscars study's figures from the runs on disk (no training):
#   oscars_accuracy_time.png  test accuracy against cumulative training time (rank 0; the running
#                             sum of time_s: these metrics files predate elapsed_s)
#   oscars_idle.png           idle fraction of each rank over the whole run (time waiting in
#                             collectives / epoch time, from runs/<algo>/rank_R.jsonl, summed by
#                             summarize.py), one line per algorithm
#   studies/oscars/figures.sh            (run.sh calls it after the runs)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB_PLOT:-$ROOT/build/bin/dplab}  # the current dplab (the study's build may be older)
declare -A NAME=([allreduce]="BSP (AllReduce-SGD)" [local_sgd]="local SGD, H = 4"
  [oscars]="Oscars (exact, M = 4)")
TITLE="4 ranks, slowdowns 1 / 1 / 1.5 / 2, mnist_cnn, 6 epochs of 4096 samples"

runs=() labels=()
for algo in allreduce local_sgd oscars; do
  [ -f "$HERE/runs/$algo/metrics.jsonl" ] || continue
  runs+=("$HERE/runs/$algo") labels+=("${NAME[$algo]}")
done
"$DPLAB" plot "${runs[@]}" --label "${labels[@]}" --x elapsed_s --y test_acc --title "$TITLE" \
  --x-label "training wall-clock time, s (evaluation excluded)" \
  --y-label "test accuracy (2,000 Fashion-MNIST test images)" --width 820 --height 460 \
  --out "$HERE/oscars_accuracy_time.png"

points=$(mktemp -d)
trap 'rm -rf "$points"' EXIT
/usr/bin/python3 "$HERE/summarize.py" "$HERE" "$points" >/dev/null
files=() labels=()
for algo in allreduce local_sgd oscars; do
  [ -f "$points/$algo.jsonl" ] || continue
  files+=("$points/$algo.jsonl") labels+=("${NAME[$algo]}")
done
"$DPLAB" plot "${files[@]}" --label "${labels[@]}" --x rank --y idle_fraction --title "$TITLE" \
  --x-label "rank (slowdown 1x, 1x, 1.5x, 2x)" \
  --y-label "idle fraction (wait in collectives / epoch time)" --width 820 --height 460 \
  --out "$HERE/oscars_idle.png"
