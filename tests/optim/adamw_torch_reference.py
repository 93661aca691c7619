#!/usr/bin/python3
# Generates the torch.optim.AdamW reference of tests/optim/test_adamw.cpp (kTorch...): the same
# initial values, gradients and hyper-parameters as the test's configurations, five steps of
# torch 1.13's AdamW (foreach=False, amsgrad=False) on CPU in float32, printed as C++ hex floats.
# Run: /usr/bin/python3 tests/optim/adamw_torch_reference.py   (prints the arrays to paste)
import math

import torch


def grad(k, i, scale):
    # The test's gradient of step k, element i (same formula in C++).
    return scale * (0.1 + 0.9 * abs(math.sin(1.7 * i + 0.9 * k + 0.3))) * (1 if (i + k) % 3 else -1)


def hexf(x):
    # Shortest hex spelling of the float: trailing zero digits of the mantissa dropped.
    m, e = x.hex().split("p")
    m = m.rstrip("0").rstrip(".")
    return m + "p" + e + "f"


def run(name, lr, betas, eps, wd, scale):
    w = torch.tensor([0.5 - 0.25 * i for i in range(6)], dtype=torch.float32, requires_grad=True)
    b = torch.tensor([1.0, -0.75, 0.125], dtype=torch.float32, requires_grad=True)
    opt = torch.optim.AdamW([{"params": [w], "weight_decay": wd}, {"params": [b], "weight_decay": 0.0}],
                            lr=lr, betas=betas, eps=eps, foreach=False)
    out = []
    for k in range(5):
        w.grad = torch.tensor([grad(k, i, scale) for i in range(6)], dtype=torch.float32)
        b.grad = torch.tensor([grad(k, 6 + i, scale) for i in range(3)], dtype=torch.float32)
        opt.step()
        out.append([float(x) for x in torch.cat([w.detach(), b.detach()])])
    print(f"// {name}: torch {torch.__version__}")
    print(f"const float {name}[5][9] = {{")
    for row in out:
        print("    {" + ", ".join(hexf(x) for x in row) + "},")
    print("};")


run("kTorchDefaults", 1e-3, (0.9, 0.999), 1e-8, 1e-2, 1.0)
run("kTorchLargeEps", 0.05, (0.8, 0.95), 1e-3, 0.1, 1e-3)
