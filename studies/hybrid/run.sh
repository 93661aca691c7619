#!/usr/bin/env bash
# Regenerates the hybrid-SGD study (README.md): every run, then results.md and the figure.
#   studies/hybrid/run.sh                      MNIST digits, then Fashion-MNIST
#   DATASETS=mnist SEEDS="0 1" KS="1 2 4 8" studies/hybrid/run.sh
# A run whose directory holds `done` is skipped, so the script resumes after an interruption.
# Each run's exact command line is written to <run dir>/command.txt.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB:-$ROOT/build-hybrid/bin/dplab}
DATASETS=${DATASETS:-"mnist fashion-mnist"}
SEEDS=${SEEDS:-"0 1"}
KS=${KS:-"1 2 4 8"}
ALGOS=${ALGOS:-"each_iter hybrid_8_12 hybrid_8_16 only_end"}
# With K = 1, only_end is each_iter (no communication either way, the final "average" of one
# rank is the identity) and hybrid (8,16) is hybrid (8,12) (stage-3 syncs average one rank):
# the same trajectories, so only these run; summarize.py reports them for both rows.
K1_ALGOS=${K1_ALGOS:-"each_iter hybrid_8_12"}
# The variants run only when asked: hybrid_8_12_mean (stage 2 on the mean of the W gradients,
# not in the thesis) and hybrid_printed (the listing as printed: stage 2 idle), e.g.
#   ALGOS=hybrid_8_12_mean KS="2 4 8" studies/hybrid/run.sh
PLOT_ALGOS="each_iter hybrid_8_12 hybrid_8_16 only_end hybrid_8_12_mean hybrid_printed"
RUNS=${RUNS:-$HERE/runs}
NICE=${NICE:-10}

PAUSE=$RUNS/PAUSE                   # while this file exists no new run starts (quiet benchmarks)
for seed in $SEEDS; do                # seed-major: a partial study still covers every dataset, K, algo
  for data in $DATASETS; do
    for K in $KS; do
      algos=$ALGOS
      [ "$K" = 1 ] && algos=$K1_ALGOS
      for algo in $algos; do
        dir=$RUNS/$data/$algo/K$K/seed$seed
        [ -f "$dir/done" ] && continue
        while [ -e "$PAUSE" ]; do sleep 5; done
        rm -rf "$dir"
        mkdir -p "$dir"
        # The study's "mnist" is the 10,000-digit subset (8,000 / 2,000), now named mnist-10k;
        # `--data mnist` is the standard 60,000 / 10,000 set. Run directories keep the old name.
        data_arg=$data
        [ "$data" = mnist ] && data_arg=mnist-10k
        cmd=(mpiexec -n "$K" nice -n "$NICE" "$DPLAB" train --config "$HERE/configs/$algo.toml"
             --data "$data_arg" --seed "$seed" --out "$dir")
        echo "${cmd[*]}" >"$dir/command.txt"
        echo "[$(date -u +%FT%TZ)] ${cmd[*]}"
        start=$(date +%s)
        "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
        echo "$(($(date +%s) - start))" >"$dir/wall_s.txt"
        touch "$dir/done"
      done
    done
  done
done
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" "$HERE"

# Figures: `dplab plot` (figures.sh, which draws from the runs on disk without training).
RUNS=$RUNS DATASETS=$DATASETS KS=$KS "$HERE/figures.sh"
