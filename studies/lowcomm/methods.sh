# The study's methods (sourced by run.sh and figures.sh): each is the name of its runs'
# directory, the options run.sh adds to configs/common.toml, and its legend name.
# Shared settings (model, data, schedule, the cluster) are in configs/common.toml; the papers'
# defaults and every deviation from them are listed in README.md ("Methods").
# shellcheck disable=SC2034  # read by the scripts that source this file
ALL_METHODS="allreduce powersgd daso local_sgd slowmo allreduce_adamw diloco sdiloco sdiloco_int8 sdiloco_int4"

ADAMW="--set optim=adamw --lr 0.001 --wd 0.01"  # DiLoCo's inner optimizer, PyTorch's defaults
declare -A ARGS=(
  [allreduce]="--algo allreduce"
  [powersgd]="--algo allreduce --set allreduce.compress=powersgd --set allreduce.powersgd.rank=2 --set allreduce.powersgd.start_step=117"
  [daso]="--algo daso --set daso.warmup_epochs=1 --set daso.cooldown_epochs=1"
  [local_sgd]="--algo local_sgd --set local_sgd.H=4"
  [slowmo]="--algo slowmo --set slowmo.frequency=48 --set slowmo.lr=1 --set slowmo.momentum=0.5"
  [allreduce_adamw]="--algo allreduce $ADAMW"
  [diloco]="--algo diloco --set diloco.H=50 $ADAMW"
  [sdiloco]="--algo streaming_diloco --set streaming_diloco.H=50 --set streaming_diloco.fragments=2 $ADAMW"
  [sdiloco_int8]="--algo streaming_diloco --set streaming_diloco.H=50 --set streaming_diloco.fragments=2 --set streaming_diloco.quantize=int8 $ADAMW"
  [sdiloco_int4]="--algo streaming_diloco --set streaming_diloco.H=50 --set streaming_diloco.fragments=2 --set streaming_diloco.quantize=int4 $ADAMW"
)
declare -A NAME=(
  [allreduce]="AllReduce (SGD)"
  [powersgd]="AllReduce + PowerSGD r=2"
  [daso]="DASO"
  [local_sgd]="local SGD H=4"
  [slowmo]="SlowMo tau=48"
  [allreduce_adamw]="AllReduce (AdamW)"
  [diloco]="DiLoCo H=50"
  [sdiloco]="Streaming DiLoCo H=50 P=2"
  [sdiloco_int8]="Streaming DiLoCo int8"
  [sdiloco_int4]="Streaming DiLoCo int4"
)
# QUICK=1 (smoke run, 6 steps): periods short enough that every method communicates its way.
declare -A QUICK_ARGS=(
  [powersgd]="--set allreduce.powersgd.start_step=1"
  [daso]="--set daso.warmup_epochs=0 --set daso.cooldown_epochs=0"
  [local_sgd]="--set local_sgd.H=2"
  [slowmo]="--set slowmo.frequency=3"
  [diloco]="--set diloco.H=3"
  [sdiloco]="--set streaming_diloco.H=4"
  [sdiloco_int8]="--set streaming_diloco.H=4"
  [sdiloco_int4]="--set streaming_diloco.H=4"
)
