#!/usr/bin/env bash
# Draws the Crossover-SGD / SGP study's figures with `dplab plot` from the runs on disk (no
# training); each method the mean of its seeds with a min-max band; times virtual.
#   accuracy_time_W<w>.png   rank 0's test accuracy against virtual elapsed time, per workers
#   epoch_time_W<w>.png      virtual training time per epoch, per workers
#   accuracy_workers.png     final test accuracy against the number of workers
#   epoch_time_workers.png   mean virtual epoch time against the number of workers
#   epoch_time_workers_profile.png   the same with profile compute (run.sh step 3)
#   RUNS=... OUT=... studies/crossover/figures.sh    (run.sh calls it)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
source "$HERE/../lib/plot.sh"
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
OUT=${OUT:-$(study_out_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent
METHODS="allreduce crossover crossover_hier sgp sgp_interval"
declare -A NAME=([allreduce]="AllReduce-SGD" [crossover]="Crossover-SGD"
  [crossover_hier]="Hierarchical Crossover" [sgp]="SGP" [sgp_interval]="SGP, interval")
TITLE="resnet20_cifar / Fashion-MNIST, batch 16 per rank, gpu4-25gbe"

workers=$(for d in "$RUNS"/*/W*; do [ -d "$d" ] && basename "$d"; done | sort -u -t W -k2 -n)
for W in $workers; do
  plot_clear
  for m in $METHODS; do collect "${NAME[$m]}" "$RUNS/$m/$W"; done
  plot_mean --title "$TITLE, ${W#W} workers" --x elapsed_s --y test_acc \
    --x-label "virtual elapsed time, s" --y-label "rank 0 test accuracy" \
    --out "$OUT/accuracy_time_$W.png"
  plot_mean --title "$TITLE, ${W#W} workers" --x epoch --y time_s \
    --y-label "virtual training time per epoch, s" --out "$OUT/epoch_time_$W.png"
done
# Against the number of workers: one record per run {workers, final test_acc, epoch time},
# written by points.py as a metrics file per run, so `dplab plot --x workers` draws them.
# collect_points RUNS_DIR POINTS_DIR: points.py, then every method's points collected.
collect_points() {
  plot_clear
  /usr/bin/python3 "$HERE/points.py" "$1" "$2"
  for m in $METHODS; do
    [ -d "$2/$m" ] && collect "${NAME[$m]}" "$2/$m"
  done
  return 0
}
points=$(mktemp -d)
trap 'rm -rf "$points"' EXIT
collect_points "$RUNS" "$points/main"
plot_mean --title "$TITLE" --x workers --y test_acc --y-label "rank 0 final test accuracy" \
  --out "$OUT/accuracy_workers.png"
plot_mean --title "$TITLE" --x workers --y time_s --y-label "virtual training time per epoch, s" \
  --out "$OUT/epoch_time_workers.png"
# The same from the profile-compute timing runs (run.sh step 3: one epoch, seed 0).
if [ -d "$RUNS/timing" ]; then
  collect_points "$RUNS/timing" "$points/timing"
  plot_mean --title "$TITLE, compute replayed from a profile" --x workers --y time_s \
    --y-label "virtual training time per epoch, s" --out "$OUT/epoch_time_workers_profile.png"
fi
