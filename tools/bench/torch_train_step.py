#!/usr/bin/python3
"""PyTorch side of `dplab bench train --compare-pytorch`: times training steps of the same
network, batch and thread count, and prints one JSON object (its last line of output).

Uses Debian's python3-torch / python3-torchvision (run with /usr/bin/python3); the device kit
(tools/scripts/device-bundle.sh) carries it to GPU machines, where device-check.sh also runs it
alone as the PyTorch baseline. --device cuda times each step between device synchronisations
and reports the caching allocator's peak. The precision is a fair counterpart of dplab's:

  --dtype f32   f32 with TF32 OFF, as dplab's f32 (cuBLAS CUBLAS_COMPUTE_32F, cuDNN FMA math):
                torch.backends.cuda.matmul.allow_tf32 = False, torch.backends.cudnn.allow_tf32
                = False, torch.set_float32_matmul_precision("highest") (PyTorch >= 2.9: the
                fp32_precision = "ieee" settings instead, since mixing the two APIs is an error
                there); NCHW; cudnn.benchmark = True on CUDA (PyTorch users set it; it picks
                among the same non-TF32 algorithms).
  --dtype bf16  PyTorch as its users run mixed precision: model and input channels_last,
                torch.autocast(bfloat16) around the forward and the loss (weights, gradients and
                the SGD step in f32), cudnn.benchmark = True, PyTorch's default TF32 settings
                (only the ops autocast leaves in f32 are affected). cudnn.benchmark applies on
                CUDA only. On the CPU, channels_last applies where PyTorch's oneDNN runs bf16
                convolutions (AVX-512 CPUs): it is PyTorch's faster bf16 mode there (ResNet-50 at
                batch 8, 2 threads, Zen 5: 723-761 ms per step against 783-852 NCHW). Without
                them (AVX2), autocast runs alone on NCHW.

Every timed step follows --warmup untimed ones (at least 3 on CUDA, where the first steps pay
cudnn.benchmark's search and the caching allocator's growth; NCCL-tests warm up the same way).
The JSON says which mode ran: "precision", "tf32", "channels_last", "cudnn_benchmark", the torch
and cuDNN versions, and the warm-up actually used."""
import argparse
import json
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CUDA_MIN_WARMUP = 3


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
        return self.fc1(torch.flatten(x, 1))  # NCHW order on channels_last too (view cannot)


class _Bottleneck(nn.Module):
    """torchvision's v1.5 Bottleneck (stride in the 3x3 conv), as dplab's models/resnet.h."""
    expansion = 4

    def __init__(self, cin, planes, stride, down):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = down

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        return F.relu(self.bn3(self.conv3(out)) + idt)


class _BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride, down):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = down

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + idt)


def _resnet(depth, classes=1000):
    """torchvision.models.resnetN's layers, for a Python environment without torchvision (the
    GPU machine's may lack it): same convolutions, shapes and FLOPs, so the timing is the same."""
    block, stages = {18: (_BasicBlock, [2, 2, 2, 2]), 34: (_BasicBlock, [3, 4, 6, 3]),
                     50: (_Bottleneck, [3, 4, 6, 3]), 101: (_Bottleneck, [3, 4, 23, 3]),
                     152: (_Bottleneck, [3, 8, 36, 3])}[depth]
    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(True),
                   nn.MaxPool2d(3, 2, 1)], 64
    for i, n in enumerate(stages):
        planes = 64 << i
        for b in range(n):
            stride = 2 if i > 0 and b == 0 else 1
            down = None
            if stride != 1 or cin != planes * block.expansion:
                down = nn.Sequential(nn.Conv2d(cin, planes * block.expansion, 1, stride, bias=False),
                                     nn.BatchNorm2d(planes * block.expansion))
            layers.append(block(cin, planes, stride, down))
            cin = planes * block.expansion
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def build(model):
    """(network, input shape, classes, where the definition came from)."""
    if model == "mnist_cnn":
        return MnistCNN(), (1, 28, 28), 10, "tools/bench/torch_train_step.py"
    try:
        import torchvision
        return getattr(torchvision.models, model)(), (3, 224, 224), 1000, \
            "torchvision " + torchvision.__version__
    except ImportError:
        depth = int(model[len("resnet"):]) if model.startswith("resnet") else 0
        if depth not in (18, 34, 50, 101, 152):
            raise
        return _resnet(depth), (3, 224, 224), 1000, \
            "torch_train_step.py's copy of torchvision's ResNet (no torchvision here)"


def new_fp32_api():
    """PyTorch >= 2.9's fp32_precision settings (mixing them with allow_tf32 raises there)."""
    return hasattr(torch.backends.cuda.matmul, "fp32_precision")


def set_f32_no_tf32():
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    if new_fp32_api():
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        for b in (torch.backends.cudnn, getattr(torch.backends.cudnn, "conv", None),
                  getattr(torch.backends.cudnn, "rnn", None)):
            if b is not None and hasattr(b, "fp32_precision"):
                b.fp32_precision = "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def tf32_state():
    """What the run used, read back: {matmul, cudnn conv} -> True when TF32 is allowed."""
    try:
        if new_fp32_api():
            conv = getattr(torch.backends.cudnn, "conv", torch.backends.cudnn)
            return {"matmul": torch.backends.cuda.matmul.fp32_precision == "tf32",
                    "cudnn": conv.fp32_precision == "tf32"}
        return {"matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                "cudnn": bool(torch.backends.cudnn.allow_tf32)}
    except Exception as e:  # a mixed-API RuntimeError must not cost the measurement
        return {"error": str(e)}


def cpu_onednn_bf16_works():
    """Whether PyTorch's oneDNN runs a bf16 convolution on this CPU. Without AVX-512 (or under
    ONEDNN_MAX_CPU_ISA=AVX2) PyTorch 1.13's oneDNN has no bf16 convolution and autocast fails with
    "could not create a primitive descriptor iterator"; its native kernels still run bf16."""
    conv = nn.Conv2d(1, 2, 3)
    try:
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            conv(torch.rand(1, 1, 5, 5)).float().sum().backward()
        return True
    except RuntimeError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="mnist_cnn")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=10,
                    help=f"untimed steps first (at least {CUDA_MIN_WARMUP} on CUDA)")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--mode", choices=["train", "infer"], default="train")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32",
                    help="f32: TF32 off; bf16: autocast to bfloat16 (+ channels_last where "
                         "oneDNN or cuDNN runs bf16 convolutions, cudnn.benchmark on CUDA)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    if cuda and dev.index is not None:  # "cuda" alone: the current device
        torch.cuda.set_device(dev)
    bf16 = a.dtype == "bf16"
    if cuda:
        torch.backends.cudnn.benchmark = True
        if not bf16:
            set_f32_no_tf32()
    elif not bf16 and hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")  # the CPU's default; said for clarity
    onednn = True  # PyTorch's oneDNN kernels in use (CPU)
    if bf16 and not cuda and not cpu_onednn_bf16_works():
        torch.backends.mkldnn.enabled = False
        onednn = False
    channels_last = bf16 and (cuda or onednn)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    net, shape, classes, source = build(a.model)
    net = net.to(dev, memory_format=fmt)
    x = torch.rand(a.batch, *shape).to(dev).contiguous(memory_format=fmt)
    y = torch.randint(0, classes, (a.batch,)).to(dev)
    autocast = torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=bf16)
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

    warmup = max(a.warmup, CUDA_MIN_WARMUP) if cuda else a.warmup
    for _ in range(warmup):
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
    if not cuda:
        precision = "f32"
        if bf16:
            precision = "bf16 autocast" + (", channels_last" if channels_last else "") + " (CPU)"
        if not onednn:
            precision += ", oneDNN off: it has no bf16 convolution on this CPU"
    elif bf16:
        precision = "bf16 autocast, channels_last, cudnn.benchmark"
    else:
        precision = "f32 (TF32 off), cudnn.benchmark"
    tf32 = tf32_state() if cuda else {"matmul": False, "cudnn": False}
    extra = {}
    if cuda:
        extra = {
            "gpu": torch.cuda.get_device_name(dev),
            "peak_device_mb": torch.cuda.max_memory_allocated(dev) / (1024.0 * 1024.0),
            "cuda": torch.version.cuda,
        }
    print(json.dumps({
        "framework": "pytorch " + torch.__version__,
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "model": a.model, "model_source": source,
        "batch": a.batch, "threads": a.threads, "mode": a.mode,
        "device": a.device, "dtype": a.dtype,
        "precision": precision,
        # TF32 in f32 ops: false in f32 mode on both sides; in bf16 mode PyTorch's defaults
        # (they touch only the ops autocast keeps in f32), read back as tf32_matmul/tf32_cudnn.
        "tf32": bool(tf32.get("matmul") or tf32.get("cudnn")),
        "tf32_matmul": tf32.get("matmul"), "tf32_cudnn": tf32.get("cudnn"),
        **({"tf32_error": tf32["error"]} if "error" in tf32 else {}),
        "channels_last": channels_last,
        "cudnn_benchmark": bool(cuda and torch.backends.cudnn.benchmark),
        "warmup": warmup, "warmup_requested": a.warmup, "steps": a.steps,
        "ms_per_step_median": med,
        "ms_per_step_min": min(times), "ms_per_step_max": max(times),
        "images_per_s": a.batch * 1e3 / med,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        **extra,
    }))


if __name__ == "__main__":
    main()
