#!/usr/bin/python3
"""Low-communication study: tables from runs/<method>/seed<S>/metrics.jsonl (no training).

Usage: summarize.py RUNS_DIR [--out FILE.md] [--target ACC]

Per method, over its seeds (mean, and the lowest to highest seed in brackets):
- time to target: the virtual `elapsed_s` of the first epoch record whose `test_acc` >= the
  target (evaluation takes no virtual time; the granularity is one epoch); a seed that never
  reaches it is counted as not reached and left out of the mean;
- bytes per epoch: rank 0's `comm_bytes` summed over the epoch records / the number of epochs
  (payload rank 0 handed to the communicator: the algorithm's own traffic included);
- final test accuracy (the `final` record: the model after the algorithm's finish), virtual time
  per epoch (`time_s`, the slowest rank's) and rank 0's exposed communication wait per epoch.

The target (--target, default `auto`): the largest multiple of 0.005 that is at most 98% of
AllReduce's (SGD) mean final test accuracy and at most the best epoch accuracy of every run of
every method, so that every run reaches it (the rule is fixed before the results are seen;
README.md). Also listed: the times to a few fixed accuracies for context (FIXED_TARGETS).
"""
import argparse
import json
import math
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "lib"))
import runs_archive  # noqa: E402

# The order and names of methods.sh (kept here too so that the tables need no shell).
METHODS = {
    "allreduce": "AllReduce (SGD)",
    "powersgd": "AllReduce + PowerSGD r=2",
    "daso": "DASO",
    "local_sgd": "local SGD H=4",
    "slowmo": "SlowMo tau=48",
    "allreduce_adamw": "AllReduce (AdamW)",
    "diloco": "DiLoCo H=50",
    "sdiloco": "Streaming DiLoCo H=50 P=2",
    "sdiloco_int8": "Streaming DiLoCo int8",
    "sdiloco_int4": "Streaming DiLoCo int4",
}
FIXED_TARGETS = [0.80, 0.85, 0.88, 0.90]
BASELINE = "allreduce"


def load(path):
    """The epoch records and the final record (None if the run has none) of a metrics.jsonl."""
    epochs, final = [], None
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"{path}:{n}: not JSON: {e}")
        if rec.get("kind") == "epoch":
            epochs.append(rec)
        elif rec.get("kind") == "final":
            final = rec
    if not epochs:
        sys.exit(f"{path}: no epoch record (expected lines with \"kind\": \"epoch\")")
    return epochs, final


def time_to(epochs, target):
    """(virtual elapsed_s, epoch) of the first epoch at or above target, or None."""
    for e in epochs:
        if e["test_acc"] >= target:
            return e["elapsed_s"], e["epoch"]
    return None


def spread(values, fmt):
    """'mean [min-max]' of values, or the value alone for one, or '-' for none."""
    if not values:
        return "-"
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.mean(values))} [{fmt.format(min(values))}-" \
           f"{fmt.format(max(values))}]"


def auto_target(data):
    if BASELINE not in data:
        sys.exit(f"--target auto needs the {BASELINE} runs; give --target ACC")
    base = statistics.mean(final_acc(ep, fin) for ep, fin in data[BASELINE])
    reach = min(max(e["test_acc"] for e in ep) for runs in data.values() for ep, _ in runs)
    # k / 200, not k * 0.005: 165 * 0.005 is 0.8250000000000001, above a test accuracy of 0.825
    return math.floor(min(0.98 * base, reach) / 0.005 + 1e-9) / 200, base, reach


def final_acc(epochs, final):
    return final["test_acc"] if final else epochs[-1]["test_acc"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs")
    ap.add_argument("--out", help="write the tables to this Markdown file too")
    ap.add_argument("--target", default="auto", help="target test accuracy, or auto")
    args = ap.parse_args()
    runs = pathlib.Path(args.runs)
    runs_archive.ensure(runs)  # runs.tar.xz expanded if absent

    data, seeds = {}, {}
    for m in METHODS:
        paths = sorted(p for p in (runs / m).glob("seed*/metrics.jsonl")
                       if (p.parent / "done").exists())
        if paths:
            data[m] = [load(p) for p in paths]
            seeds[m] = [p.parent.name for p in paths]
    if not data:
        sys.exit(f"no finished runs under {runs} (expected <method>/seed<S>/done)")

    if args.target == "auto":
        target, base, reach = auto_target(data)
        how = (f"auto: the largest multiple of 0.005 <= min(0.98 x AllReduce's mean final "
               f"accuracy {base:.4f}, the lowest best-epoch accuracy of any run {reach:.4f})")
    else:
        target, how = float(args.target), "given (--target)"

    ref_bytes = None
    if BASELINE in data:
        ref_bytes = statistics.mean(
            sum(e["comm_bytes"] for e in ep) / len(ep) for ep, _ in data[BASELINE])
    lines = [
        f"Runs: {runs}. Target test accuracy {target:.3f} ({how}).",
        "Each cell: mean over seeds [lowest-highest seed]; times are virtual seconds on the "
        "run's platform (`time_base` in the records).",
        "",
        "| method | seeds | time to target, s | epoch reached | reached | bytes/epoch (rank 0) "
        "| vs AllReduce | final test acc | time/epoch, s | exposed wait/epoch, s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m, reps in data.items():
        hits = [time_to(ep, target) for ep, _ in reps]
        got = [h for h in hits if h]
        by = [sum(e["comm_bytes"] for e in ep) / len(ep) for ep, _ in reps]
        ratio = f"{statistics.mean(by) / ref_bytes:.3f}x" if ref_bytes else "-"
        lines.append(
            f"| {METHODS[m]} | {len(reps)} | {spread([h[0] for h in got], '{:.3f}')} "
            f"| {spread([h[1] for h in got], '{:.1f}')} | {len(got)}/{len(reps)} "
            f"| {spread([b / 1e6 for b in by], '{:.2f}')} MB | {ratio} "
            f"| {spread([final_acc(ep, fin) for ep, fin in reps], '{:.4f}')} "
            f"| {spread([statistics.mean(e['time_s'] for e in ep) for ep, _ in reps], '{:.3f}')} "
            f"| {spread([statistics.mean(e['comm_exposed_wait_s'] for e in ep) for ep, _ in reps], '{:.3f}')} |")

    lines += ["", "Time to fixed test accuracies (virtual s, mean over the seeds that reach it; "
              "n/N: seeds that reach it):", "",
              "| method | " + " | ".join(f"{t:.2f}" for t in FIXED_TARGETS) + " |",
              "|---|" + "---|" * len(FIXED_TARGETS)]
    for m, reps in data.items():
        cells = []
        for t in FIXED_TARGETS:
            got = [h[0] for h in (time_to(ep, t) for ep, _ in reps) if h]
            cells.append(f"{statistics.mean(got):.3f} ({len(got)}/{len(reps)})" if got
                         else f"- (0/{len(reps)})")
        lines.append(f"| {METHODS[m]} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        pathlib.Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
