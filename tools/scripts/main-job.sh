#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build dplab, fetch Fashion-MNIST and
# train mnist_cnn on it with data-parallel AllReduce-SGD over ${DPLAB_RANKS:-2} local MPI ranks
# for one epoch (batch 64 per rank, lr 0.01, momentum 0.9, Nesterov), printing the test
# accuracy. Extra arguments go to `dplab train` (e.g. --epochs 5, --algo hybrid).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DPLAB_BUILD_DIR:-$root/build}"
ranks="${DPLAB_RANKS:-2}"
"$root/tools/scripts/install-deps.sh" --main  # the build and the main job only
# The `dplab` command only: the tests, fuzzers and examples are test.sh's to build.
DPLAB_BUILD_DIR="$build" DPLAB_TARGETS=dplab_cli "$root/tools/scripts/build.sh"
"$build/bin/dplab" data fetch fashion-mnist
mpiexec -n "$ranks" "$build/bin/dplab" train --algo allreduce --model mnist_cnn \
  --data fashion-mnist --epochs 1 --batch 64 --lr 0.01 --momentum 0.9 --nesterov \
  --out "${DPLAB_OUT:-$root/out/main-job}" "$@"
