#!/usr/bin/env bash
# Issue #20 item 5: dozens of ranks of mnist_cnn on one small machine, in virtual time.
# For each world size in $RANKS: one epoch of Fashion-MNIST (the whole 60,000 training images,
# sharded over the ranks) on the gpu4-25gbe preset (4 ranks per node), measured compute (one
# thread per rank), AllReduce. Each rank runs under /usr/bin/time, so its peak RSS is recorded;
# the script prints, per world size: the peak RSS per rank (min / mean / max), the sum over
# ranks, the wall time of the whole job (mpiexec start to end, start-up and evaluation
# included) and of the epoch's training (the driver's `wall_s`), and the epoch's virtual time.
#   studies/scale/run.sh                 # RANKS="32 64"
#   RANKS=64 OUT=/tmp/scale studies/scale/run.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB:-$ROOT/build/bin/dplab}
RANKS=${RANKS:-"32 64"}
OUT=${OUT:-$HERE/runs}
BATCH=${BATCH:-32}
for n in $RANKS; do
  dir=$OUT/np$n
  rm -rf "$dir"
  mkdir -p "$dir"
  # Each rank: /usr/bin/time writes its peak RSS to rss.<rank> (PMI_RANK, set by MPICH's mpiexec).
  cmd=(mpiexec -n "$n" sh -c 'exec /usr/bin/time -f "rss_kb %M" -o "$0/rss.$PMI_RANK" "$@"' "$dir"
       "$DPLAB" train --model mnist_cnn --data fashion-mnist --epochs 1 --batch "$BATCH"
       --lr 0.05 --momentum 0.9 --algo allreduce --cluster gpu4-25gbe --ranks-per-node 4
       --threads 1 --set progress=off --set checkpoint.every_epochs=0 --out "$dir/run")
  echo "${cmd[*]}" >"$dir/command.txt"
  echo "[$(date -u +%FT%TZ)] $n ranks: ${cmd[*]}"
  start=$(date +%s.%N)
  "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
  end=$(date +%s.%N)
  echo "$end - $start" | bc >"$dir/job_wall_s.txt"
done
/usr/bin/python3 "$HERE/summarize.py" "$OUT" | tee "$OUT/summary.md"
