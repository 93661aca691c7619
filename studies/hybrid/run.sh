#!/usr/bin/env bash
# Regenerates the hybrid-SGD study (README.md) on the virtual cluster: every run, then
# results_table.md (summarize.py) and the figures (figures.sh, `dplab plot`).
#   studies/hybrid/run.sh                      MNIST digits, then Fashion-MNIST, K = 1 ... 16
#   DATASETS=mnist SEEDS="0 1" KS="1 2 4 8" studies/hybrid/run.sh
#   QUICK=1 studies/hybrid/run.sh              smoke: fashion-mnist, K = 2, 1 epoch of 2 steps, seed 0
# Every run: --cluster cpu-10gbe (CLUSTER), min(2, K) ranks per node, measured compute (one
# thread per rank); times in metrics.jsonl are virtual. A run whose directory holds `done` is
# skipped (resumable); its exact command is in <run dir>/command.txt; runs/PAUSE holds new runs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
CLUSTER=${CLUSTER:-cpu-10gbe}
DATASETS=${DATASETS:-"mnist fashion-mnist"}
KS=${KS:-"1 2 4 8 16"}
SCALE=()
if [ "$QUICK" = 1 ]; then
  DATASETS=${DATASETS_QUICK:-fashion-mnist} KS=${KS_QUICK:-2}
  SCALE=(--epochs 1 --set data.train_limit=256 --set data.test_limit=256)
fi
ALGOS=${ALGOS:-"each_iter hybrid_8_12 hybrid_8_16 only_end"}
# With K = 1, only_end is each_iter (no communication either way, the final "average" of one
# rank is the identity) and hybrid (8,16) is hybrid (8,12) (stage-3 syncs average one rank):
# the same trajectories, so only these run; summarize.py reports them for both rows.
K1_ALGOS=${K1_ALGOS:-"each_iter hybrid_8_12"}
# The variants run only when asked: hybrid_8_12_mean (stage 2 on the mean of the W gradients,
# not in the thesis) and hybrid_printed (the listing as printed: stage 2 idle), e.g.
#   ALGOS=hybrid_8_12_mean KS="2 4 8" studies/hybrid/run.sh
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent

for seed in $SEEDS; do                # seed-major: a partial study still covers every dataset, K, algo
  for data in $DATASETS; do
    for K in $KS; do
      algos=$ALGOS
      [ "$K" = 1 ] && algos=$K1_ALGOS
      for algo in $algos; do
        # The study's "mnist" is the 10,000-digit subset (8,000 / 2,000), now named mnist-10k;
        # `--data mnist` is the standard 60,000 / 10,000 set. Run directories keep the old name.
        data_arg=$data
        [ "$data" = mnist ] && data_arg=mnist-10k
        rpn=2
        [ "$K" -lt 2 ] && rpn=1
        run_one "$RUNS/$data/$algo/K$K/seed$seed" "$K" --config "$HERE/configs/$algo.toml" \
          --cluster "$CLUSTER" --ranks-per-node "$rpn" --set cluster.compute=measured \
          --set threads=1 --data "$data_arg" --seed "$seed" "${SCALE[@]}"
      done
    done
  done
done
OUT=$(study_out_dir "$HERE")
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" "$OUT"

# Figures: `dplab plot` (figures.sh, which draws from the runs on disk without training).
RUNS=$RUNS OUT=$OUT DATASETS=$DATASETS KS=$KS "$HERE/figures.sh"
