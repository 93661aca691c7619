# The study's methods (sourced by run.sh and figures.sh): each is the name of its runs'
# directory, the options run.sh adds to configs/common.toml, and its legend name.
# Shared settings (model, data, schedule, the cluster) are in configs/common.toml; the papers'
# defaults and every deviation from them are listed in README.md ("Methods").
# shellcheck disable=SC2034  # read by the scripts that source this file
ALL_METHODS="allreduce powersgd daso local_sgd slowmo slowmo_fairscale allreduce_adamw diloco sdiloco sdiloco_int8 sdiloco_int4 sdiloco_fp4"

ADAMW="--set optim=adamw --lr 0.001 --wd 0.01"  # DiLoCo's inner optimizer, PyTorch's defaults
declare -A ARGS=(
  [allreduce]="--algo allreduce"
  [powersgd]="--algo allreduce --set allreduce.compress=powersgd --set allreduce.powersgd.rank=2 --set allreduce.powersgd.start_step=117"
  [daso]="--algo daso --set daso.warmup_epochs=1 --set daso.cooldown_epochs=1"
  [local_sgd]="--algo local_sgd --set local_sgd.H=4"
  # The archived runs (2026-11-24): every rank a worker, no average inside the 48-step round.
  [slowmo]="--algo slowmo --set slowmo.frequency=48 --set slowmo.lr=1 --set slowmo.momentum=0.5 --set slowmo.localsgd_frequency=0 --set slowmo.node_workers=false"
  # fairscale's default algorithm (issue #33): base local SGD averaging every 3 steps, the 4
  # ranks of a node one worker (gradients allreduced every step), slow step every 48.
  [slowmo_fairscale]="--algo slowmo"
  [allreduce_adamw]="--algo allreduce $ADAMW"
  [diloco]="--algo diloco --set diloco.H=50 $ADAMW"
  [sdiloco]="--algo streaming_diloco --set streaming_diloco.H=50 --set streaming_diloco.fragments=2 $ADAMW"
  [sdiloco_int8]="--algo streaming_diloco --set streaming_diloco.H=50 --set streaming_diloco.fragments=2 --set streaming_diloco.quantize=int8 $ADAMW"
  [sdiloco_int4]="--algo streaming_diloco --set streaming_diloco.H=50 --set streaming_diloco.fragments=2 --set streaming_diloco.quantize=int4 $ADAMW"
  [sdiloco_fp4]="--algo streaming_diloco --set streaming_diloco.H=50 --set streaming_diloco.fragments=2 --set streaming_diloco.quantize=fp4_e2m1 $ADAMW"
)
declare -A NAME=(
  [allreduce]="AllReduce (SGD)"
  [powersgd]="AllReduce + PowerSGD r=2"
  [daso]="DASO"
  [local_sgd]="local SGD H=4"
  [slowmo]="SlowMo tau=48 (every rank a worker)"
  [slowmo_fairscale]="SlowMo, fairscale's default"
  [allreduce_adamw]="AllReduce (AdamW)"
  [diloco]="DiLoCo H=50"
  [sdiloco]="Streaming DiLoCo H=50 P=2"
  [sdiloco_int8]="Streaming DiLoCo int8"
  [sdiloco_int4]="Streaming DiLoCo int4"
  [sdiloco_fp4]="Streaming DiLoCo fp4 (E2M1)"
)
# QUICK=1 (smoke run, 6 steps): periods short enough that every method communicates its way.
declare -A QUICK_ARGS=(
  [powersgd]="--set allreduce.powersgd.start_step=1"
  [daso]="--set daso.warmup_epochs=0 --set daso.cooldown_epochs=0"
  [local_sgd]="--set local_sgd.H=2"
  [slowmo]="--set slowmo.frequency=3"
  [slowmo_fairscale]="--set slowmo.frequency=3 --set slowmo.localsgd_frequency=2"
  [diloco]="--set diloco.H=3"
  [sdiloco]="--set streaming_diloco.H=4"
  [sdiloco_int8]="--set streaming_diloco.H=4"
  [sdiloco_int4]="--set streaming_diloco.H=4"
  [sdiloco_fp4]="--set streaming_diloco.H=4"
)
