#!/usr/bin/env bash
# Time per epoch with and without the inter-node link (called by run.sh); link.inter is the
# virtual cluster shorthand (docs/virtual_cluster.md, "The link shorthand"): times are virtual.
# Every method at batch 32 per rank, lr 0.03, 2 epochs; "slow" = the study's link
# (100 us, 100 Mbit/s between virtual nodes), "fast" = 0 s, 1000 GB/s (practically free).
# The difference isolates the link's cost from the compute of 8 ranks sharing 2 cores.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB:-$ROOT/build-crossover/bin/dplab}
RANKS=${RANKS:-8}
METHODS=${METHODS:-"allreduce sgp crossover crossover_hier"}
RUNS=${TIMING_RUNS:-$HERE/runs_timing}
NICE=${NICE:-10}
export OMP_NUM_THREADS=1
declare -A LINK=([slow]="100us,100Mbit/s" [fast]="0s,1000GB/s")

for link in slow fast; do
  for method in $METHODS; do
    dir=$RUNS/$method/$link
    [ -f "$dir/done" ] && continue
    rm -rf "$dir"
    mkdir -p "$dir"
    cmd=(mpiexec -n "$RANKS" nice -n "$NICE" "$DPLAB" train --config "$HERE/configs/$method.toml"
         --batch 32 --lr 0.03 --epochs 2 --set "link.inter=${LINK[$link]}" --out "$dir")
    echo "${cmd[*]}" >"$dir/command.txt"
    echo "[$(date -u +%FT%TZ)] ${cmd[*]}"
    "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
    touch "$dir/done"
  done
done
