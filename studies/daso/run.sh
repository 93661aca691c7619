#!/usr/bin/env bash
# DASO study (README.md) on the virtual cluster: every run, then table.md (summarize.py) and
# the figures (figures.sh, `dplab plot`).
#   studies/daso/run.sh                          the study (hours: see README "Cost")
#   QUICK=1 studies/daso/run.sh                  smoke scale: 8 ranks, 3 tiny epochs, seed 0
#   SEEDS="0 1 2 3" METHODS="daso_S1" studies/daso/run.sh
#   BS_PAIRS="4:1 8:4" studies/daso/run.sh       a part of the paper's (B, S) table
#   CLUSTER=cpu-10gbe RPN=2 studies/daso/run.sh  another platform (then say so in the README)
# Every run: mpiexec -n NP (32 = 8 nodes x 4 on gpu4-25gbe), --cluster, measured compute (the
# rank's thread CPU time x COMPUTE_SCALE, one thread per rank), times in metrics.jsonl virtual.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent
CLUSTER=${CLUSTER:-gpu4-25gbe}
# Devices 10x one core of the machine that runs the study (README "Platform": about a GPU's step
# time on ResNet-20 at batch 8, where kernel launches dominate; an estimate, no GPU measured it).
COMPUTE_SCALE=${COMPUTE_SCALE:-0.1}
RPN=${RPN:-4}
METHODS=${METHODS:-"allreduce_f32 allreduce_f16 classic daso_S1 daso_S2 daso_S4 daso_S1_f32blocking"}
# The paper's Table 2 (ResNet-50 / ImageNet, fixed B and S, no phases): B:S pairs.
BS_PAIRS=${BS_PAIRS-"1:0 1:1 2:0 2:1 2:2 4:0 4:1 4:2 4:4 8:0 8:4 8:8 16:0 16:4 16:8 16:16 32:0 32:4 32:16 32:32"}
if [ "$QUICK" = 1 ]; then
  NP=${NP:-8}                          # 2 nodes x 4
  EPOCHS=${EPOCHS:-3}                  # warm-up 1, cycling 1, cool-down 1
  TRAIN_LIMIT=${TRAIN_LIMIT:-256}      # 4 steps of 8 x 8 per epoch
  TABLE_EPOCHS=${TABLE_EPOCHS:-1}
  TEST_LIMIT=${TEST_LIMIT:-256}
  BS_PAIRS=${BS_PAIRS_QUICK:-"4:1"}
else
  NP=${NP:-32}                         # 8 nodes x 4 (the paper's 32-GPU row)
  EPOCHS=${EPOCHS:-8}                  # warm-up 1, cycling 6, cool-down 1
  TRAIN_LIMIT=${TRAIN_LIMIT:-16384}    # 64 steps of 256 per epoch
  TABLE_EPOCHS=${TABLE_EPOCHS:-3}
  TEST_LIMIT=${TEST_LIMIT:-10000}
fi
# DASO's phases at this scale: 1 warm-up and 1 cool-down epoch (the paper does not give them,
# the authors' code uses 4 of 90); a plateau is one epoch whose training loss is not 15% below
# the best so far (patience 0), so the (B, S) cycle fires within 6 cycling epochs (the paper's
# runs have 82: patience 2, 5%). The first runs (patience 1 at 10%, then at 15%) never fired:
# the loss fell ~10% per epoch, so two epochs in a row never stayed within the threshold of the
# best (README "What is run").
DASO_PHASES=(--set daso.warmup_epochs=1 --set daso.cooldown_epochs=1
             --set daso.plateau_patience=0 --set daso.plateau_threshold=0.15)

method_args() {  # the keys of one method
  case $1 in
    allreduce_f32) echo "--algo allreduce" ;;
    allreduce_f16) echo "--algo allreduce --set allreduce.wire=f16" ;;
    classic) echo "--algo allreduce --set allreduce.bucket_cap_mb=0" ;;
    daso_S1) echo "--algo daso --set daso.B_max=4 --set daso.S=1 ${DASO_PHASES[*]}" ;;
    daso_S2) echo "--algo daso --set daso.B_max=4 --set daso.S=2 ${DASO_PHASES[*]}" ;;
    daso_S4) echo "--algo daso --set daso.B_max=4 --set daso.S=4 ${DASO_PHASES[*]}" ;;
    # Ablation: the warm-up and cool-down syncs with the parameters on the wire as f32 instead of
    # the paper's bf16. It tells the bf16 rounding apart from the sync schedule as the cause of
    # the cool-down's rise in loss (README "Results": the schedule it was).
    daso_S1_f32blocking) echo "--algo daso --set daso.B_max=4 --set daso.S=1 ${DASO_PHASES[*]}
                                --set daso.blocking_wire=f32" ;;
    *) echo "unknown method $1" >&2; exit 2 ;;
  esac
}

common=(--config "$HERE/configs/base.toml" --cluster "$CLUSTER" --ranks-per-node "$RPN"
        --set cluster.compute=measured --set threads=1 --set "data.test_limit=$TEST_LIMIT"
        --set "data.train_limit=$TRAIN_LIMIT")
common+=(--set "cluster.compute_scale=$COMPUTE_SCALE")
for seed in $SEEDS; do   # seed-major: a partial study still covers every method
  for m in $METHODS; do
    # shellcheck disable=SC2046
    run_one "$RUNS/$m/seed$seed" "$NP" "${common[@]}" --epochs "$EPOCHS" --seed "$seed" \
      $(method_args "$m")
  done
  for bs in $BS_PAIRS; do
    B=${bs%%:*} S=${bs##*:}
    run_one "$RUNS/table/B${B}_S${S}/seed$seed" "$NP" "${common[@]}" --epochs "$TABLE_EPOCHS" \
      --seed "$seed" --algo daso --set daso.phases=false --set "daso.B_max=$B" --set "daso.S=$S"
  done
done
OUT=$(study_out_dir "$HERE")
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" "$OUT/table.md"
RUNS=$RUNS OUT=$OUT "$HERE/figures.sh"
