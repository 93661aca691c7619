#!/usr/bin/env bash
# Regenerates the DASO study (results.md): one run per method, then the table (summarize.py)
# and the figures (figures.sh: dplab plot, from the runs on disk).
#   studies/daso/run.sh
#   METHODS="daso allreduce_f32" REPEATS="0" studies/daso/run.sh
# Every run: mpiexec -n 8, 4 virtual nodes x 2 ranks (ranks_per_node = 2 in the configs), the
# inter-node link by the virtual cluster shorthand (link.inter in the configs, docs/
# virtual_cluster.md "The link shorthand"; override with LINK="1ms,5MB/s").
# A run whose directory holds `done` is skipped, so the script resumes after an interruption.
# Each run's exact command line is in <run dir>/command.txt.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB:-$ROOT/build-daso/bin/dplab}
METHODS=${METHODS:-"allreduce_f32 allreduce_f16 classic daso"}
REPEATS=${REPEATS:-"0 1"}
RUNS=${RUNS:-$HERE/runs}
LINK=${LINK:-}

for rep in $REPEATS; do   # repeat-major: a partial study still covers every method
  for m in $METHODS; do
    dir=$RUNS/$m/rep$rep
    [ -f "$dir/done" ] && continue
    rm -rf "$dir"
    mkdir -p "$dir"
    cmd=(mpiexec -n 8 env OMP_NUM_THREADS=1 "$DPLAB" train --config "$HERE/configs/$m.toml"
         --out "$dir")
    [ -n "$LINK" ] && cmd+=(--set "link.inter=$LINK")
    echo "${cmd[*]}" >"$dir/command.txt"
    echo "[$(date -u +%FT%TZ)] ${cmd[*]}"
    start=$(date +%s)
    "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
    echo "$(($(date +%s) - start))" >"$dir/wall_s.txt"
    touch "$dir/done"
  done
done
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" "$HERE"
RUNS=$RUNS "$HERE/figures.sh"
