#!/usr/bin/env bash
# Draws the DC-S3GD study's figures from the results on disk (no training, no benchmark):
#   dcs3gd_accuracy.png       test accuracy per epoch of each run (runs/<name>/metrics.jsonl)
#   dcs3gd_accuracy_time.png  the same against cumulative training time (the running sum of
#                             time_s: these metrics files predate elapsed_s)
#   dcs3gd_step_time.png      step time per emulated link (bench.txt) against the blocking
#                             allreduce's time t_ARed, measured and by the paper's eq. 13 / 14
#   studies/dcs3gd/figures.sh            (run.sh calls it after the runs)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB_PLOT:-$ROOT/build/bin/dplab}  # the current dplab (the study's build may be older)
declare -A NAME=([allreduce]="AllReduce-SGD" [dcs3gd]="DC-S3GD (λ0 = 0.2)"
  [dcs3gd_nocomp]="DC-S3GD, no compensation (λ0 = 0)")

runs=() labels=()
for run in allreduce dcs3gd dcs3gd_nocomp; do
  [ -f "$HERE/runs/$run/metrics.jsonl" ] || continue
  runs+=("$HERE/runs/$run") labels+=("${NAME[$run]}")
done
TITLE="Fashion-MNIST, mnist_cnn, 4 ranks x batch 64 (2 virtual nodes x 2)"
"$DPLAB" plot "${runs[@]}" --label "${labels[@]}" --x epoch --y test_acc --title "$TITLE" \
  --y-label "test accuracy" --width 820 --height 460 --out "$HERE/dcs3gd_accuracy.png"
"$DPLAB" plot "${runs[@]}" --label "${labels[@]}" --x elapsed_s --y test_acc --title "$TITLE" \
  --x-label "cumulative training time, s (evaluation excluded)" --y-label "test accuracy" \
  --width 820 --height 460 --out "$HERE/dcs3gd_accuracy_time.png"

points=$(mktemp -d)
trap 'rm -rf "$points"' EXIT
/usr/bin/python3 "$HERE/bench_points.py" "$HERE/bench.txt" "$points"
"$DPLAB" plot "$points"/{eq13,allreduce,eq14,dcs3gd}.jsonl \
  --label "eq. 13: t_C + t_ARed" "AllReduce-SGD (measured)" "eq. 14: max(t_C, t_ARed)" \
  "DC-S3GD (measured)" --x t_ared_ms --y step_ms \
  --x-label "t_ARed: blocking allreduce per step, ms (one point per emulated link)" \
  --y-label "ms per step" --title "Step time, 4 ranks = 2 virtual nodes x 2" \
  --width 820 --height 460 --out "$HERE/dcs3gd_step_time.png"
