#!/usr/bin/env bash
# Same-trajectory check of dplab against the PyTorch port of the thesis code (results.md,
# "Cross-check against the thesis code in PyTorch"), MNIST digits, K = 2, seed 0, hybrid (8,12).
set -euo pipefail
cd "$(dirname "$0")/../../../.."   # repository root
S=studies/hybrid/reference/same_trajectory
CK=build-hybrid/same_trajectory_ck     # checkpoints stay out of git
# (a) from the same initial weights and data order, epochs 1-20
build-hybrid/bin/dplab init --model mnist_cnn --seed 0 --out build-hybrid/init_mnist_cnn_seed0.safetensors
mpiexec -n 2 nice -n 19 build-hybrid/bin/dplab train --config studies/hybrid/configs/hybrid_8_12.toml \
    --data mnist --seed 0 --out $S/from_init/dplab >$S/from_init/dplab/stdout.txt 2>&1
nice -n 19 /usr/bin/python3 studies/hybrid/thesis_reference.py --data mnist --mode hybrid --K 2 --seed 0 \
    --W 8 --R 12 --epochs 20 --order dplab --init build-hybrid/init_mnist_cnn_seed0.safetensors \
    --trace 63 --out $S/from_init/pytorch >$S/from_init/pytorch/stdout.txt 2>&1
# (a') dplab's epoch 1 again with a progress line per iteration (running mean loss of rank 0)
mpiexec -n 2 nice -n 19 build-hybrid/bin/dplab train --config studies/hybrid/configs/hybrid_8_12.toml \
    --data mnist --seed 0 --max-steps 63 --set progress=lines --set progress.every_percent=1 \
    >$S/from_init/dplab_epoch1_progress.txt 2>&1
# (b) from dplab's state at the end of stage 1 (epoch 7: parameters + momentum buffer), epochs 8-20
mpiexec -n 2 nice -n 19 build-hybrid/bin/dplab train --config studies/hybrid/configs/hybrid_8_12.toml \
    --data mnist --seed 0 --max-steps 441 --set checkpoint.every_epochs=1 --out $CK >/dev/null 2>&1
mpiexec -n 2 nice -n 19 build-hybrid/bin/dplab train --config studies/hybrid/configs/hybrid_8_12.toml \
    --data mnist --seed 0 --resume $CK/checkpoint.safetensors --set progress=lines \
    --set progress.every_percent=1 --out $S/resume_epoch7/dplab >$S/resume_epoch7/dplab/stdout.txt 2>&1
nice -n 19 /usr/bin/python3 studies/hybrid/thesis_reference.py --data mnist --mode hybrid --K 2 --seed 0 \
    --W 8 --R 12 --epochs 20 --order dplab --resume-dplab $CK/checkpoint.safetensors --trace 63 \
    --out $S/resume_epoch7/pytorch >$S/resume_epoch7/pytorch/stdout.txt 2>&1
