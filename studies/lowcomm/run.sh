#!/usr/bin/env bash
# Runs the low-communication study (README.md): every method x seed on the virtual cluster
# cpu-10gbe (32 ranks = 8 nodes x 4), then the tables (summarize.py) and figures (figures.sh).
#   studies/lowcomm/run.sh                         # the full study (hours of CPU: README.md)
#   QUICK=1 studies/lowcomm/run.sh                 # smoke run: 1 seed, 1 epoch of 6 steps
#   METHODS="allreduce diloco" SEEDS="0" studies/lowcomm/run.sh
# Environment: METHODS (default: all, methods.sh), SEEDS (default "0 1 2"), RANKS (32),
# RANKS_PER_NODE (4), CLUSTER (cpu-10gbe), DPLAB (build/bin/dplab), RUNS (runs, or runs_quick
# with QUICK=1), NICE (10), TARGET (summarize.py's target accuracy, default auto), DRY (1: print
# the commands of the runs not yet done, run nothing).
# A run whose directory holds `done` is skipped, so the script resumes after an interruption;
# a directory without `done` (interrupted) is removed and run again. Each run's exact command
# line is in <run dir>/command.txt, its output in stdout.txt / stderr.txt, its wall time in
# wall_s.txt.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=methods.sh
source "$HERE/methods.sh"
DPLAB=${DPLAB:-$ROOT/build/bin/dplab}
DRY=${DRY:-0}
METHODS=${METHODS:-$ALL_METHODS}
QUICK=${QUICK:-0}
RANKS=${RANKS:-32}
RANKS_PER_NODE=${RANKS_PER_NODE:-4}
CLUSTER=${CLUSTER:-cpu-10gbe}
NICE=${NICE:-10}
if [ "$QUICK" = 1 ]; then
  SEEDS=${SEEDS:-0}
  RUNS=${RUNS:-$HERE/runs_quick}
  # One epoch of 6 steps (6 x 16 images per rank) and 1,000 test images: proves the pipeline,
  # measures nothing. Each method's own shortened periods: QUICK_ARGS in methods.sh.
  COMMON_QUICK="--epochs 1 --set data.train_limit=$((RANKS * 16 * 6)) --set data.test_limit=1000"
else
  SEEDS=${SEEDS:-"0 1 2"}
  RUNS=${RUNS:-$HERE/runs}
  COMMON_QUICK=""
fi
[ "$DRY" = 1 ] || [ -x "$DPLAB" ] || { echo "no dplab at $DPLAB (tools/scripts/build.sh, or set DPLAB)" >&2; exit 1; }
/usr/bin/python3 "$HERE/../lib/runs_archive.py" "$RUNS"  # runs.tar.xz expanded if absent
export OMP_NUM_THREADS=1

for seed in $SEEDS; do  # seed-major: a partial study still covers every method
  for m in $METHODS; do
    [ -n "${ARGS[$m]:-}" ] || { echo "unknown method '$m' (methods.sh)" >&2; exit 1; }
    dir=$RUNS/$m/seed$seed
    [ -f "$dir/done" ] && continue
    extra=()  # dplab refuses keys a run does not read: the method's own quick options only
    [ "$QUICK" = 1 ] && extra=($COMMON_QUICK ${QUICK_ARGS[$m]:-})
    cmd=(mpiexec -n "$RANKS" nice -n "$NICE" "$DPLAB" train --config "$HERE/configs/common.toml"
         --cluster "$CLUSTER" --ranks-per-node "$RANKS_PER_NODE" ${ARGS[$m]} ${extra[@]+"${extra[@]}"}
         --seed "$seed" --out "$dir")
    if [ "$DRY" = 1 ]; then echo "${cmd[*]}"; continue; fi
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "${cmd[*]}" >"$dir/command.txt"
    echo "[$(date -u +%FT%TZ)] ${cmd[*]}"
    start=$(date +%s)
    if ! "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"; then
      echo "run failed: $dir (stderr.txt):" >&2
      tail -5 "$dir/stderr.txt" >&2
      exit 1
    fi
    echo "$(($(date +%s) - start))" >"$dir/wall_s.txt"
    touch "$dir/done"
  done
done

[ "$DRY" = 1 ] && exit 0
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" --out "$HERE/$(basename "$RUNS").md" \
  ${TARGET:+--target "$TARGET"}
RUNS=$RUNS "$HERE/figures.sh"
