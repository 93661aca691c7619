#!/usr/bin/python3
"""The thesis' own training code (papers/hybrid-sgd-thesis.txt, appendix 8.2), ported to CPU.

A cross-check for the hybrid-SGD study (studies/hybrid/README.md): does the thesis code, run on
the same data as dplab, behave like dplab (in particular at the stage 1 -> 2 change)?

What is kept from the listing, line by line:
  * CNNModel (conv 1->16 k5, ReLU, maxpool 2, conv 16->32 k5, ReLU, maxpool 2, Linear 512->10),
    torch.manual_seed(SEED) before building it, DDP(model) (broadcast from rank 0 at construction),
  * DistributedSampler(num_replicas=K, rank=r) (shuffle=True, seed=SEED, drop_last=False),
    DataLoader(batch_size=64, shuffle=False, sampler=...); set_epoch() never called (the thesis
    code never calls it) unless --set-epoch,
  * SGD(lr=0.1, momentum=0.9, nesterov=True), CrossEntropyLoss() (mean over the batch),
  * S = ceil(E/3); stage 1: epoch < S, stage 2: S <= epoch <= 2S, stage 3: the rest,
  * one global 0-based `iter` counter, incremented after every batch,
  * stage 1: zero_grad(set_to_none); backward (DDP allreduce-average); step,
  * stage 2: if iter % W == 0 (the printed `iter % 2 == 8` is never true; fixed as intended):
             backward (DDP allreduces the ACCUMULATED .grad, divides by K); step; zero_grad
             else: with no_sync: backward (.grad += local gradient, no communication).
             Nothing zeroes .grad at the stage 1 -> 2 change, so the last averaged stage-1
             gradient is part of the first stage-2 window, as in the listing,
  * stage 3: zero_grad; if iter % R == 0: backward (allreduce-average); step
             else: with no_sync: backward; step (local step, local momentum buffer),
  * after training: all_reduce(p, SUM); p /= K for every parameter; test accuracy on rank 0.

Changes, none of which touches the arithmetic of training:
  * CPU + gloo instead of CUDA + NCCL; ranks started with torch.multiprocessing on 127.0.0.1;
    torch.set_num_threads(1) per rank; num_workers = 0 (the data are in memory),
  * data: the IDX files dplab reads (pixel / 255, no normalisation), not torchvision's MNIST,
  * --stage2-test printed runs the listing literally (`iter % 2 == 8`): stage 2 never steps,
  * --seed replaces the listing's fixed torch.manual_seed(0) and the sampler's seed 0,
  * modes each_iter (stage 1 throughout) and only_end (no communication until the final average),
    and --accumulate mean (stage-2 gradient divided by W before the step; not in the thesis),
  * per-epoch bookkeeping: rank 0's sample-weighted mean train loss, the mean over all ranks,
    rank 0's test accuracy, and per-iteration losses around each stage change (--trace).
    The bookkeeping collectives are not counted as allreduces,
  * for the same-trajectory check only: --init (dplab's initial weights), --order dplab (dplab's
    sampler: a Philox permutation per epoch, core/philox.h + data/sampler.cpp) and --resume-dplab
    (start from a dplab checkpoint: parameters, momentum buffer, epoch and iteration).

usage (from the repository root):
  nice -n 19 /usr/bin/python3 studies/hybrid/thesis_reference.py --data fashion-mnist --K 2 \
      --mode hybrid --W 8 --R 12 --seed 0 --out studies/hybrid/reference/fashion-mnist/hybrid_8_12/K2/seed0
"""
import argparse
import gzip
import json
import math
import os
import socket
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class CNNModel(nn.Module):
    """The listing's CNNModel, unchanged."""

    def __init__(self):
        super(CNNModel, self).__init__()
        self.cnn1 = nn.Conv2d(in_channels=1, out_channels=16, kernel_size=5, stride=1, padding=0)
        self.relu1 = nn.ReLU()
        self.maxpool1 = nn.MaxPool2d(kernel_size=2)
        self.cnn2 = nn.Conv2d(in_channels=16, out_channels=32, kernel_size=5, stride=1, padding=0)
        self.relu2 = nn.ReLU()
        self.maxpool2 = nn.MaxPool2d(kernel_size=2)
        self.fc1 = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        out = self.maxpool1(self.relu1(self.cnn1(x)))
        out = self.maxpool2(self.relu2(self.cnn2(out)))
        out = out.view(out.size(0), -1)
        return self.fc1(out)


# ---- data: the IDX files dplab reads (README "Data locations") --------------------------------

def data_dir(name):
    """Where `dplab train --data NAME` looks, in the same order."""
    candidates = []
    if os.environ.get("DPLAB_DATA"):
        candidates.append(Path(os.environ["DPLAB_DATA"]) / name)
    if name == "fashion-mnist":
        candidates.append(Path("/usr/share/datasets/fashion-mnist"))
    elif name == "mnist":
        candidates.append(Path.home() / ".cache/dplab/data/mnist")
    else:
        candidates.append(Path(name))  # a directory with the four IDX files
    for c in candidates:
        if find_idx(c, "train-images") is not None:
            return c
    sys.exit(f"no IDX files for {name} in {', '.join(map(str, candidates))} "
             "(fashion-mnist: apt-get install dataset-fashion-mnist; mnist: dplab data fetch mnist)")


def find_idx(d, stem):
    for suffix in ("-idx3-ubyte.gz", "-idx1-ubyte.gz", "-idx3-ubyte", "-idx1-ubyte"):
        p = d / (stem + suffix)
        if p.exists():
            return p
    return None


def read_idx(path):
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    zero, dtype, ndim = raw[0] * 256 + raw[1], raw[2], raw[3]
    assert zero == 0 and dtype == 0x08, f"{path}: not an unsigned-byte IDX file"
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    a = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    assert a.size == int(np.prod(dims)), f"{path}: size does not match its header"
    return a.reshape(dims)


def load_split(d, prefix):
    images = read_idx(find_idx(d, f"{prefix}-images"))
    labels = read_idx(find_idx(d, f"{prefix}-labels"))
    x = torch.from_numpy(images.astype(np.float32) / np.float32(255.0)).unsqueeze(1)
    y = torch.from_numpy(labels.astype(np.int64))
    return torch.utils.data.TensorDataset(x, y)


# ---- dplab's initial weights and data order (--init, --order dplab) ------------------------------
# Only for the same-trajectory check: with them, this script and `dplab train` start from the same
# parameters and see the same batches, so their losses can be compared epoch by epoch.

def load_safetensors(path):
    """{name: tensor} of a safetensors file (F32, I64) (`dplab init --model mnist_cnn --seed S`)."""
    raw = Path(path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        dt = {"F32": "<f4", "I64": "<i8"}.get(h["dtype"])
        assert dt is not None, f"{path}: {name} is {h['dtype']}, expected F32 or I64"
        a, b = h["data_offsets"]
        count = (b - a) // np.dtype(dt).itemsize
        out[name] = torch.from_numpy(
            np.frombuffer(raw, dtype=dt, count=count, offset=8 + n + a).copy()
        ).reshape(h["shape"])
    return out


def load_dplab_checkpoint(path, model, optimizer):
    """A `dplab train` checkpoint (X.safetensors + X.state.safetensors): parameters, the SGD
    momentum buffer (one flat arena: parameters in reverse registration order, each slot padded to
    16 floats, core/param_arena.cpp) and the loop position. Gradients start empty (.grad = None),
    as in a resumed dplab run, whose arena gradients start at zero. Returns (epoch, global_step)."""
    params = load_safetensors(path)
    model.load_state_dict(params)
    state_path = str(path).replace(".safetensors", ".state.safetensors")
    raw = Path(state_path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    meta = json.loads(raw[8:8 + n])["__metadata__"]
    buf = load_safetensors(state_path)["optim.momentum_buffer"]
    off = 0
    for name, p in reversed(list(model.named_parameters())):
        optimizer.state[p]["momentum_buffer"] = buf[off:off + p.numel()].reshape(p.shape).clone()
        off += (p.numel() + 15) // 16 * 16
    assert off == buf.numel(), f"{state_path}: momentum buffer of {buf.numel()}, expected {off}"
    assert int(meta["dplab.step_in_epoch"]) == 0, "resume only from an epoch boundary"
    return int(meta["dplab.epoch"]), int(meta["dplab.global_step"])


M32 = 0xFFFFFFFF


def philox4x32(seed, stream, counter):
    """core/philox.h: Philox4x32-10 of (seed, stream, counter)."""
    c0, c1 = counter & M32, (counter >> 32) & M32
    c2, c3 = stream & M32, (stream >> 32) & M32
    k0, k1 = seed & M32, (seed >> 32) & M32
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c3 ^ k1) & M32, p0 & M32
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return (c0, c1, c2, c3)


def philox_permutation(n, seed, stream):
    """data/sampler.cpp: Fisher-Yates with PhiloxStream::below (rejection, then modulo)."""
    words, pos, counter = None, 4, 0

    def u32():
        nonlocal words, pos, counter
        if pos == 4:
            words, pos, counter = philox4x32(seed, stream, counter), 0, counter + 1
        pos += 1
        return words[pos - 1]

    U64 = (1 << 64) - 1
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        m = i + 1
        limit = U64 - U64 % m
        while True:
            x = (u32() << 32) | u32()
            if x < limit:
                break
        j = x % m
        p[i], p[j] = p[j], p[i]
    return p


class DplabSampler(torch.utils.data.Sampler):
    """dplab's DistributedSampler: a Philox permutation per epoch (stream = epoch), padded by
    repeating its start to a multiple of K, rank r takes positions r, r + K, ..."""

    def __init__(self, n, K, rank, seed):
        self.n, self.K, self.rank, self.seed, self.epoch = n, K, rank, seed, 0
        self.num_samples = (n + K - 1) // K

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return self.num_samples

    def __iter__(self):
        idx = philox_permutation(self.n, self.seed, self.epoch)
        total = self.num_samples * self.K
        idx += idx[:total - self.n]
        return iter(idx[self.rank::self.K])


# ---- the training function of the listing ------------------------------------------------------

def stage_of(mode, epoch, S):
    if mode == "each_iter":
        return 1
    if mode == "only_end":
        return 0  # no communication at all until the final average
    if epoch < S:
        return 1
    if S <= epoch <= 2 * S:
        return 2
    return 3


def evaluate(model, loader):
    correct, total, loss_sum = 0, 0, 0.0
    crit = nn.CrossEntropyLoss(reduction="sum")
    with torch.no_grad():
        for images, labels in loader:
            out = model(images)
            loss_sum += crit(out, labels).item()
            _, predicted = torch.max(out.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    return correct / total, loss_sum / total


def cnn(rank, world, args, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group(backend="gloo", rank=rank, world_size=world)

    torch.manual_seed(args.seed)
    model = CNNModel()
    if args.init:
        model.load_state_dict(load_safetensors(args.init))
    ddp_model = DDP(model)  # rank 0's parameters are broadcast to the other ranks
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)

    d = data_dir(args.data)
    train_dataset = load_split(d, "train")
    test_dataset = load_split(d, "t10k")
    if args.order == "dplab":
        train_sampler = DplabSampler(len(train_dataset), world, rank, args.seed)
    else:
        train_sampler = torch.utils.data.distributed.DistributedSampler(
            train_dataset, num_replicas=world, rank=rank, seed=args.seed)
    train_loader = torch.utils.data.DataLoader(dataset=train_dataset, batch_size=args.batch,
                                               shuffle=False, num_workers=0,
                                               sampler=train_sampler)
    test_loader = torch.utils.data.DataLoader(dataset=test_dataset, batch_size=args.batch,
                                              shuffle=False, num_workers=0)

    num_epochs = args.epochs
    S = math.ceil(num_epochs / 3)
    W, R = args.W, args.R
    iter = 0  # the listing's name: global, 0-based
    first_epoch = 0
    if args.resume_dplab:
        first_epoch, iter = load_dplab_checkpoint(args.resume_dplab, model, optimizer)
    syncs_total = 0
    out = None
    if rank == 0:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        out = open(Path(args.out) / "metrics.jsonl", "w")
        print(f"data {d}: {len(train_dataset)} train / {len(test_dataset)} test, K = {world}, "
              f"{len(train_loader)} iterations per epoch, mode {args.mode}, W {W}, R {R}, "
              f"accumulate {args.accumulate}, set_epoch {args.set_epoch}, seed {args.seed}, "
              f"order {args.order}, init {args.init or 'torch.manual_seed'}, "
              f"stage-2 test {args.stage2_test}",
              flush=True)

    def emit(rec):
        if out is not None:
            out.write(json.dumps(rec) + "\n")
            out.flush()

    train_time = 0.0
    prev_stage = None
    trace_left = 0
    for epoch in range(first_epoch, num_epochs):
        if args.set_epoch or args.order == "dplab":
            train_sampler.set_epoch(epoch)
        stage = stage_of(args.mode, epoch, S)
        if stage != prev_stage:
            trace_left = args.trace  # per-iteration losses after each stage change
        prev_stage = stage
        loss_sum, seen, syncs, max_loss = 0.0, 0, 0, 0.0
        t0 = time.time()
        for i, (images, labels) in enumerate(train_loader):
            if stage == 1:
                outputs = ddp_model(images)
                loss = criterion(outputs, labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()  # DDP: allreduce-average of the gradient
                optimizer.step()
                synced = True
            elif stage == 2:
                # The listing prints `iter % 2 == 8`, never true: --stage2-test printed keeps it
                # (stage 2 then never communicates nor steps; its .grad is dropped by stage 3).
                if (iter % 2 == 8) if args.stage2_test == "printed" else (iter % W == 0):
                    outputs = ddp_model(images)
                    loss = criterion(outputs, labels)
                    loss.backward()  # DDP: allreduce-average of the ACCUMULATED .grad
                    if args.accumulate == "mean":
                        for p in ddp_model.parameters():
                            p.grad.div_(W)
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                    synced = True
                else:
                    with ddp_model.no_sync():
                        outputs = ddp_model(images)
                        loss = criterion(outputs, labels)
                        loss.backward()  # .grad += local gradient
                    synced = False
            elif stage == 3:
                if iter % R == 0:
                    outputs = ddp_model(images)
                    loss = criterion(outputs, labels)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()  # allreduce-average of this batch's gradient
                    optimizer.step()
                    synced = True
                else:
                    with ddp_model.no_sync():
                        outputs = ddp_model(images)
                        loss = criterion(outputs, labels)
                        optimizer.zero_grad(set_to_none=True)
                        loss.backward()
                        optimizer.step()  # local step
                    synced = False
            else:  # only_end: local SGD, no communication
                with ddp_model.no_sync():
                    outputs = ddp_model(images)
                    loss = criterion(outputs, labels)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                synced = False
            l = loss.item()
            n = labels.size(0)
            loss_sum += l * n
            seen += n
            max_loss = max(max_loss, l) if math.isfinite(l) else float("inf")
            syncs += int(synced)
            if trace_left > 0:
                trace_left -= 1
                emit({"kind": "iter", "iter": iter, "epoch": epoch + 1, "stage": stage,
                      "sync": synced, "loss": l})
            iter += 1
        epoch_time = time.time() - t0
        syncs_total += syncs
        final = epoch == num_epochs - 1
        if final and args.mode != "each_iter":
            # Model averaging across nodes (listing lines 212-218), parameters only.
            ta = time.time()
            for p in ddp_model.parameters():
                size = float(dist.get_world_size())
                dist.all_reduce(p.data, op=dist.ReduceOp.SUM)
                p.data /= size
            epoch_time += time.time() - ta
        train_time += epoch_time
        # bookkeeping (not counted): mean train loss over all ranks
        t = torch.tensor([loss_sum, float(seen)], dtype=torch.float64)
        dist.all_reduce(t)
        if rank == 0:
            acc, test_loss = evaluate(model, test_loader)
            rec = {"kind": "epoch", "epoch": epoch + 1, "stage": stage, "loss": loss_sum / seen,
                   "loss_all_ranks": (t[0] / t[1]).item(), "max_iter_loss": max_loss,
                   "test_acc": acc, "test_loss": test_loss, "allreduces": syncs,
                   "iterations": len(train_loader), "time_s": epoch_time}
            emit(rec)
            print(f"epoch {epoch + 1}/{num_epochs} stage {stage}  loss {rec['loss']:.4f} "
                  f"(all ranks {rec['loss_all_ranks']:.4f}, max {max_loss:.4g})  test_acc {acc:.4f}"
                  f"  allreduces {syncs}  {epoch_time:.1f} s", flush=True)
        dist.barrier()
    if rank == 0:
        acc, test_loss = evaluate(model, test_loader)
        n_iter = len(train_loader) * (num_epochs - first_epoch)
        final_avg = 0 if args.mode == "each_iter" else len(list(model.parameters()))
        rec = {"kind": "final", "test_acc": acc, "test_loss": test_loss, "gradient_allreduces":
               syncs_total, "final_average_allreduces": final_avg,
               "ratio_to_each_iter": syncs_total / n_iter, "iterations": n_iter,
               "train_time_s": train_time}
        emit(rec)
        print(f"test accuracy: {acc:.4f}  gradient allreduces {syncs_total} "
              f"({syncs_total / n_iter:.3f} of P-SGD) + {final_avg} final parameter allreduces  "
              f"train time {train_time:.1f} s", flush=True)
        out.close()
    # Every rank leaves together: a rank that reached destroy_process_group while rank 0 was still
    # evaluating once spun there after rank 0 had exited.
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="fashion-mnist",
                   help="fashion-mnist, mnist (dplab's digits subset) or a directory of IDX files")
    p.add_argument("--K", type=int, default=2, help="number of ranks")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--W", type=int, default=8)
    p.add_argument("--R", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mode", choices=["each_iter", "hybrid", "only_end"], default="hybrid")
    p.add_argument("--accumulate", choices=["sum", "mean"], default="sum")
    p.add_argument("--stage2-test", choices=["fixed", "printed"], default="fixed",
                   help="stage-2 sync test: iter %% W == 0 (fixed, default) or the listing's "
                        "literal iter %% 2 == 8 (printed: never true)")
    p.add_argument("--set-epoch", action="store_true",
                   help="reshuffle every epoch like dplab (the thesis code never does)")
    p.add_argument("--order", choices=["torch", "dplab"], default="torch",
                   help="data order: PyTorch's DistributedSampler (default) or dplab's "
                        "(Philox permutation per epoch; for the same-trajectory check)")
    p.add_argument("--init", default="",
                   help="initial parameters from a safetensors file (dplab init --model "
                        "mnist_cnn --seed S) instead of torch.manual_seed(SEED) + CNNModel()")
    p.add_argument("--resume-dplab", default="",
                   help="start from a `dplab train` checkpoint taken at an epoch boundary "
                        "(parameters, momentum buffer, epoch and iteration; .grad empty)")
    p.add_argument("--trace", type=int, default=40,
                   help="per-iteration loss records after each stage change")
    p.add_argument("--out", required=True, help="directory for metrics.jsonl")
    args = p.parse_args()
    mp.spawn(cnn, args=(args.K, args, free_port()), nprocs=args.K, join=True)


if __name__ == "__main__":
    main()
