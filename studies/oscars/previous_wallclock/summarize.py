"""Oscars study: the table of results.md (summary.md) and the points of the idle-fraction figure.

Usage: python3 summarize.py STUDY_DIR [POINTS_DIR]
Reads runs/<algo>/metrics.jsonl (rank 0: per-epoch test accuracy, epoch time) and
runs/<algo>/rank_R.jsonl (every rank: epoch time, time waiting in collectives) and writes
summary.md. With POINTS_DIR, also POINTS_DIR/<algo>.jsonl: one record per rank (rank,
slowdown, idle_fraction over the whole run) for figures.sh, which draws the figures with
dplab plot."""
import json
import os
import sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
points = sys.argv[2] if len(sys.argv) > 2 else None
runs = [("allreduce", "BSP (AllReduce-SGD)"), ("local_sgd", "local SGD, H = 4"),
        ("oscars", "Oscars (exact, M = 4)")]


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


rows = []
for name, label in runs:
    d = os.path.join(here, "runs", name)
    if not os.path.exists(os.path.join(d, "metrics.jsonl")):
        continue
    ep = [r for r in read(os.path.join(d, "metrics.jsonl")) if r["kind"] == "epoch"]
    clock = sum(r["time_s"] for r in ep)
    acc = [r["test_acc"] for r in ep]
    idle, steps, slowdown = [], [], []
    for rank in range(4):
        rr = [r for r in read(os.path.join(d, f"rank_{rank}.jsonl")) if r["kind"] == "rank_epoch"]
        wait = sum(r["comm_exposed_wait_s"] for r in rr)
        tot = sum(r["time_s"] for r in rr)
        idle.append(wait / tot if tot > 0 else 0.0)
        steps.append(sum(r["computed_steps"] for r in rr))
        slowdown.append(rr[0].get("slowdown", 1.0))
    if points:
        os.makedirs(points, exist_ok=True)
        with open(os.path.join(points, f"{name}.jsonl"), "w") as f:
            for rank in range(4):
                f.write(json.dumps({"rank": rank, "slowdown": slowdown[rank],
                                    "idle_fraction": idle[rank]}) + "\n")
    tau = ""
    if "algo.tau_r0" in ep[-1]:
        tau = "/".join(str(int(ep[-1][f"algo.tau_r{k}"])) for k in range(4))
        tau += f" (T* = {ep[-1]['algo.T_us'] / 1000:.0f} ms)"
    rows.append((label, clock, acc[-1], max(acc), idle, steps, ep[-1]["comm_allreduces"], tau))

with open(os.path.join(here, "summary.md"), "w") as f:
    f.write("| algorithm | train time (s) | final test acc | best test acc | idle fraction "
            "r0 / r1 / r2 / r3 | computed steps r0 / r1 / r2 / r3 | tau r0/r1/r2/r3 |\n")
    f.write("|---|---|---|---|---|---|---|\n")
    for label, clock, fin, best, idle, steps, ar, tau in rows:
        f.write(f"| {label} | {clock:.1f} | {fin:.4f} | {best:.4f} | "
                + " / ".join(f"{x:.2f}" for x in idle) + " | "
                + " / ".join(str(s) for s in steps) + f" | {tau or '-'} |\n")
print(open(os.path.join(here, "summary.md")).read())
