#!/usr/bin/env bash
# Runs the faults study (README.md): every method x scenario x seed on the virtual cluster
# (32 ranks = 8 nodes x 4 of configs/gpu4-25gbe-r50.toml), then the tables (summarize.py) and
# the figures (figures.sh).
#   studies/faults/run.sh                               # the study (hours of CPU: README.md)
#   QUICK=1 studies/faults/run.sh                       # smoke run: 1 seed, 12 steps, events at 1 s
#   METHODS="allreduce diloco" SCENARIOS="fail" SEEDS="0" studies/faults/run.sh
# Environment: METHODS, SCENARIOS (default: all, methods.sh), SEEDS ("0 1 2"), DPLAB
# (build/bin/dplab), RUNS (runs, or runs_quick with QUICK=1), NICE (10), DRY (1: print the
# commands of the runs not yet done). A run whose directory holds `done` is skipped; one without
# is removed and run again. AllReduce under `fail` stops at the failure (exit 1, by design) and
# is restarted from its last checkpoint into <run>/restart, without the event (the node is
# back); summarize.py places the restart after the node's return.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=methods.sh
source "$HERE/methods.sh"
DPLAB=${DPLAB:-$ROOT/build/bin/dplab}
DRY=${DRY:-0}
METHODS=${METHODS:-$ALL_METHODS}
SCENARIOS=${SCENARIOS:-$ALL_SCENARIOS}
QUICK=${QUICK:-0}
NICE=${NICE:-10}
RANKS=32
if [ "$QUICK" = 1 ]; then
  SEEDS=${SEEDS:-0}
  RUNS=${RUNS:-$HERE/runs_quick}
  EVENTS=$HERE/configs/events/quick
  # 12 steps of ~0.4 virtual s, a checkpoint every 4, H = 4 for the DiLoCos.
  COMMON_QUICK=(--epochs 1 --set data.train_limit=$((RANKS * 16 * 12)) --set data.test_limit=500
    --set checkpoint.every_steps=2)
else
  SEEDS=${SEEDS:-"0 1 2"}
  RUNS=${RUNS:-$HERE/runs}
  EVENTS=$HERE/configs/events
  COMMON_QUICK=()
fi
[ "$DRY" = 1 ] || [ -x "$DPLAB" ] || { echo "no dplab at $DPLAB (tools/scripts/build.sh, or set DPLAB)" >&2; exit 1; }
/usr/bin/python3 "$HERE/../lib/runs_archive.py" "$RUNS"  # runs.tar.xz expanded if absent
export OMP_NUM_THREADS=1

# run DIR EXPECT CMD...: runs CMD into DIR (command.txt, stdout.txt, stderr.txt, wall_s.txt);
# EXPECT is the exit status the run must end with (0, or 1 for a run stopped by a failure).
run() {
  local dir=$1 expect=$2 rc=0 start
  shift 2
  echo "$*" >"$dir/command.txt"
  echo "[$(date -u +%FT%TZ)] $*"
  start=$(date +%s)
  "$@" >"$dir/stdout.txt" 2>"$dir/stderr.txt" || rc=$?
  echo "$(($(date +%s) - start))" >"$dir/wall_s.txt"
  if [ "$rc" -ne "$expect" ]; then
    echo "run ended with exit $rc, expected $expect: $dir (stderr.txt):" >&2
    tail -5 "$dir/stderr.txt" >&2
    exit 1
  fi
}

for seed in $SEEDS; do  # seed-major: a partial study still covers every cell once
  for sc in $SCENARIOS; do
    for m in $METHODS; do
      [ -n "${ARGS[$m]:-}" ] || { echo "unknown method '$m' (methods.sh)" >&2; exit 1; }
      dir=$RUNS/$sc/$m/seed$seed
      [ -f "$dir/done" ] && continue
      quick=()  # dplab refuses keys a run does not read: each method's own period only
      if [ "$QUICK" = 1 ]; then
        quick=("${COMMON_QUICK[@]}")
        case $m in
          diloco) quick+=(--set diloco.H=4) ;;
          sdiloco) quick+=(--set streaming_diloco.H=4) ;;
        esac
      fi
      base=(mpiexec -n "$RANKS" nice -n "$NICE" "$DPLAB" train --config "$HERE/configs/common.toml"
        --cluster "$HERE/configs/gpu4-25gbe-r50.toml" --ranks-per-node 4
        --set "cluster.compute=profile:$HERE/profile_mnist_cnn_b16_h200r50.json"
        ${ARGS[$m]} ${quick[@]+"${quick[@]}"} --seed "$seed")
      events=()
      [ "$sc" = none ] || events=(--set "cluster.events=$EVENTS/$sc.toml")
      if [ "$DRY" = 1 ]; then echo "${base[*]} ${events[*]} --out $dir"; continue; fi
      rm -rf "$dir"
      mkdir -p "$dir"
      if [ "$sc" = fail ] && [ "$m" = allreduce ]; then
        run "$dir" 1 "${base[@]}" "${events[@]}" --out "$dir"
        mkdir -p "$dir/restart"
        run "$dir/restart" 0 "${base[@]}" --resume "$dir" --resume-override cluster.events \
          --out "$dir/restart"
      else
        run "$dir" 0 "${base[@]}" "${events[@]}" --out "$dir"
      fi
      rm -rf "$dir/checkpoints" "$dir/restart/checkpoints"  # the weights are not kept
      touch "$dir/done"
    done
  done
done

[ "$DRY" = 1 ] && exit 0
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" --out "$HERE/$(basename "$RUNS").md"
RUNS=$RUNS "$HERE/figures.sh"
