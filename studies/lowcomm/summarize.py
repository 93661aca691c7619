#!/usr/bin/python3
"""Low-communication study: tables from runs/<method>/seed<S>/metrics.jsonl (no training).

Usage: summarize.py RUNS_DIR [--out FILE.md] [--target ACC]

Per method, over its seeds (mean, and the lowest to highest seed in brackets):
- time to target: the virtual `elapsed_s` of the first epoch record whose `test_acc` >= the
  target (evaluation takes no virtual time; the granularity is one epoch); a seed that never
  reaches it is counted as not reached and left out of the mean;
- payload bytes per epoch: rank 0's `comm_bytes` summed over the epoch records / the number of
  epochs (what rank 0 handed to the communicator: the algorithm's own traffic included);
- wire bytes per epoch: what rank 0 put on its links (docs/metrics_schema.md, "Payload and wire
  bytes"), the figure to compare methods' traffic on: `comm_wire_bytes` where the records carry
  it (measured), else DERIVED from the payload with the collective's formula (wire_per_epoch
  below; marked "†" in the table); "vs AllReduce" compares wire bytes;
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
    "slowmo": "SlowMo tau=48 (every rank a worker)",
    "slowmo_fairscale": "SlowMo, fairscale's default",
    "allreduce_adamw": "AllReduce (AdamW)",
    "diloco": "DiLoCo H=50",
    "sdiloco": "Streaming DiLoCo H=50 P=2",
    "sdiloco_int8": "Streaming DiLoCo int8",
    "sdiloco_int4": "Streaming DiLoCo int4",
    "sdiloco_fp4": "Streaming DiLoCo fp4 (E2M1)",
}
FIXED_TARGETS = [0.80, 0.85, 0.88, 0.90]
BASELINE = "allreduce"

# The collective each method's iterations use over the world of P ranks, for runs whose records
# predate comm_wire_bytes (the archived runs of 2026-11-24): their wire bytes are derived from
# the payload with its formula (comm/wire_bytes.h; docs/metrics_schema.md):
#   allreduce (ring or tree) of n bytes: 2(P-1)/P n per rank;
#   allgather of this rank's block of b bytes (Streaming DiLoCo's quantised codes): (P-1) b.
# DASO mixes node-local groups (4 ranks), cross-node groups (8) and broadcasts in proportions its
# totals do not give: not derived (n/a).
METHOD_COLLECTIVE = {
    "allreduce": "allreduce",
    "powersgd": "allreduce",
    "daso": None,
    "local_sgd": "allreduce",
    "slowmo": "allreduce",
    "slowmo_fairscale": None,  # run 2026-11-28: measured
    "allreduce_adamw": "allreduce",
    "diloco": "allreduce",
    "sdiloco": "allreduce",
    # Rerun 2026-11-28 with the quantised reduce-scatter / allgather exchange: measured.
    "sdiloco_int8": None,
    "sdiloco_int4": None,
    "sdiloco_fp4": None,
}
DERIVED_NOTE = (
    "† derived, not measured: these runs predate `comm_wire_bytes`. Wire bytes per epoch = the "
    "payload of the middle epochs (2 to the last but one) x 2(P-1)/P for an allreduce, x (P-1) "
    "for an allgather of this rank's block, P = the run's ranks "
    "(comm/wire_bytes.h). The first and last epochs are left out of the derivation: their "
    "records also hold the set-up broadcast and the final averaging, f32 operations of another "
    "kind (studies/README.md); in the middle epochs the records' counters confirm one kind "
    "(every collective an allreduce, or none). n/a: DASO mixes groups of 4 and 8 ranks and "
    "broadcasts, not derivable from its totals; a run of fewer than 3 epochs has no middle "
    "epoch.")


def wire_per_epoch(method, epochs):
    """(wire bytes per epoch, derived?) of rank 0, or None when they cannot be had."""
    if all("comm_wire_bytes" in e for e in epochs):
        return sum(e["comm_wire_bytes"] for e in epochs) / len(epochs), False
    kind, middle = METHOD_COLLECTIVE.get(method), epochs[1:-1]
    if kind is None or not middle:
        return None
    for e in middle:
        if kind == "allreduce" and e["comm_allreduces"] != e["comm_collectives"]:
            return None
        if kind == "allgather" and e["comm_allreduces"] != 0:
            return None
    P = middle[0]["ranks"]
    factor = 2 * (P - 1) / P if kind == "allreduce" else P - 1
    return factor * sum(e["comm_bytes"] for e in middle) / len(middle), True


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

    def wires(m):
        """The wire bytes per epoch of each of m's runs and whether any was derived, or None."""
        w = [wire_per_epoch(m, ep) for ep, _ in data[m]]
        if any(x is None for x in w):
            return None
        return [x[0] for x in w], any(x[1] for x in w)

    ref_wire = wires(BASELINE) if BASELINE in data else None
    ref_wire = statistics.mean(ref_wire[0]) if ref_wire else None
    lines = [
        f"Runs: {runs}. Target test accuracy {target:.3f} ({how}).",
        "Each cell: mean over seeds [lowest-highest seed]; times are virtual seconds on the "
        "run's platform (`time_base` in the records). Payload: what rank 0 handed to the "
        "communicator (`comm_bytes`); wire: what it put on its links (`comm_wire_bytes`, "
        "docs/metrics_schema.md); \"vs AllReduce\" compares wire bytes.",
        "",
        "| method | seeds | time to target, s | epoch reached | reached "
        "| payload bytes/epoch (rank 0) | wire bytes/epoch (rank 0) | vs AllReduce (wire) "
        "| final test acc | time/epoch, s | exposed wait/epoch, s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    any_derived = False
    for m, reps in data.items():
        hits = [time_to(ep, target) for ep, _ in reps]
        got = [h for h in hits if h]
        by = [sum(e["comm_bytes"] for e in ep) / len(ep) for ep, _ in reps]
        w = wires(m)
        if w:
            mark = "†" if w[1] else ""
            any_derived = any_derived or w[1]
            wire = f"{spread([b / 1e6 for b in w[0]], '{:.2f}')} MB{mark}"
            ratio = f"{statistics.mean(w[0]) / ref_wire:.3f}x{mark}" if ref_wire else "-"
        else:
            any_derived = True
            wire, ratio = "n/a", "n/a"
        lines.append(
            f"| {METHODS[m]} | {len(reps)} | {spread([h[0] for h in got], '{:.3f}')} "
            f"| {spread([h[1] for h in got], '{:.1f}')} | {len(got)}/{len(reps)} "
            f"| {spread([b / 1e6 for b in by], '{:.2f}')} MB | {wire} | {ratio} "
            f"| {spread([final_acc(ep, fin) for ep, fin in reps], '{:.4f}')} "
            f"| {spread([statistics.mean(e['time_s'] for e in ep) for ep, _ in reps], '{:.3f}')} "
            f"| {spread([statistics.mean(e['comm_exposed_wait_s'] for e in ep) for ep, _ in reps], '{:.3f}')} |")

    if any_derived:
        lines += ["", DERIVED_NOTE]
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
