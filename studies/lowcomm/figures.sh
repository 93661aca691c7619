#!/usr/bin/env bash
# Draws the low-communication study's figures from the runs on disk (no training) with
# dplab plot, each method the mean of its seeds with a min-max band:
#   <runs>_accuracy_time.png   test accuracy against virtual training time (elapsed_s)
#   <runs>_accuracy_epoch.png  test accuracy against epochs
#   <runs>_bytes_epoch.png     rank 0's payload bytes per epoch (comm_bytes)
#   <runs>_epoch_time.png      virtual time per epoch (time_s, the slowest rank's)
# where <runs> is the runs directory's name (runs, runs_quick).
#   studies/lowcomm/figures.sh                      (run.sh calls it after summarize.py)
#   RUNS=studies/lowcomm/runs_quick studies/lowcomm/figures.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=methods.sh
source "$HERE/methods.sh"
DPLAB=${DPLAB_PLOT:-${DPLAB:-$ROOT/build/bin/dplab}}
RUNS=${RUNS:-$HERE/runs}
/usr/bin/python3 "$HERE/../lib/runs_archive.py" "$RUNS"  # runs.tar.xz expanded if absent
PREFIX=$HERE/$(basename "$RUNS")
TITLE="mnist_cnn / Fashion-MNIST, 32 ranks on cpu-10gbe (8 nodes x 4), virtual time"
case $(basename "$RUNS") in  # the smoke run's periods are not the legend's (methods.sh)
  runs_quick*) TITLE="smoke run (QUICK=1: 6 steps, shortened periods): $TITLE" ;;
esac

# dplab plot groups runs by an option of their run.json, and several methods share every
# option that tells them apart from the others (AllReduce and AllReduce + PowerSGD share algo;
# allreduce.compress is no option of a DiLoCo run). Runs without run.json are grouped by their
# --label, so the figures read links to the metrics files alone, one directory per run.
VIEW=$(mktemp -d)
trap 'rm -rf "$VIEW"' EXIT
runs=() labels=()
for m in $ALL_METHODS; do
  for done in "$RUNS/$m"/seed*/done; do
    [ -f "$done" ] || continue
    run=$(dirname "$done") view=$VIEW/$m/$(basename "$(dirname "$done")")
    mkdir -p "$view"
    ln -s "$run/metrics.jsonl" "$view/metrics.jsonl"
    runs+=("$view") labels+=("${NAME[$m]}")
  done
done
[ ${#runs[@]} -gt 0 ] || { echo "no finished runs under $RUNS" >&2; exit 1; }

plot() {  # the "no run.json: grouped as <label>" notes are expected (above): dropped
  "$DPLAB" plot "${runs[@]}" --label "${labels[@]}" --group-by method --band minmax \
    --width 1000 --height 560 --title "$TITLE" "$@" 2> >(grep -v 'has no run.json' >&2)
}
plot --x elapsed_s --y test_acc --final --x-label "virtual training time, s (evaluation excluded)" \
  --y-label "test accuracy (10,000 images)" --out "${PREFIX}_accuracy_time.png"
plot --x epoch --y test_acc --final --y-label "test accuracy (10,000 images)" \
  --out "${PREFIX}_accuracy_epoch.png"
plot --x epoch --y comm_bytes --y-label "bytes rank 0 sent per epoch" \
  --out "${PREFIX}_bytes_epoch.png"
plot --x epoch --y time_s --y-label "virtual time per epoch, s" --out "${PREFIX}_epoch_time.png"
