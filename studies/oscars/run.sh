#!/usr/bin/env bash
# Oscars study (README.md) on the virtual cluster: BSP (AllReduce-SGD), local SGD and Oscars on
# heterogeneous ranks (--slowdown multiplies a rank's virtual compute), at 4 ranks (slowdowns
# 1, 1, 1.5, 2) and 16 ranks (a mix); then results.md (summarize.py: images/s, time to the
# target accuracy, predicted against measured wait per round) and the figures (figures.sh).
#   studies/oscars/run.sh             the study (README "Cost")
#   QUICK=1 studies/oscars/run.sh     smoke: 4 ranks, 2 tiny epochs, seed 0 -> runs_quick/
#   SETUPS="r4" TARGET=0.8 studies/oscars/run.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent
CLUSTER=${CLUSTER:-cpu-10gbe}
RPN=${RPN:-2}
METHODS=${METHODS:-"bsp local_sgd oscars"}
SETUPS=${SETUPS:-"r4 r16"}
declare -A NP=([r4]=4 [r16]=16)
# r4: the issue's 1, 1, 1.5, 2; r16: four ranks each at 1, 1.25, 1.5 and 2
declare -A SLOW=([r4]="2=1.5,3=2"
  [r16]="4=1.25,5=1.25,6=1.25,7=1.25,8=1.5,9=1.5,10=1.5,11=1.5,12=2,13=2,14=2,15=2")
if [ "$QUICK" = 1 ]; then
  SETUPS=${SETUPS_QUICK:-r4}
  EPOCHS=${EPOCHS:-2} TRAIN_LIMIT=${TRAIN_LIMIT:-1024} TEST_LIMIT=${TEST_LIMIT:-512}
  PROFILE=(--set oscars.profile_discard=1 --set oscars.profile_measure=3)
else
  EPOCHS=${EPOCHS:-10} TRAIN_LIMIT=${TRAIN_LIMIT:-16384} TEST_LIMIT=${TEST_LIMIT:-10000}
  PROFILE=()
fi
method_args() {
  case $1 in
    bsp) echo "--algo allreduce" ;;
    local_sgd) echo "--algo local_sgd --set local_sgd.H=4" ;;
    # Eq. 3 as written: no tau cap (oscars.tau_max = 0), the exact search, M = 4
    oscars) echo "--algo oscars --set oscars.M=4 --set oscars.tau_max=0 --set oscars.search=exact ${PROFILE[*]}" ;;
    *) echo "unknown method $1" >&2; exit 2 ;;
  esac
}
common=(--config "$HERE/configs/base.toml" --cluster "$CLUSTER" --ranks-per-node "$RPN"
        --set cluster.compute=measured --set threads=1 --epochs "$EPOCHS"
        --set "data.train_limit=$TRAIN_LIMIT" --set "data.test_limit=$TEST_LIMIT")
for seed in $SEEDS; do
  for s in $SETUPS; do
    for m in $METHODS; do
      # shellcheck disable=SC2046
      run_one "$RUNS/$s/$m/seed$seed" "${NP[$s]}" "${common[@]}" --slowdown "${SLOW[$s]}" \
        --seed "$seed" $(method_args "$m")
    done
  done
done
OUT=$(study_out_dir "$HERE")
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" "$OUT/results.md" "${TARGET:-0.85}"
RUNS=$RUNS OUT=$OUT "$HERE/figures.sh"
