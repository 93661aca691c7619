#!/usr/bin/env bash
# DC-S3GD study (README.md) on the virtual cluster:
#   1. step time: per platform (PLATFORMS) a compute-only run (algo local: t_C), AllReduce-SGD
#      and DC-S3GD, a few steps with a step record each; t_ARed of the model's gradient from
#      `dplab bench allreduce --cluster` (virtual, beside its formula) -> Eq. 13 and 14;
#   2. accuracy: AllReduce-SGD and DC-S3GD with lambda0 in {0.2, 0}, same optimizer otherwise;
#   3. results.md (summarize.py) and the figures (figures.sh, `dplab plot`).
#   studies/dcs3gd/run.sh            the study (hours: README "Cost")
#   QUICK=1 studies/dcs3gd/run.sh    smoke scale: 4 ranks, a few steps, seed 0 -> runs_quick/
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent
# comm << compute, comm ~ compute, comm > compute for resnet18_cifar at batch 64 per rank
PLATFORMS=${PLATFORMS:-"cpu-10gbe $HERE/configs/eth1g.toml $HERE/configs/eth100m.toml"}
ACC_CLUSTER=${ACC_CLUSTER:-cpu-10gbe}
RPN=${RPN:-2}
ACC_METHODS=${ACC_METHODS:-"allreduce dcs3gd_l0.2 dcs3gd_l0"}
if [ "$QUICK" = 1 ]; then
  NP=${NP:-4} BATCH=${BATCH:-16} STEP_STEPS=${STEP_STEPS:-3}
  EPOCHS=${EPOCHS:-2} TRAIN_LIMIT=${TRAIN_LIMIT:-128} TEST_LIMIT=${TEST_LIMIT:-256}
  PLATFORMS=${PLATFORMS_QUICK:-"cpu-10gbe $HERE/configs/eth100m.toml"}
else
  NP=${NP:-8} BATCH=${BATCH:-64} STEP_STEPS=${STEP_STEPS:-12}
  EPOCHS=${EPOCHS:-6} TRAIN_LIMIT=${TRAIN_LIMIT:-16384} TEST_LIMIT=${TEST_LIMIT:-10000}
fi
# DC-S3GD with the optimizer of AllReduce-SGD: the lr.* schedule (constant), wd 5e-4 x 1 on
# every parameter (SGD's), momentum 0.9: with a constant lr its v = mu v - lr (g + wd w) is
# PyTorch SGD's update exactly, so the runs differ only by the stale update and its correction.
SAME_OPT=(--set dcs3gd.schedule=loop --set dcs3gd.wd_mult=1 --set dcs3gd.wd_exclude=none)
method_args() {
  case $1 in
    local) echo "--algo local" ;;
    allreduce) echo "--algo allreduce" ;;
    dcs3gd_l0.2) echo "--algo dcs3gd --set dcs3gd.lambda0=0.2 ${SAME_OPT[*]}" ;;
    dcs3gd_l0) echo "--algo dcs3gd --set dcs3gd.lambda0=0 ${SAME_OPT[*]}" ;;
    *) echo "unknown method $1" >&2; exit 2 ;;
  esac
}
pname() { basename "${1%.toml}"; }

common=(--config "$HERE/configs/base.toml" --set cluster.compute=measured
        --set threads=1 --batch "$BATCH" --set "data.test_limit=$TEST_LIMIT")
for seed in $SEEDS; do
  # 1. step time (the local run's "ranks" never talk: its step time is t_C on that platform)
  for P in $PLATFORMS; do
    for m in local allreduce dcs3gd_l0.2; do
      # algo local is one process (each process of a local run would be its own rank 0): the
      # same per-rank batch, so its step time is one rank's compute t_C
      np=$NP rpn=(--ranks-per-node "$RPN")
      [ "$m" = local ] && np=1 rpn=(--ranks-per-node 1)
      # shellcheck disable=SC2046
      run_one "$RUNS/step_time/$(pname "$P")/$m/seed$seed" "$np" "${common[@]}" "${rpn[@]}" --cluster "$P" \
        --seed "$seed" --max-steps "$STEP_STEPS" --set metrics.every_steps=1 --set data.test_limit=1000 \
        --set "data.train_limit=$((np * BATCH * STEP_STEPS))" $(method_args "$m")
    done
  done
  # 2. accuracy
  for m in $ACC_METHODS; do
    # shellcheck disable=SC2046
    run_one "$RUNS/accuracy/$m/seed$seed" "$NP" "${common[@]}" --ranks-per-node "$RPN" \
      --cluster "$ACC_CLUSTER" \
      --seed "$seed" --epochs "$EPOCHS" --set "data.train_limit=$TRAIN_LIMIT" $(method_args "$m")
  done
done
# t_ARed: the model's gradient (f32) allreduced on each platform, virtual time (deterministic)
PARAMS=$(grep -o 'resnet18_cifar ([0-9,]* parameters' "$RUNS"/step_time/*/allreduce/seed*/stdout.txt \
  | head -1 | grep -o '[0-9,]* parameters' | tr -d ', parameters')
for P in $PLATFORMS; do
  f=$RUNS/step_time/$(pname "$P")/t_ared.json
  [ -s "$f" ] && continue
  cmd=("$MPIEXEC" -n "$NP" "$DPLAB" bench allreduce --cluster "$P" --ranks-per-node "$RPN"
       --sizes "$((PARAMS * 4))" --iters 3 --warmup 1 --json)
  printf '%q ' "${cmd[@]}" >"${f%.json}.command.txt"
  "${cmd[@]}" >"$f"
done
OUT=$(study_out_dir "$HERE")
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" "$OUT/results.md"
RUNS=$RUNS OUT=$OUT "$HERE/figures.sh"
