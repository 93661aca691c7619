#!/usr/bin/env bash
# validate_step_time.sh [OUT]: how far can the virtual cluster's step times be trusted on this
# machine? (issue #37 item 2, docs/virtual_cluster.md "Step-time validation").
#
# For each model and algorithm it
#   1. records a compute profile of the model on this machine just before the case's real run
#      (dplab bench train --profile-out, one thread, batch 16, 1x28x28 input), beside a twin
#      bench doing the same work, as the run's 2 ranks share the host;
#   2. trains for real: mpiexec -n 2, one thread per rank, MPI on this host (wall time);
#   3. trains the same run in virtual time on the `local-shm` preset (fitted to this machine's
#      MPI_Allreduce) with cluster.compute = profile:FILE;
# and compares the mean step time (rank 0's step_time_s, steps 9 and on: the first window holds
# the warm-up) of 2 with that of 3. "overlap" runs GradSync with small buckets (communication
# starts during backward); "no overlap" with one bucket posted after backward.
#
# Prints a markdown table (measured, predicted, error) and the median and worst |error|, then
# where each case's step time goes, real against virtual (both runs are traced over steps 9 and
# on, rank 0, `dplab trace --json`): compute (forward + backward + optimizer spans), the compute
# thread's exposed wait for communication, and the rest of the step (the driver's own work, the
# loader's hand-off, waiting for a core).
# Needs a quiet machine: the real runs' wall times are the reference. Environment: DPLAB
# (build/bin/dplab), MODELS ("mnist_cnn resnet20_cifar"), STEPS (40 per run), REAL_ARGS (extra
# options of the real runs only, e.g. "--set comm.wait=backoff").
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dplab=${DPLAB:-$root/build/bin/dplab}
out=${1:-$root/build/validate_step_time}
models=${MODELS:-"mnist_cnn resnet20_cifar"}
steps=${STEPS:-40}
mkdir -p "$out"
export OMP_NUM_THREADS=1
batch=16
limit=$((2 * batch * steps))  # 2 ranks x batch x steps images: one epoch of `steps` steps
common="--data fashion-mnist --batch $batch --threads 1 --epochs 1 --lr 0.01 --seed 1
  --set data.train_limit=$limit --set data.test_limit=16 --set progress=off
  --set checkpoint.keep=0 --set metrics.every_steps=8 --trace --set trace.steps=9:$steps"
overlap="first_bucket_mb=0.05 bucket_cap_mb=0.1"
serial="first_bucket_mb=1000 bucket_cap_mb=1000"
# id | options (PREFIX: the algorithm's GradSync key prefix, overlap applied to it)
configs=(
  "allreduce overlap|--algo allreduce|allreduce.|$overlap"
  "allreduce no overlap|--algo allreduce|allreduce.|$serial"
  "daso overlap|--algo daso --set daso.warmup_epochs=0 --set daso.cooldown_epochs=0|daso.local.|$overlap"
  "daso no overlap|--algo daso --set daso.warmup_epochs=0 --set daso.cooldown_epochs=0|daso.local.|$serial"
  "dcs3gd|--algo dcs3gd||"
  "diloco H=8|--algo diloco --set diloco.H=8||"
  "sgp|--algo sgp||"
)
# Mean step_time_s of rank 0's step records after the first window.
mean_step() {
  python3 - "$1/metrics.jsonl" <<'EOF'
import json, sys
t = [json.loads(l) for l in open(sys.argv[1]) if '"kind":"step"' in l]
t = [r["step_time_s"] for r in t if r.get("step", 0) > 8]
print(sum(t) / len(t) if t else float("nan"))
EOF
}

# Rank 0's compute, exposed wait and rest of the step (ms) from a traced run.
breakdown() {
  "$dplab" trace --json "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["ranks"][0]
c, w, t = r["compute_s"], r["exposed_wait_s"], r["step_time_s"]
print(f"{1e3 * c:.3f} | {1e3 * w:.3f} | {1e3 * (t - c - w):.3f}")'
}

echo "| model | algorithm | measured s/step | predicted s/step | error |"
echo "|---|---|---|---|---|"
errors=()
rows=()
# Records PROFILE for MODEL beside a twin doing the same work, as the 2 ranks of the real run
# compute side by side on this host's 2 cores (shared caches and memory bandwidth): the profile
# of one rank alone is faster than either rank of the run.
record_profile() {  # record_profile MODEL PROFILE LOG
  local bench=("$dplab" bench train --model "$1" --batch $batch --threads 1 --input 1x28x28
               --steps 30 --warmup 5)
  "${bench[@]}" > "$3.twin" 2>&1 &
  local twin=$!
  "${bench[@]}" --profile-out "$2" > "$3" 2>&1
  wait $twin
}

for model in $models; do
  for entry in "${configs[@]}"; do
    IFS='|' read -r id args prefix buckets <<< "$entry"
    # A profile per case, recorded just before its real run: this VM's speed drifts by 10-30%
    # over seconds to minutes, and a profile minutes old carries that drift into the error.
    profile="$out/$model-${id// /_}.profile.json"
    record_profile "$model" "$profile" "$out/$model-${id// /_}.profile.log"
    extra=()
    for kv in $buckets; do extra+=(--set "$prefix$kv"); done
    tag="$model-${id// /_}"
    rm -rf "$out/$tag.real" "$out/$tag.virtual"
    # shellcheck disable=SC2086
    mpiexec -n 2 "$dplab" train --model "$model" $common $args ${extra[@]+"${extra[@]}"} \
      ${REAL_ARGS:-} --out "$out/$tag.real" > "$out/$tag.real.log" 2>&1
    # shellcheck disable=SC2086
    mpiexec -n 2 "$dplab" train --model "$model" $common $args ${extra[@]+"${extra[@]}"} \
      --cluster local-shm --set cluster.compute=profile:"$profile" \
      --out "$out/$tag.virtual" > "$out/$tag.virtual.log" 2>&1
    real=$(mean_step "$out/$tag.real")
    virt=$(mean_step "$out/$tag.virtual")
    err=$(python3 -c "print(f'{($virt - $real) / $real * 100:+.1f}%')")
    errors+=("$err")
    printf '| %s | %s | %.4f | %.4f | %s |\n' "$model" "$id" "$real" "$virt" "$err"
    rows+=("| $model | $id | $(breakdown "$out/$tag.real") | $(breakdown "$out/$tag.virtual") |")
  done
done
echo
echo "Rank 0, ms per step (traced steps), real | virtual:"
echo
echo "| model | algorithm | compute | exposed wait | rest | compute | exposed wait | rest |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
python3 - "${errors[@]}" <<'EOF'
import statistics, sys
e = [abs(float(x.rstrip('%'))) for x in sys.argv[1:]]
print(f"\n|error|: median {statistics.median(e):.1f}%, worst {max(e):.1f}% over {len(e)} runs")
EOF
