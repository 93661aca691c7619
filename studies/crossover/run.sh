#!/usr/bin/env bash
# Crossover-SGD and SGP study (README.md) on the virtual cluster: a learning-rate sweep on a
# validation split (select_lr.py), then every method x workers x seed at its chosen lr on the
# test set, then results.md (summarize.py) and the figures (figures.sh, `dplab plot`).
#   studies/crossover/run.sh                        the study (hours: README "Cost")
#   QUICK=1 studies/crossover/run.sh                smoke scale: 8 workers, 3 steps, seed 0
#   WORKERS="8 16" METHODS="crossover sgp" studies/crossover/run.sh
# Every run: mpiexec -n W, --cluster gpu4-25gbe --ranks-per-node 4 (W/4 nodes), measured compute
# x COMPUTE_SCALE (one thread per rank), per-rank batch 16 whatever W; times in metrics.jsonl
# are virtual.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent
CLUSTER=${CLUSTER:-gpu4-25gbe}
COMPUTE_SCALE=${COMPUTE_SCALE:-0.1}    # devices 10x one core (README "What is run")
RPN=${RPN:-4}
METHODS=${METHODS:-"allreduce crossover crossover_hier sgp sgp_interval"}
SGP_INTERVAL=${SGP_INTERVAL:-4}        # sgp_interval: gossip every 4th step (the paper's I = 42
                                       # is for 90 epochs of ImageNet; this run has ~500 steps)
LR_GRID=${LR_GRID:-"0.05 0.1 0.2"}
VAL_DIR=${VAL_DIR:-$HERE/val_split}    # make_val_split.py: 50,000 train / 10,000 validation
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
if [ "$QUICK" = 1 ]; then
  WORKERS=${WORKERS:-8}
  EPOCHS=${EPOCHS:-1} SWEEP_EPOCHS=${SWEEP_EPOCHS:-1}
  TRAIN_LIMIT=${TRAIN_LIMIT:-384}      # 3 steps of 8 x 16
  TEST_LIMIT=${TEST_LIMIT:-256}
  TIMING_TEST_LIMIT=${TIMING_TEST_LIMIT:-256}
  LR_GRID=${LR_GRID_QUICK:-0.1}
  LR_MIN=${LR_MIN:-0.1} LR_MAX=${LR_MAX:-0.1}   # no widening at the smoke scale
else
  WORKERS=${WORKERS:-"8 16 32 64"}    # 64 ranks of resnet20_cifar: ~8 GiB (README "Cost")
  EPOCHS=${EPOCHS:-4} SWEEP_EPOCHS=${SWEEP_EPOCHS:-2}
  TRAIN_LIMIT=${TRAIN_LIMIT:-16384}    # images per epoch: 128 steps at 8 workers, 16 at 64
  TEST_LIMIT=${TEST_LIMIT:-10000}
  TIMING_TEST_LIMIT=${TIMING_TEST_LIMIT:-1024}   # step 3's runs are for their times only
fi

# resnet20_cifar cut at its blocks (stem with the first block, 8 more blocks, fc: 10 segments):
# many segments, so a rank reaches many peers per round
CX="--set crossover.segments=blocks --set crossover.sampler=balanced"
method_args() {
  case $1 in
    allreduce) echo "--algo allreduce" ;;
    crossover) echo "--algo crossover $CX" ;;
    crossover_hier) echo "--algo crossover $CX --set crossover.hierarchical=true" ;;
    sgp) echo "--algo sgp" ;;
    sgp_interval) echo "--algo sgp --set sgp.interval=$SGP_INTERVAL" ;;
    *) echo "unknown method $1" >&2; exit 2 ;;
  esac
}

[ -f "$VAL_DIR/t10k-labels-idx1-ubyte.gz" ] || /usr/bin/python3 "$HERE/make_val_split.py" "$FMNIST" "$VAL_DIR"
common=(--config "$HERE/configs/base.toml" --cluster "$CLUSTER" --ranks-per-node "$RPN"
        --set cluster.compute=measured --set threads=1 --set "cluster.compute_scale=$COMPUTE_SCALE"
        --set "data.train_limit=$TRAIN_LIMIT"
        --set "data.test_limit=$TEST_LIMIT")

# 1. the lr sweep: seed 0, the validation split (its "test" files are 10,000 training images).
for W in $WORKERS; do
  for m in $METHODS; do
    for lr in $LR_GRID; do
      # shellcheck disable=SC2046
      run_one "$RUNS/lr_sweep/$m/W$W/lr$lr/seed0" "$W" "${common[@]}" --data "fashion-mnist:$VAL_DIR" \
        --epochs "$SWEEP_EPOCHS" --seed 0 --lr "$lr" $(method_args "$m")
    done
  done
done
# 1b. Where a method's best lr is the grid's smallest or largest, the optimum may lie outside:
# the sweep goes on at half (twice) that lr until every best lr is inside what was swept or at a
# bound (select_lr.py --extend). A run that fails (a diverged lr: non-finite loss) is marked
# `failed` and counts as the worst.
LR_MIN=${LR_MIN:-0.0125} LR_MAX=${LR_MAX:-1.6}
while next=$(/usr/bin/python3 "$HERE/select_lr.py" "$RUNS/lr_sweep" --extend "$LR_MIN" "$LR_MAX") &&
      [ -n "$next" ]; do
  while read -r m w lr; do
    dir="$RUNS/lr_sweep/$m/$w/lr$lr/seed0"
    if [ -f "$dir/done" ]; then echo "select_lr.py proposed $dir again" >&2; exit 1; fi
    # shellcheck disable=SC2046
    if ! run_one "$dir" "${w#W}" "${common[@]}" --data "fashion-mnist:$VAL_DIR" \
        --epochs "$SWEEP_EPOCHS" --seed 0 --lr "$lr" $(method_args "$m") </dev/null; then
      echo "counted as the worst lr: $dir" >&2
      touch "$dir/failed" "$dir/done"
    fi
  done <<<"$next"     # (mpiexec reads stdin: the runs take theirs from /dev/null)
done
/usr/bin/python3 "$HERE/select_lr.py" "$RUNS/lr_sweep" >"$RUNS/chosen_lr.txt"

# 2. the study: every seed at the chosen lr, tested on the test set.
for seed in $SEEDS; do
  for W in $WORKERS; do
    for m in $METHODS; do
      lr=$(awk -v m="$m" -v w="W$W" '$1 == m && $2 == w { print $3 }' "$RUNS/chosen_lr.txt")
      [ -n "$lr" ] || { echo "no lr chosen for $m W$W" >&2; exit 1; }
      dir="$RUNS/$m/W$W/seed$seed"
      if [ -f "$dir/done" ] && ! grep -q -- "--lr $lr " "$dir/command.txt"; then
        echo "$dir ran at another lr than chosen_lr.txt's $lr: remove it to rerun" >&2
        exit 1
      fi
      # shellcheck disable=SC2046
      run_one "$dir" "$W" "${common[@]}" --epochs "$EPOCHS" --seed "$seed" --lr "$lr" \
        $(method_args "$m")
    done
  done
done
# 2b. At 64 workers a sweep run is 32 steps, so the chosen lr is noisy: Crossover-SGD was chosen
# at 0.4, SGP at 0.2. Crossover-SGD also runs at 0.2 there (every seed), so the two compare at
# one lr as well. LR_CHECKS: "method workers lr" triples, ';'-separated.
LR_CHECKS=${LR_CHECKS:-"crossover 64 0.2"}
IFS=';' read -ra checks <<<"$LR_CHECKS"
for check in "${checks[@]}"; do
  read -r m W lr <<<"$check"
  [ -n "$lr" ] || { echo "LR_CHECKS: expected 'method workers lr', got '$check'" >&2; exit 2; }
  [[ " $WORKERS " == *" $W "* ]] || continue
  for seed in $SEEDS; do
    # shellcheck disable=SC2046
    run_one "$RUNS/lr_check/$m/W$W/lr$lr/seed$seed" "$W" "${common[@]}" --epochs "$EPOCHS" \
      --seed "$seed" --lr "$lr" $(method_args "$m")
  done
done
# 3. Host-independent times. The measured compute of step 2 is this machine's thread CPU time
# under 8-64 ranks on a few cores: it varies +-20% between epochs with the ranks' involuntary
# context switches. Here every rank's compute is instead a recorded profile of resnet20_cifar at
# batch 16 (PROFILE, `dplab bench train --profile-out`; how it was recorded: the .txt beside it),
# its times x COMPUTE_SCALE as step 2 assumes; communication stays the cost model's. One epoch,
# seed 0: the virtual time is then the same on any host (accuracy is not read from these runs).
PROFILE=${PROFILE:-$HERE/profile_resnet20_cifar_b16_cpu.json}
mkdir -p "$RUNS/timing"
scaled="$RUNS/timing/$(basename "$PROFILE" .json)_x$COMPUTE_SCALE.json"
/usr/bin/python3 "$HERE/../lib/scale_profile.py" "$PROFILE" "$COMPUTE_SCALE" "$scaled"
timing=(--config "$HERE/configs/base.toml" --cluster "$CLUSTER" --ranks-per-node "$RPN"
        --set "cluster.compute=profile:$scaled" --set threads=1
        --set "data.train_limit=$TRAIN_LIMIT" --set "data.test_limit=$TIMING_TEST_LIMIT")
for W in $WORKERS; do
  for m in $METHODS; do
    lr=$(awk -v m="$m" -v w="W$W" '$1 == m && $2 == w { print $3 }' "$RUNS/chosen_lr.txt")
    [ -n "$lr" ] || { echo "no lr chosen for $m W$W in $RUNS/chosen_lr.txt" >&2; exit 1; }
    # shellcheck disable=SC2046
    run_one "$RUNS/timing/$m/W$W/seed0" "$W" "${timing[@]}" --epochs 1 --seed 0 --lr "$lr" \
      $(method_args "$m")
  done
done
OUT=$(study_out_dir "$HERE")
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" "$OUT/results.md"
RUNS=$RUNS OUT=$OUT "$HERE/figures.sh"
