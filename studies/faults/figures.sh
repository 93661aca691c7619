#!/usr/bin/env bash
# Draws the faults study's figures from the runs on disk (no training) with dplab plot: per
# scenario, test accuracy against virtual time, each method the mean of its seeds with a
# min-max band: <runs>_<scenario>_accuracy_time.png (<runs>: runs or runs_quick). AllReduce
# under `fail` is drawn from summarize.py's joined_metrics.jsonl (the stopped run, then its
# restart placed after the node's return), so run summarize.py first (run.sh does).
#   studies/faults/figures.sh
#   RUNS=studies/faults/runs_quick studies/faults/figures.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=methods.sh
source "$HERE/methods.sh"
DPLAB=${DPLAB_PLOT:-${DPLAB:-$ROOT/build/bin/dplab}}
RUNS=${RUNS:-$HERE/runs}
/usr/bin/python3 "$HERE/../lib/runs_archive.py" "$RUNS"  # runs.tar.xz expanded if absent
PREFIX=$HERE/$(basename "$RUNS")
declare -A WHAT=(
  [none]="no event"
  [straggler]="node 3 computes 3x slower for 40 s from 20 s"
  [fail]="node 3 down from 20 s for 300 s"
  [link]="node 3's link at 10% from 20 s"
)
VIEW=$(mktemp -d)
trap 'rm -rf "$VIEW"' EXIT
for sc in $ALL_SCENARIOS; do
  runs=() labels=()
  for m in $ALL_METHODS; do
    for done in "$RUNS/$sc/$m"/seed*/done; do
      [ -f "$done" ] || continue
      run=$(dirname "$done") view=$VIEW/$sc/$m/$(basename "$(dirname "$done")")
      mkdir -p "$view"
      src=$run/metrics.jsonl
      [ -f "$run/joined_metrics.jsonl" ] && src=$run/joined_metrics.jsonl
      ln -s "$src" "$view/metrics.jsonl"
      runs+=("$view") labels+=("${NAME[$m]}")
    done
  done
  [ ${#runs[@]} -gt 0 ] || continue
  title="faults: ${WHAT[$sc]} (32 ranks, mnist_cnn standing in for ResNet-50 on gpu4-25gbe; virtual time)"
  case $(basename "$RUNS") in runs_quick*) title="smoke run (QUICK=1, events at 1 s): $title" ;; esac
  "$DPLAB" plot "${runs[@]}" --label "${labels[@]}" --group-by method --band minmax \
    --width 1000 --height 560 --title "$title" --x elapsed_s --y test_acc \
    --x-label "virtual training time, s (evaluation excluded)" --y-label "test accuracy" \
    --out "${PREFIX}_${sc}_accuracy_time.png" 2> >(grep -v 'has no run.json' >&2)
done
