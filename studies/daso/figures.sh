#!/usr/bin/env bash
# Draws the DASO study's figures with `dplab plot` from the runs on disk (no training); each
# method is the mean of its seeds with a min-max band. Times are virtual (metrics.jsonl
# time_s / elapsed_s: the platform's cost model plus the ranks' thread CPU time).
#   daso_epoch_time.png      virtual training time per epoch
#   daso_accuracy_time.png   test accuracy against virtual elapsed time
#   daso_accuracy_epoch.png  test accuracy per epoch (DASO's cool-down is the last epoch)
#   daso_B_S.png             DASO's B and S per epoch (rank 0, mean of the seeds), S in {1, 2, 4}
#   daso_table_time.png      the (B, S) table's runs: virtual time per epoch
#   RUNS=... OUT=... studies/daso/figures.sh    (run.sh calls it)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
source "$HERE/../lib/plot.sh"
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
OUT=${OUT:-$(study_out_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent
TITLE=${TITLE:-"resnet20_cifar / Fashion-MNIST, virtual cluster gpu4-25gbe (8 x 4)"}
declare -A NAME=([allreduce_f32]="AllReduce f32" [allreduce_f16]="AllReduce f16 wire"
  [classic]="classic (per tensor)" [daso_S1]="DASO S=1" [daso_S2]="DASO S=2" [daso_S4]="DASO S=4"
  [daso_S1_f32blocking]="DASO S=1, f32 blocking wire")

for m in allreduce_f32 allreduce_f16 classic daso_S1 daso_S2 daso_S4 daso_S1_f32blocking; do
  [ -d "$RUNS/$m" ] || continue
  collect "${NAME[$m]}" "$RUNS/$m"
done
plot_mean --title "$TITLE" --x epoch --y time_s --y-label "virtual training time per epoch, s" \
  --out "$OUT/daso_epoch_time.png"
plot_mean --title "$TITLE" --x elapsed_s --y test_acc --y-label "test accuracy" \
  --x-label "virtual elapsed time, s (metrics elapsed_s)" --out "$OUT/daso_accuracy_time.png"
plot_mean --title "$TITLE" --x epoch --y test_acc --y-label "test accuracy" \
  --out "$OUT/daso_accuracy_epoch.png"
plot_clear
for m in daso_S1 daso_S2 daso_S4; do collect "${NAME[$m]}" "$RUNS/$m"; done
plot_mean --title "DASO: B and S per epoch (rank 0)" --x epoch --y algo.B --y algo.S \
  --y-label "batches" --out "$OUT/daso_B_S.png"
plot_clear
for d in "$RUNS"/table/B*_S*; do [ -d "$d" ] && collect "$(basename "$d")" "$d"; done
plot_mean --title "DASO, fixed (B, S): $TITLE" --x epoch --y time_s \
  --y-label "virtual training time per epoch, s" --out "$OUT/daso_table_time.png"
