#!/bin/sh
# Regenerates the Oscars study: 4 ranks on Fashion-MNIST (4096 training samples, 6 epochs),
# ranks 2 and 3 slowed down 1.5x and 2x (--slowdown 2=1.5,3=2), for BSP (AllReduce-SGD),
# local SGD (H = 4) and Oscars (exact search, M = 4) -> runs/<algo>/metrics.jsonl (rank 0) and
# runs/<algo>/rank_R.jsonl (every rank's epoch time and time waiting in collectives), then the
# table (summarize.py -> summary.md, pasted into results.md) and the figures (figures.sh, dplab
# plot: oscars_accuracy_time.png, oscars_idle.png).
# Usage: studies/oscars/run.sh [BUILD_DIR]   (default build-oscars at the repository root)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${1:-$ROOT/build-oscars}
cmake --build "$BUILD" -j2 --target dplab_cli
export OMP_NUM_THREADS=1
for RUN in allreduce local_sgd oscars; do
  rm -rf "$HERE/runs/$RUN"
  mpiexec -n 4 "$BUILD/bin/dplab" train --config "$HERE/$RUN.toml" --slowdown 2=1.5,3=2 \
    --out "$HERE/runs/$RUN" | tee "$HERE/runs_$RUN.log"
done
rm -f "$HERE"/runs/*/*.safetensors  # weights are not part of the study's record
/usr/bin/python3 "$HERE/summarize.py" "$HERE"
"$HERE/figures.sh"  # dplab plot (build/bin/dplab, or DPLAB_PLOT)
