"""Oscars study: test accuracy against training wall-clock time, and per-rank idle fraction.

Reads runs/<algo>/metrics.jsonl (rank 0: per-epoch test accuracy, epoch time) and
runs/<algo>/rank_R.jsonl (every rank: epoch time, time waiting in collectives), writes
oscars.png and summary.md (the table of results.md)."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
runs = [("allreduce", "BSP (AllReduce-SGD)"), ("local_sgd", "local SGD, H = 4"),
        ("oscars", "Oscars (exact, M = 4)")]


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
rows = []
for i, (name, label) in enumerate(runs):
    d = os.path.join(here, "runs", name)
    if not os.path.exists(os.path.join(d, "metrics.jsonl")):
        continue
    ep = [r for r in read(os.path.join(d, "metrics.jsonl")) if r["kind"] == "epoch"]
    t, acc, clock = [], [], 0.0
    for r in ep:
        clock += r["time_s"]
        t.append(clock)
        acc.append(r["test_acc"])
    ax.plot(t, acc, marker="o", label=label)
    idle, steps = [], []
    for rank in range(4):
        rr = [r for r in read(os.path.join(d, f"rank_{rank}.jsonl")) if r["kind"] == "rank_epoch"]
        wait = sum(r["comm_exposed_wait_s"] for r in rr)
        tot = sum(r["time_s"] for r in rr)
        idle.append(wait / tot if tot > 0 else 0.0)
        steps.append(sum(r["computed_steps"] for r in rr))
    bx.bar([x + 0.27 * (i - 1) for x in range(4)], idle, width=0.27, label=label)
    tau = ""
    if "algo.tau_r0" in ep[-1]:
        tau = "/".join(str(int(ep[-1][f"algo.tau_r{k}"])) for k in range(4))
        tau += f" (T* = {ep[-1]['algo.T_us'] / 1000:.0f} ms)"
    rows.append((label, clock, acc[-1], max(acc), idle, steps, ep[-1]["comm_allreduces"], tau))
ax.set_xlabel("training wall-clock time (s, evaluation excluded)")
ax.set_ylabel("test accuracy (2000 Fashion-MNIST test images)")
ax.grid(alpha=0.3)
ax.legend()
bx.set_xticks(range(4))
bx.set_xticklabels(["rank 0 (1x)", "rank 1 (1x)", "rank 2 (1.5x)", "rank 3 (2x)"])
bx.set_ylabel("idle fraction (wait in collectives / epoch time)")
bx.grid(alpha=0.3, axis="y")
bx.legend()
fig.suptitle("4 ranks, slowdowns 1 / 1 / 1.5 / 2, mnist_cnn, 6 epochs of 4096 samples")
fig.tight_layout()
fig.savefig(os.path.join(here, "oscars.png"), dpi=110)

with open(os.path.join(here, "summary.md"), "w") as f:
    f.write("| algorithm | train time (s) | final test acc | best test acc | idle fraction "
            "r0 / r1 / r2 / r3 | computed steps r0 / r1 / r2 / r3 | tau r0/r1/r2/r3 |\n")
    f.write("|---|---|---|---|---|---|---|\n")
    for label, clock, fin, best, idle, steps, ar, tau in rows:
        f.write(f"| {label} | {clock:.1f} | {fin:.4f} | {best:.4f} | "
                + " / ".join(f"{x:.2f}" for x in idle) + " | "
                + " / ".join(str(s) for s in steps) + f" | {tau or '-'} |\n")
print(open(os.path.join(here, "summary.md")).read())
