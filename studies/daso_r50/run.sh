#!/usr/bin/env bash
# Issue #20 item 8: the DASO comparison (AllReduce f32, f16 wire, one allreduce per tensor,
# DASO) on the virtual cluster with ResNet-50 compute replayed from a profile, run twice: once
# alone and once beside busy processes, to show that the virtual times repeat.
#
#   studies/daso_r50/run.sh                     # RANKS=16 RANKS_PER_NODE=4 LOADS="quiet busy"
#
# Every run: mpiexec -n $RANKS, --ranks-per-node $RANKS_PER_NODE on the gpu4-25gbe preset
# (4 GPUs per node on PCIe 4.0, one 25 Gbit/s Ethernet NIC per node), the model resnet50_cifar
# (torchvision's ResNet-50 with a 3x3 stem and a 1-channel input) trained for real on
# Fashion-MNIST so that the gradients, their sizes and the accuracy are the real ones, while
# each rank's compute time comes from the profile (cluster.compute = profile:FILE), not from
# this host. "busy" runs start 2 busy-looping processes beside the job.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DPLAB=${DPLAB:-$ROOT/build/bin/dplab}
RANKS=${RANKS:-16}
RANKS_PER_NODE=${RANKS_PER_NODE:-4}
LOADS=${LOADS:-"quiet busy"}
METHODS=${METHODS:-"allreduce_f32 allreduce_f16 classic daso"}
RUNS=${RUNS:-$HERE/runs}
/usr/bin/python3 "$HERE/../lib/runs_archive.py" "$RUNS"  # runs.tar.xz expanded if absent
PROFILE=${PROFILE:-$HERE/profile_resnet50_cifar_1x28x28_b2_cpu.json}
BATCH=2
STEPS=8                      # per rank per epoch
LIMIT=$((RANKS * BATCH * STEPS))

method_args() {
  case $1 in
    allreduce_f32) echo "--algo allreduce" ;;
    allreduce_f16) echo "--algo allreduce --set allreduce.wire=f16" ;;
    classic) echo "--algo allreduce --set allreduce.bucket_cap_mb=0" ;;
    daso) echo "--algo daso --set daso.B_max=4 --set daso.S=1 --set daso.warmup_epochs=1 --set daso.cooldown_epochs=1" ;;
  esac
}

busy_pids=()
start_busy() { for _ in 1 2; do (while :; do :; done) & busy_pids+=($!); done; }
stop_busy() { for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done; busy_pids=(); }
trap stop_busy EXIT

for load in $LOADS; do
  for m in $METHODS; do
    dir=$RUNS/$load/$m
    [ -f "$dir/done" ] && continue
    rm -rf "$dir"
    mkdir -p "$dir"
    # shellcheck disable=SC2207
    cmd=(mpiexec -n "$RANKS" "$DPLAB" train --model resnet50_cifar --data fashion-mnist
         --epochs 4 --batch $BATCH --lr 0.02 --momentum 0.9 --seed 0 --threads 1
         --ranks-per-node "$RANKS_PER_NODE" --cluster gpu4-25gbe
         --set "cluster.compute=profile:$PROFILE" --set data.train_limit=$LIMIT
         --set data.test_limit=500 --set progress=off --set checkpoint.every_epochs=0
         --out "$dir/run" $(method_args "$m"))
    echo "${cmd[*]}" >"$dir/command.txt"
    echo "[$(date -u +%FT%TZ)] $load $m"
    [ "$load" = busy ] && start_busy
    start=$(date +%s.%N)
    "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
    echo "$(date +%s.%N) - $start" | bc >"$dir/job_wall_s.txt"
    stop_busy
    # Each rank's final checkpoint (16 x 180 MB) is not needed for the study: 3 GB per run.
    rm -rf "$dir/run/checkpoints" "$dir/run/final.safetensors"
    touch "$dir/done"
  done
done
/usr/bin/python3 "$HERE/summarize.py" "$RUNS" | tee "$HERE/results_table.md"
