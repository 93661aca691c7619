#!/usr/bin/env bash
# compare_algorithms.sh BIN_BEFORE BIN_AFTER OUT [FILTER]: trains every built-in algorithm and
# gradient compression (the resume test's list, plus wire types) with two builds of dplab, at 2
# and 4 ranks, on the MPI path and on a virtual cluster with profile compute, and compares
# final.safetensors byte for byte and, on the cluster, the virtual epoch times (metrics.jsonl
# time_s). Prints one line per run: SAME, DIFFERS (what) or FAILED (rc, log). FILTER: a regex
# on the run id. Used for refactors that must not change training (issue #32, item 7).
set -uo pipefail
before=$1 after=$2 out=$3 filter=${4:-.}
mkdir -p "$out"
base="train --model mnist_cnn --data fashion-mnist --batch 16 --lr 0.05 --momentum 0.9 --threads 1
  --epochs 2 --seed 1 --set data.train_limit=256 --set data.test_limit=40 --set progress=off
  --set checkpoint.keep=0"
# The compute profile the cluster runs replay (one file for both builds).
profile="$out/profile.json"
if [ ! -f "$profile" ]; then
  "$before" bench train --model mnist_cnn --batch 16 --threads 1 --input 1x28x28 \
    --profile-out "$profile" > "$out/profile.log" 2>&1 || { echo "profile FAILED"; exit 1; }
fi
runs=(
  "allreduce|"
  "allreduce_bf16|--algo allreduce --set allreduce.wire=bf16"
  "allreduce_hier|--algo allreduce --ranks-per-node 2 --set allreduce.hierarchical=true"
  "allreduce_powersgd|--algo allreduce --set allreduce.compress=powersgd --set allreduce.powersgd.start_step=2"
  "allreduce_topk|--algo allreduce --set allreduce.compress=topk --set allreduce.topk.ratio=0.05"
  "allreduce_hier_powersgd|--algo allreduce --ranks-per-node 2 --set allreduce.hierarchical=true --set allreduce.compress=powersgd --set allreduce.powersgd.start_step=1"
  "hybrid|--algo hybrid --set hybrid.W=2 --set hybrid.R=3"
  "hybrid_powersgd|--algo hybrid --set hybrid.W=2 --set hybrid.R=3 --set hybrid.compress=powersgd --set hybrid.powersgd.start_step=1"
  "daso|--algo daso --ranks-per-node 2 --set daso.warmup_epochs=0 --set daso.cooldown_epochs=0 --set daso.B_max=3"
  "daso_topk|--algo daso --ranks-per-node 2 --set daso.warmup_epochs=0 --set daso.cooldown_epochs=0 --set daso.B_max=3 --set daso.local.compress=topk --set daso.local.topk.ratio=0.05"
  "dcs3gd|--algo dcs3gd"
  "crossover|--algo crossover"
  "crossover_hier_powersgd|--algo crossover --ranks-per-node 2 --set crossover.hierarchical=true --set crossover.sync.compress=powersgd --set crossover.sync.powersgd.start_step=1"
  "sgp|--algo sgp"
  "oscars|--algo oscars --set oscars.t_us=1000,2000,1000,3000"
  "local_sgd|--algo local_sgd --set local_sgd.H=3"
  "post_local_sgd|--algo post_local_sgd --set local_sgd.H=3"
  "post_local_sgd_topk|--algo post_local_sgd --set local_sgd.H=3 --set allreduce.compress=topk --set allreduce.topk.ratio=0.05"
  "diloco|--algo diloco --set optim=adamw --wd 0.01 --set diloco.H=3"
  "slowmo|--algo slowmo --set slowmo.frequency=3"
  "slowmo_sgp|--algo slowmo --set slowmo.frequency=3 --set slowmo.base=sgp"
  "streaming_diloco|--algo streaming_diloco --set streaming_diloco.H=4 --set streaming_diloco.fragment_sync_delay=1"
  "streaming_diloco_int8|--algo streaming_diloco --set streaming_diloco.H=4 --set streaming_diloco.fragment_sync_delay=1 --set streaming_diloco.quantize=int8"
  "streaming_diloco_int4|--algo streaming_diloco --set streaming_diloco.H=4 --set streaming_diloco.fragment_sync_delay=1 --set streaming_diloco.quantize=int4"
)
run() {  # run BIN DIR RANKS ARGS...
  local bin=$1 dir=$2 n=$3; shift 3
  rm -rf "$dir"
  timeout 600 mpiexec -n "$n" "$bin" $base "$@" --out "$dir" > "$dir.log" 2>&1
}
epoch_times() { grep '"kind":"epoch"' "$1/metrics.jsonl" | sed 's/.*"time_s":\([^,]*\).*/\1/'; }
for entry in "${runs[@]}"; do
  id=${entry%%|*} args=${entry#*|}
  [ -z "$args" ] && args="--algo allreduce"
  for n in 2 4; do
    for mode in mpi cluster; do
      rid="${id}_${n}_${mode}"
      [[ $rid =~ $filter ]] || continue
      extra=""
      [ $mode = cluster ] && extra="--cluster cpu-10gbe --set cluster.compute=profile:$profile"
      # oscars' t_us lists one time per rank.
      a=$args
      [ "$id" = oscars ] && [ $n = 2 ] && a="--algo oscars --set oscars.t_us=1000,2000"
      run "$before" "$out/$rid.before" $n $a $extra; rb=$?
      run "$after" "$out/$rid.after" $n $a $extra; ra=$?
      if [ $rb != 0 ] || [ $ra != 0 ]; then
        echo "$rid FAILED (before rc=$rb, after rc=$ra: $out/$rid.*.log)"
        continue
      fi
      what=""
      cmp -s "$out/$rid.before/final.safetensors" "$out/$rid.after/final.safetensors" ||
        what="final.safetensors"
      if [ $mode = cluster ] &&
        [ "$(epoch_times "$out/$rid.before")" != "$(epoch_times "$out/$rid.after")" ]; then
        what="$what virtual epoch times"
      fi
      if [ -z "$what" ]; then echo "$rid SAME"; else echo "$rid DIFFERS ($what)"; fi
    done
  done
done
