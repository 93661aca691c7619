#!/usr/bin/env bash
# Regenerates the Crossover-SGD study (README.md): every run, then results.md and the figures.
#   studies/crossover/run.sh
#   METHODS="sgp crossover" BATCHES="32" studies/crossover/run.sh
# 8 ranks (4 virtual nodes of 2, emulated 100 us / 100 Mbit/s inter-node link) on Fashion-MNIST,
# mnist_cnn, 4 epochs over the first 24,000 training images, test on the first 5,000.
# For every method and per-rank batch, a learning-rate grid (LRS_<batch>); summarize.py keeps
# the best by rank 0's final test accuracy. A run whose directory holds `done` is skipped, so the
# script resumes after an interruption; each run's exact command is in <run dir>/command.txt.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB:-$ROOT/build-crossover/bin/dplab}
RANKS=${RANKS:-8}
METHODS=${METHODS:-"allreduce sgp crossover crossover_hier"}
BATCHES=${BATCHES:-"32 128 512"}
LRS_32=${LRS_32:-"0.01 0.03 0.1 0.3"}
LRS_128=${LRS_128:-"0.03 0.1 0.3"}
LRS_512=${LRS_512:-"0.03 0.1 0.3 1.0"}
RUNS=${RUNS:-$HERE/runs}
NICE=${NICE:-10}
export OMP_NUM_THREADS=1

for batch in $BATCHES; do
  lrs_var=LRS_$batch
  for method in $METHODS; do
    for lr in ${!lrs_var}; do
      dir=$RUNS/$method/b$batch/lr$lr
      [ -f "$dir/done" ] && continue
      rm -rf "$dir"
      mkdir -p "$dir"
      cmd=(mpiexec -n "$RANKS" nice -n "$NICE" "$DPLAB" train --config "$HERE/configs/$method.toml"
           --batch "$batch" --lr "$lr" --out "$dir")
      echo "${cmd[*]}" >"$dir/command.txt"
      echo "[$(date -u +%FT%TZ)] ${cmd[*]}"
      start=$(date +%s)
      "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
      echo "$(($(date +%s) - start))" >"$dir/wall_s.txt"
      touch "$dir/done"
    done
  done
done

"$HERE/timing.sh"
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" "$HERE"
RUNS=$RUNS "$HERE/figures.sh"  # dplab plot (build/bin/dplab, or DPLAB_PLOT)
