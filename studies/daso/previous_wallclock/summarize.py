#!/usr/bin/python3
"""DASO study: reads runs/<method>/rep*/metrics.jsonl, writes table.md (figures: figures.sh).

Usage: summarize.py RUNS_DIR OUT_DIR
Per method (mean over repeats): mean training time per epoch (all epochs, and the DASO cycling
epochs 2-5 alone), final test accuracy, rank 0's bytes sent and exposed communication wait
per epoch, and for DASO the B, S and global syncs of each epoch.
"""
import json
import pathlib
import statistics
import sys

LABELS = {
    "allreduce_f32": "AllReduce-SGD (f32, fused)",
    "allreduce_f16": "AllReduce-SGD (f16 wire, fused)",
    "classic": "classic (f32, one allreduce per tensor)",
    "daso": "DASO (B_max=4, S=1)",
}


def load(path):
    epochs, final = [], None
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "epoch":
            epochs.append(rec)
        elif rec.get("kind") == "final":
            final = rec
    return epochs, final


def main():
    runs, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    data = {}
    for m in LABELS:
        reps = sorted((runs / m).glob("rep*/metrics.jsonl"))
        if reps:
            data[m] = [load(p) for p in reps]
    rows = [
        "| method | epoch time, s (all) | epoch time, s (epochs 2-5) | final test acc | "
        "bytes sent / epoch (rank 0) | exposed wait / epoch, s (rank 0) | repeats |",
        "|---|---|---|---|---|---|---|",
    ]
    for m, reps in data.items():
        t_all = statistics.mean(statistics.mean(e["time_s"] for e in ep) for ep, _ in reps)
        t_mid = statistics.mean(
            statistics.mean(e["time_s"] for e in ep[1:-1]) for ep, _ in reps)
        acc = statistics.mean(fin["test_acc"] if fin else ep[-1]["test_acc"] for ep, fin in reps)
        by = statistics.mean(statistics.mean(e["comm_bytes"] for e in ep) for ep, _ in reps)
        wait = statistics.mean(
            statistics.mean(e["comm_exposed_wait_s"] for e in ep) for ep, _ in reps)
        rows.append(f"| {LABELS[m]} | {t_all:.2f} | {t_mid:.2f} | {acc:.4f} | {by / 1e6:.2f} MB "
                    f"| {wait:.2f} | {len(reps)} |")
    lines = rows
    if "daso" in data:
        lines += ["", "DASO per epoch (first repeat):", "",
                  "| epoch | phase | B | S | global syncs | time, s | loss | test acc |",
                  "|---|---|---|---|---|---|---|---|"]
        phase = {0: "warm-up", 1: "cycling", 2: "cool-down"}
        for e in data["daso"][0][0]:
            lines.append(
                f"| {e['epoch']} | {phase.get(int(e.get('algo.phase', -1)), '?')} "
                f"| {int(e.get('algo.B', 0))} | {int(e.get('algo.S', 0))} "
                f"| {int(e.get('algo.global_syncs', 0))} | {e['time_s']:.2f} | {e['loss']:.4f} "
                f"| {e['test_acc']:.4f} |")
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
