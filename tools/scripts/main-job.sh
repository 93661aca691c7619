#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build dplab, fetch Fashion-MNIST and
# train mnist_cnn on it for one epoch (batch 64, lr 0.01, momentum 0.9, Nesterov), printing the
# test accuracy. Extra arguments go to `dplab train` (e.g. --epochs 5 --threads 2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DPLAB_BUILD_DIR:-$root/build}"
"$root/tools/scripts/install-deps.sh"
DPLAB_BUILD_DIR="$build" "$root/tools/scripts/build.sh"
"$build/bin/dplab" data fetch fashion-mnist
"$build/bin/dplab" train --model mnist_cnn --data fashion-mnist --epochs 1 --batch 64 \
  --lr 0.01 --momentum 0.9 --nesterov --out "${DPLAB_OUT:-$root/out/main-job}" "$@"
