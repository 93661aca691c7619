#!/usr/bin/python3
"""PyTorch side of `dplab bench train --compare-pytorch`: times training steps of the same
network, batch and thread count, and prints one JSON object.

Uses Debian's python3-torch / python3-torchvision (run with /usr/bin/python3)."""
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
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net, shape, classes = build(a.model)
    x = torch.rand(a.batch, *shape)
    y = torch.randint(0, classes, (a.batch,))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, nesterov=True)
    loss_fn = nn.CrossEntropyLoss()
    if a.mode == "infer":
        net.eval()

    def step():
        if a.mode == "infer":
            with torch.no_grad():
                net(x)
            return
        opt.zero_grad(set_to_none=True)
        loss_fn(net(x), y).backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(times)
    print(json.dumps({
        "framework": "pytorch " + torch.__version__,
        "model": a.model, "batch": a.batch, "threads": a.threads, "mode": a.mode,
        "ms_per_step_median": med,
        "ms_per_step_min": min(times), "ms_per_step_max": max(times),
        "images_per_s": a.batch * 1e3 / med,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }))


if __name__ == "__main__":
    main()
