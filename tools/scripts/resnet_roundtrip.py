#!/usr/bin/python3
"""Checkpoint interop between dplab and torchvision's ResNets, both directions.

A (dplab -> PyTorch): `dplab init` writes fresh weights; torchvision's model loads them with
  strict=True (every name, shape and dtype must agree, num_batches_tracked as int64) and its
  eval-mode logits must equal those of `dplab predict` on the same checkpoint.
B (PyTorch -> dplab): a torchvision model with non-trivial BatchNorm statistics (a few
  train-mode forwards) and perturbed gamma/beta is saved; `dplab predict` must reproduce its
  eval-mode logits.

Pass criterion: max |logits_dplab - logits_torch| < --tol (default 1e-4). Direction A's fresh
BatchNorm statistics (mean 0, var 1) make the eval network positively homogeneous in its
input (ReLU, no conv biases, BN linear), so its input is scaled to keep logits of order 1.

The safetensors format is read and written here with json + struct (no extra package).
Run with /usr/bin/python3 (Debian torch + torchvision). Exit status 0 on success.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import torch
import torchvision

DTYPES = {torch.float32: "F32", torch.int64: "I64", torch.float64: "F64", torch.int32: "I32"}
FROM_NAME = {v: k for k, v in DTYPES.items()}


def save_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        data = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        dtype = FROM_NAME[info["dtype"]]
        buf = bytearray(body[b:e])
        t = torch.frombuffer(buf, dtype=dtype) if len(buf) else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")


def dplab_predict(args, ckpt, x, work, tag):
    inp, out = os.path.join(work, f"{tag}_input.safetensors"), os.path.join(work, f"{tag}_logits.safetensors")
    save_safetensors(inp, {"input": x})
    run([args.dplab, "predict", "--model", args.model, "--checkpoint", ckpt, "--input", inp,
         "--output", out])
    return load_safetensors(out)["logits"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dplab", required=True, help="path of the dplab executable")
    p.add_argument("--model", default="resnet50", help="resnet18 ... resnet152")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workdir", default="")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    work = args.workdir or tempfile.mkdtemp(prefix="resnet_roundtrip_")
    os.makedirs(work, exist_ok=True)
    ctor = getattr(torchvision.models, args.model)
    x = torch.randn(args.batch, 3, args.size, args.size)
    ok = True

    # ---- A: dplab -> PyTorch --------------------------------------------------------------
    a_ckpt = os.path.join(work, "dplab_init.safetensors")
    run([args.dplab, "init", "--model", args.model, "--seed", "7", "--out", a_ckpt])
    sd = load_safetensors(a_ckpt)
    tv = ctor()
    ref = tv.state_dict()
    for k, v in ref.items():
        if k in sd and sd[k].dtype != v.dtype:
            sys.exit(f"A: {k} has dtype {sd[k].dtype} in the dplab file, torchvision has {v.dtype}")
    tv.load_state_dict(sd, strict=True)
    tv.eval()
    with torch.no_grad():
        scale = 1.0 / max(1.0, tv(x).abs().max().item())
        xa = x * scale
        want = tv(xa)
    got = dplab_predict(args, a_ckpt, xa, work, "a")
    diff = (got - want).abs().max().item()
    print(f"A dplab->torch {args.model}: {len(sd)} tensors loaded strict, "
          f"max|logit| {want.abs().max().item():.3f}, max abs diff {diff:.3g}")
    ok &= diff < args.tol

    # ---- B: PyTorch -> dplab --------------------------------------------------------------
    tv = ctor()
    with torch.no_grad():
        for m in tv.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.momentum = None  # cumulative average of the batches below
        tv.train()
        for _ in range(3):
            tv(torch.randn(4, 3, args.size // 2, args.size // 2))
        tv.eval()
        want = tv(x)
    b_ckpt = os.path.join(work, "torch.safetensors")
    save_safetensors(b_ckpt, tv.state_dict(), {"model": args.model})
    got = dplab_predict(args, b_ckpt, x, work, "b")
    diff = (got - want).abs().max().item()
    print(f"B torch->dplab {args.model}: max|logit| {want.abs().max().item():.3f}, "
          f"max abs diff {diff:.3g}")
    ok &= diff < args.tol
    print("PASS" if ok else f"FAIL (tolerance {args.tol})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
