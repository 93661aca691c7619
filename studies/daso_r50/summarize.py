"""Summarises studies/daso_r50/run.sh: per method, the virtual time of each epoch and their sum,
the final test accuracy, DASO's B and S per epoch, and the wall time, for each host load; then
whether the quiet and busy runs gave the same virtual times."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import runs_archive  # noqa: E402

runs = sys.argv[1]
runs_archive.ensure(runs)  # runs.tar.xz expanded if absent
LOADS = ["quiet", "busy"]
METHODS = [("allreduce_f32", "AllReduce f32"), ("allreduce_f16", "AllReduce, f16 wire"),
           ("classic", "one allreduce per tensor"), ("daso", "DASO (B_max 4, S 1)")]


def records(load, m):
    path = os.path.join(runs, load, m, "run", "metrics.jsonl")
    if not os.path.exists(path):
        return None
    ep, final = [], None
    for line in open(path):
        r = json.loads(line)
        if r.get("kind") == "epoch":
            ep.append(r)
        elif r.get("kind") == "final":
            final = r
    return ep, final


print("Virtual time per epoch (s, rank 0's epoch records, `time_s`) and its sum; final test "
      "accuracy on the first 500 test images; wall time of the training steps (`wall_s`, "
      "summed over epochs) beside it.\n")
print("| method | load | epoch 1 | epoch 2 | epoch 3 | epoch 4 | total virtual | test acc "
      "| B / S per epoch | total training wall, s |")
print("|---|---|---|---|---|---|---|---|---|---|")
same = []
for m, name in METHODS:
    totals = {}
    for load in LOADS:
        r = records(load, m)
        if r is None:
            continue
        ep, final = r
        if not ep:
            continue
        times = [e["time_s"] for e in ep]
        totals[load] = times
        bs = " ".join(f"{int(e['algo.B'])}/{int(e['algo.S'])}" for e in ep
                      if "algo.B" in e) or "-"
        acc = (final or ep[-1])["test_acc"]
        wall = sum(e.get("wall_s", float("nan")) for e in ep)
        cells = " | ".join(f"{t:.3f}" for t in times)
        print(f"| {name} | {load} | {cells} | {sum(times):.3f} | {acc:.4f} | {bs} | {wall:.1f} |")
    if len(totals) == 2:
        same.append((name, totals["quiet"] == totals["busy"],
                     max(abs(a - b) for a, b in zip(totals["quiet"], totals["busy"]))))
print()
for name, eq, diff in same:
    print(f"- {name}: quiet and busy virtual epoch times "
          + ("identical (bit for bit)" if eq else f"differ by up to {diff:.3g} s"))
