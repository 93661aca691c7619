#!/usr/bin/python3
"""PyTorch side of `dplab bench train --compare-pytorch`: times training steps of the same
network, batch and thread count, and prints one JSON object.

Uses Debian's python3-torch / python3-torchvision (run with /usr/bin/python3). The device kit
(tools/scripts/device-bundle.sh) carries it to GPU machines: --device cuda times each step
between device synchronisations and reports the caching allocator's peak; --dtype bf16 runs the
forward and loss under torch.autocast(bfloat16) (weights, gradients and the SGD step in f32),
the counterpart of dplab's amp = bf16."""
import argparse
import json
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class MnistCNN(nn.Module):
    """The hybrid-SGD thesis network (same as dplab's mnist_cnn)."""

    def __init__(self):
        super().__init__()
        self.cnn1 = nn.Conv2d(1, 16, 5)
        self.cnn2 = nn.Conv2d(16, 32, 5)
        self.fc1 = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.cnn1(x)), 2)
        x = F.max_pool2d(F.relu(self.cnn2(x)), 2)
        return self.fc1(x.view(x.size(0), -1))


def build(model):
    if model == "mnist_cnn":
        return MnistCNN(), (1, 28, 28), 10
    import torchvision
    return getattr(torchvision.models, model)(), (3, 224, 224), 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="mnist_cnn")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--mode", choices=["train", "infer"], default="train")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32",
                    help="bf16: autocast the forward and the loss to bfloat16")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    if cuda and dev.index is not None:  # "cuda" alone: the current device
        torch.cuda.set_device(dev)
    net, shape, classes = build(a.model)
    net = net.to(dev)
    x = torch.rand(a.batch, *shape).to(dev)
    y = torch.randint(0, classes, (a.batch,)).to(dev)
    autocast = torch.autocast(device_type=dev.type, dtype=torch.bfloat16,
                              enabled=a.dtype == "bf16")
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, nesterov=True)
    loss_fn = nn.CrossEntropyLoss()
    if a.mode == "infer":
        net.eval()

    def step():
        if a.mode == "infer":
            with torch.no_grad(), autocast:
                net(x)
            return
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()

    def sync():  # kernels run asynchronously: a step has taken its time once the device is idle
        if cuda:
            torch.cuda.synchronize(dev)

    for _ in range(a.warmup):
        step()
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(times)
    extra = {}
    if cuda:
        extra = {
            "gpu": torch.cuda.get_device_name(dev),
            "peak_device_mb": torch.cuda.max_memory_allocated(dev) / (1024.0 * 1024.0),
            "cudnn": torch.backends.cudnn.version(),
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        }
    print(json.dumps({
        "framework": "pytorch " + torch.__version__,
        "model": a.model, "batch": a.batch, "threads": a.threads, "mode": a.mode,
        "device": a.device, "dtype": a.dtype,
        "ms_per_step_median": med,
        "ms_per_step_min": min(times), "ms_per_step_max": max(times),
        "images_per_s": a.batch * 1e3 / med,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        **extra,
    }))


if __name__ == "__main__":
    main()
