#!/bin/sh
# Regenerates the DC-S3GD study (results in this directory):
#   1. step time: tests/comm/dcs3gd_bench at 4 ranks = 2 virtual nodes x 2, three modelled
#      inter-node links (link.inter: the virtual cluster shorthand; the bench still times in
#      wall-clock, see results.md) (comm < compute, comm ~ compute, comm > compute) -> bench.txt
#   2. accuracy: dplab train on Fashion-MNIST, 4 ranks, AllReduce-SGD vs DC-S3GD (and the
#      lambda0 = 0 ablation) -> runs/<name>/metrics.jsonl
#   3. figures (figures.sh: dplab plot) -> dcs3gd_accuracy.png, dcs3gd_accuracy_time.png,
#      dcs3gd_step_time.png; the table in results.md is pasted by hand
# Usage: studies/dcs3gd/run.sh [BUILD_DIR]   (default build-dcs3gd at the repository root)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${1:-$ROOT/build-dcs3gd}
cmake --build "$BUILD" -j2 --target dplab_cli dcs3gd_bench
export OMP_NUM_THREADS=1

: > "$HERE/bench.txt"
for LINK in none 2ms,10MB/s 5ms,2MB/s 10ms,1MB/s; do
  SET=""
  [ "$LINK" = none ] || SET="link.inter=$LINK"
  mpiexec -n 4 "$BUILD/tests/comm/dcs3gd_bench" ranks_per_node=2 batch=64 steps=10 rounds=5 \
    $SET | tee -a "$HERE/bench.txt"
done

for RUN in allreduce dcs3gd dcs3gd_nocomp; do
  rm -rf "$HERE/runs/$RUN"
  mpiexec -n 4 "$BUILD/bin/dplab" train --config "$HERE/$RUN.toml" --out "$HERE/runs/$RUN" \
    | tee "$HERE/runs_$RUN.log"
done
rm -f "$HERE"/runs/*/*.safetensors  # weights are not part of the study's record
"$HERE/figures.sh"  # dplab plot (build/bin/dplab, or DPLAB_PLOT)
