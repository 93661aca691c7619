# The faults study's methods and scenarios (sourced by run.sh and figures.sh; summarize.py reads
# ALL_METHODS, ALL_SCENARIOS and NAME from it). Shared settings: configs/common.toml; README.md.
# shellcheck disable=SC2034  # read by the scripts that source this file
ALL_METHODS="allreduce allreduce_quorum diloco sdiloco"
ALL_SCENARIOS="none straggler fail link"
ADAMW="--set optim=adamw --lr 0.001 --wd 0.01"  # DiLoCo's inner optimizer, PyTorch's defaults
# ResNet-50's DDP buckets: 25 MB of 102 MB; mnist_cnn's 73.5 KB in the same proportion.
BUCKET="--set allreduce.bucket_cap_mb=0.018"
declare -A ARGS=(
  [allreduce]="--algo allreduce --lr 0.1 $BUCKET"
  [allreduce_quorum]="--algo allreduce --lr 0.1 $BUCKET --set allreduce.ft=quorum"
  [diloco]="--algo diloco --set diloco.H=50 $ADAMW"
  [sdiloco]="--algo streaming_diloco --set streaming_diloco.H=50 --set streaming_diloco.fragments=2 $ADAMW"
)
declare -A NAME=(
  [allreduce]="AllReduce (stops; restarts from its checkpoint when the node is back)"
  [allreduce_quorum]="AllReduce, quorum (torchft's FT-DDP)"
  [diloco]="DiLoCo H=50"
  [sdiloco]="Streaming DiLoCo H=50 P=2"
)
