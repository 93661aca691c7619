#!/usr/bin/env bash
# validate_step_time.sh [OUT]: how far can the virtual cluster's step times be trusted on this
# machine? (issue #37 item 2, docs/virtual_cluster.md "Step-time validation").
#
# For each model, algorithm and repetition it
#   1. records a compute profile of the model on each of the host's 2 cores just before the
#      case's real run (dplab bench train --profile-out, one thread, 1x28x28 input, the two
#      benches at once and each pinned to its core, as the real run's ranks compute side by side);
#   2. trains for real: mpiexec -n 2 -bind-to core (rank r on core r), one thread per rank, MPI
#      on this host (wall time);
#   3. trains the same run in virtual time on the `local-shm` preset (fitted to this machine's
#      MPI_Allreduce), each rank's compute replayed from its own core's profile (the faster
#      core's profile, the other rank slowed by the ratio of the two: option slowdown);
# and compares the mean step time (rank 0's step_time_s, steps 9 and on: the first window holds
# the warm-up) of 2 with that of 3. "overlap" runs GradSync with small buckets (communication
# starts during backward); "no overlap" with one bucket posted after backward.
#
# Prints, per case, the medians over the repetitions of the measured and the predicted step
# time, the error of the medians and each repetition's error; then the median and worst
# |error| over the cases; then, for the last repetition, where each case's step time goes, real
# against virtual (rank 0, traced steps 9 and on, `dplab trace --json`): compute (forward +
# backward + optimizer spans), the compute thread's exposed wait for communication, and the rest
# of the step (the driver's own work, the loader's hand-off, waiting for a core).
# Needs a quiet machine: the real runs' wall times are the reference. Environment: DPLAB
# (build/bin/dplab), MODELS ("mnist_cnn:64 resnet20_cifar:16", MODEL:BATCH per rank), STEPS
# (100 per run), REPEAT (3), CASES (a regex on the case names below, e.g. "^sgp$"; all by
# default), REAL_ARGS (extra options of the real runs only, e.g. "--set comm.wait=backoff").
# Needs 2 cores (one per rank: taskset -c 0 and 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dplab=${DPLAB:-$root/build/bin/dplab}
out=${1:-$root/build/validate_step_time}
models=${MODELS:-"mnist_cnn:64 resnet20_cifar:16"}
steps=${STEPS:-100}
repeat=${REPEAT:-3}
mkdir -p "$out"
export OMP_NUM_THREADS=1
overlap="first_bucket_mb=0.05 bucket_cap_mb=0.1"
serial="first_bucket_mb=1000 bucket_cap_mb=1000"
# id | options | PREFIX (the algorithm's GradSync key prefix) | bucket options applied to it
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
  python3 - "$1/metrics.jsonl" <<'PY'
import json, sys
t = [json.loads(l) for l in open(sys.argv[1]) if '"kind":"step"' in l]
t = [r["step_time_s"] for r in t if r.get("step", 0) > 8]
if not t:
    sys.exit(f"{sys.argv[1]}: no step record after step 8 (STEPS must be at least 16: one "
             "record every 8 steps)")
print(sum(t) / len(t))
PY
}

# Rank 0's compute, exposed wait and rest of the step (ms) from a traced run.
breakdown() {
  "$dplab" trace --json "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["ranks"][0]
c, w, t = r["compute_s"], r["exposed_wait_s"], r["step_time_s"]
print(f"{1e3 * c:.3f} | {1e3 * w:.3f} | {1e3 * (t - c - w):.3f}")'
}

# Records a profile of MODEL on each core, the two at once (as the real run's 2 ranks compute
# side by side: shared caches and memory bandwidth), each process pinned to its core as the
# real run's ranks are. This VM's two cores do not always run at one speed (measured up to 20%
# apart for minutes), and a synchronous step waits for the slower rank.
record_profiles() {  # record_profiles MODEL BATCH PREFIX -> PREFIX.core0.json, PREFIX.core1.json
  local bench=("$dplab" bench train --model "$1" --batch "$2" --threads 1 --input 1x28x28
               --steps "$steps" --warmup 5)
  taskset -c 1 "${bench[@]}" --profile-out "$3.core1.json" > "$3.core1.log" 2>&1 &
  local twin=$!
  taskset -c 0 "${bench[@]}" --profile-out "$3.core0.json" > "$3.core0.log" 2>&1
  wait $twin
}

# The virtual run's compute options from the two cores' profiles: the faster core's profile
# for every rank, the slower core's rank slowed by the ratio of the two (option slowdown
# multiplies a rank's replayed phases); and each rank's step-to-step jitter, a lognormal `slow`
# event of its core's recorded spread (median 1: the profile's medians stay the median step),
# drawn per rank and step, so that a synchronous step pays for the slower draw as the real one
# does (docs/virtual_cluster.md, "Events").
virtual_compute() {  # virtual_compute PREFIX
  python3 - "$1" <<'PY'
import json, sys
t, sigma = [], []
for c in (0, 1):
    p = json.load(open(f"{sys.argv[1]}.core{c}.json"))
    t.append(p["forward_s"] + p["backward_s"] + p["optimizer_s"] + p.get("check_s", 0))
    sigma.append(p.get("step_log_sigma", 0))
fast = 0 if t[0] <= t[1] else 1
events = f"{sys.argv[1]}.events.toml"
with open(events, "w") as f:
    for rank in (0, 1):
        if sigma[rank] > 0:
            f.write(f'[[event]]\nkind = "slow"\nranks = [{rank}]\ndistribution = "lognormal"\n'
                    f"sigma = {sigma[rank]:.4f}\nseed = 1\nfrom_s = 0\n\n")
print(f"--set cluster.compute=profile:{sys.argv[1]}.core{fast}.json "
      f"--slowdown {1 - fast}={max(t) / min(t):.4f} --set cluster.events={events}")
PY
}

results="$out/results.tsv"  # model, case, repetition, measured s, predicted s
: > "$results"
rows=()
for rep in $(seq 1 "$repeat"); do
  rows=()
  for spec in $models; do
    model=${spec%%:*}
    batch=${spec##*:}
    limit=$((2 * batch * steps))  # 2 ranks x batch x steps images: one epoch of `steps` steps
    common="--data fashion-mnist --batch $batch --threads 1 --epochs 1 --lr 0.01 --seed 1
      --set data.train_limit=$limit --set data.test_limit=16 --set progress=off
      --set checkpoint.keep=0 --set metrics.every_steps=8 --trace --set trace.steps=9:$steps"
    for entry in "${configs[@]}"; do
      IFS='|' read -r id args prefix buckets <<< "$entry"
      [[ "$id" =~ ${CASES:-.} ]] || continue
      tag="$model-${id// /_}"
      # Profiles per case, recorded just before its real run: this VM's speed drifts by 10-30%
      # over seconds to minutes, and a profile minutes old carries that drift into the error.
      record_profiles "$model" "$batch" "$out/$tag.profile"
      extra=()
      for kv in $buckets; do extra+=(--set "$prefix$kv"); done
      rm -rf "$out/$tag.real" "$out/$tag.virtual"
      # shellcheck disable=SC2086
      mpiexec -n 2 -bind-to core "$dplab" train --model "$model" $common $args \
        ${extra[@]+"${extra[@]}"} ${REAL_ARGS:-} --out "$out/$tag.real" > "$out/$tag.real.log" 2>&1
      # shellcheck disable=SC2086
      mpiexec -n 2 "$dplab" train --model "$model" $common $args ${extra[@]+"${extra[@]}"} \
        --cluster local-shm $(virtual_compute "$out/$tag.profile") \
        --out "$out/$tag.virtual" > "$out/$tag.virtual.log" 2>&1
      real=$(mean_step "$out/$tag.real")
      virt=$(mean_step "$out/$tag.virtual")
      printf '%s\t%s\t%s\t%s\t%s\n' "$model" "$id" "$rep" "$real" "$virt" >> "$results"
      printf 'repetition %s: %s %s: measured %.4f s, predicted %.4f s\n' "$rep" "$model" "$id" \
        "$real" "$virt" >&2
      rows+=("| $model | $id | $(breakdown "$out/$tag.real") | $(breakdown "$out/$tag.virtual") |")
    done
  done
done

python3 - "$results" <<'PY'
import collections, statistics, sys
cases = collections.OrderedDict()
for line in open(sys.argv[1]):
    model, case, rep, real, virt = line.rstrip("\n").split("\t")
    cases.setdefault((model, case), []).append((float(real), float(virt)))
print("| model | algorithm | measured s/step | predicted s/step | error | each repetition's error |")
print("|---|---|---|---|---|---|")
errors = []
for (model, case), runs in cases.items():
    real = statistics.median(r for r, _ in runs)
    virt = statistics.median(v for _, v in runs)
    err = (virt - real) / real * 100
    errors.append(abs(err))
    each = ", ".join(f"{(v - r) / r * 100:+.0f}" for r, v in runs)
    print(f"| {model} | {case} | {real:.4f} | {virt:.4f} | {err:+.1f}% | {each} |")
print(f"\n|error| of the medians: median {statistics.median(errors):.1f}%, "
      f"worst {max(errors):.1f}% over {len(errors)} cases, {len(next(iter(cases.values())))} "
      "repetitions each")
PY
echo
echo "Rank 0, ms per step (traced steps, last repetition), real | virtual:"
echo
echo "| model | algorithm | compute | exposed wait | rest | compute | exposed wait | rest |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
