#!/usr/bin/python3
"""The faults study's tables (README.md) from its runs: RUNS/<scenario>/<method>/seed<N>/.

Per scenario and method, over the seeds (mean [min, max]; only runs with `done`):
  - time to the target test accuracy (virtual s, the end of the first epoch that reaches it;
    epochs are ~50 virtual s, so that is the resolution);
  - the run's total virtual time and final test accuracy;
  - rank-seconds lost: the 32 ranks' virtual time that produced no kept training. Algorithms
    that go on: the final record's `failure_lost_rank_s` (the down ranks x the steps' time).
    AllReduce, stopped and restarted: every rank from the checkpoint it restarts from to the
    restart (32 x (t_return + restart_s - t_checkpoint)): the work since the checkpoint is
    redone and no rank trains while the job waits for its node;
  - recovery: the heals' virtual time (`recovery_s`) for the algorithms that go on; for the
    restart, the assumed restart overhead (--restart-s, default 0: a lower bound).
The restart's records continue the stopped run's virtual clock from its checkpoint; this
script places them after the failed node's return (t_return = the fail event's from_s +
for_s), as a scheduler that requeues the job on its 8 nodes would, and writes the joined
records to <run>/joined_metrics.jsonl for the figures.

Usage: summarize.py RUNS [--out FILE.md] [--target ACC] [--restart-s S]
"""
import argparse
import json
import pathlib
import re
import statistics
import sys

HERE = pathlib.Path(__file__).resolve().parent
RANKS = 32
TARGETS = (0.80, 0.82, 0.84, 0.86)


def methods():
    """ALL_METHODS, ALL_SCENARIOS and NAME from methods.sh (bash syntax, read by regex)."""
    text = (HERE / "methods.sh").read_text()
    ms = re.search(r'^ALL_METHODS="([^"]*)"', text, re.M).group(1).split()
    ss = re.search(r'^ALL_SCENARIOS="([^"]*)"', text, re.M).group(1).split()
    block = text[text.index("declare -A NAME=("):]
    names = dict(re.findall(r'\[(\w+)\]="([^"]*)"', block[: block.index("\n)")]))
    return ms, ss, names


def records(path):
    out = []
    for line in pathlib.Path(path).read_text().splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def fail_return_s(events_file):
    """from_s + for_s of the fail event in a study's events file (TOML, read by regex)."""
    text = pathlib.Path(events_file).read_text()
    f = float(re.search(r"^from_s\s*=\s*([0-9.]+)", text, re.M).group(1))
    d = float(re.search(r"^for_s\s*=\s*([0-9.]+)", text, re.M).group(1))
    return f + d


class Cell:
    """One run (a method, scenario and seed), joined with its restart when it has one."""

    def __init__(self, d, restart_s):
        self.dir = d
        recs = records(d / "metrics.jsonl")
        self.stopped = next((r for r in recs if r.get("kind") == "stopped"), None)
        self.epochs = [r for r in recs if r.get("kind") == "epoch"]
        self.final = next((r for r in recs if r.get("kind") == "final"), None)
        self.heals = [r.get("heal_s", 0.0) for r in recs if r.get("kind") == "liveness"]
        self.lost_rank_s = self.final.get("failure_lost_rank_s", 0.0) if self.final else 0.0
        self.recovery_s = self.final.get("recovery_s", 0.0) if self.final else 0.0
        if self.stopped:
            cmd = (d / "command.txt").read_text()
            events = re.search(r"cluster\.events=(\S+)", cmd).group(1)
            t_return = fail_return_s(events)
            t_ckpt = self.stopped["virtual_time_s"] - self.stopped["lost_s"]
            shift = t_return + restart_s - t_ckpt  # the restart's clock goes on from t_ckpt
            rrecs = records(d / "restart" / "metrics.jsonl")
            joined = list(self.epochs)
            for r in rrecs:
                if r.get("kind") == "epoch":
                    r = dict(r, elapsed_s=r["elapsed_s"] + shift, restart_shift_s=shift)
                    joined.append(r)
            self.epochs = joined
            self.final = next((r for r in rrecs if r.get("kind") == "final"), None)
            self.total_s = self.final["total_time_s"] + shift if self.final else None
            self.lost_rank_s = RANKS * (t_return + restart_s - t_ckpt)
            self.recovery_s = restart_s
            with open(d / "joined_metrics.jsonl", "w") as f:
                for r in self.epochs:
                    f.write(json.dumps(r, sort_keys=True) + "\n")
        else:
            self.total_s = self.final["total_time_s"] if self.final else None

    def time_to(self, target):
        for e in self.epochs:
            if e.get("test_acc") is not None and e["test_acc"] >= target:
                return e["elapsed_s"]
        return None

    def final_acc(self):
        return self.final.get("test_acc") if self.final else None


def cell_text(values, fmt="{:.1f}"):
    vs = [v for v in values if v is not None]
    if not vs:
        return "-"
    if len(vs) == 1:
        return fmt.format(vs[0])
    return f"{fmt.format(statistics.mean(vs))} [{fmt.format(min(vs))}-{fmt.format(max(vs))}]"


def reached(values):
    return f"{sum(v is not None for v in values)}/{len(values)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs")
    ap.add_argument("--out")
    ap.add_argument("--target", type=float, default=0.80)
    ap.add_argument("--restart-s", type=float, default=0.0)
    a = ap.parse_args()
    runs = pathlib.Path(a.runs)
    ms, ss, names = methods()
    cells = {}
    for sc in ss:
        for m in ms:
            for d in sorted((runs / sc / m).glob("seed*")):
                if (d / "done").exists():
                    cells.setdefault((sc, m), []).append(Cell(d, a.restart_s))
    if not cells:
        sys.exit(f"summarize.py: no finished run under {runs}")
    out = [
        f"Runs: {runs.name}/. Target test accuracy {a.target}. 32 ranks (8 nodes x 4) of "
        "configs/gpu4-25gbe-r50.toml; every time is virtual seconds; cells are mean "
        "[lowest-highest] over the seeds (n: how many). Restart overhead assumed "
        f"{a.restart_s:g} s (summarize.py --restart-s).",
        "",
        "| scenario | method | seeds | time to target, s | reached | total time, s | "
        "vs no event (same method), s | final test acc | rank-s lost | recovery, s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    base_total = {}
    for m in ms:
        cs = cells.get(("none", m), [])
        if cs:
            base_total[m] = statistics.mean(c.total_s for c in cs if c.total_s is not None)
    for sc in ss:
        for m in ms:
            cs = cells.get((sc, m))
            if not cs:
                continue
            tt = [c.time_to(a.target) for c in cs]
            delta = (
                [c.total_s - base_total[m] for c in cs if c.total_s is not None]
                if m in base_total and sc != "none"
                else []
            )
            out.append(
                f"| {sc} | {names.get(m, m)} | {len(cs)} | {cell_text(tt)} | {reached(tt)} | "
                f"{cell_text([c.total_s for c in cs])} | {cell_text(delta, '{:+.1f}')} | "
                f"{cell_text([c.final_acc() for c in cs], '{:.4f}')} | "
                f"{cell_text([c.lost_rank_s for c in cs], '{:.0f}')} | "
                f"{cell_text([c.recovery_s for c in cs], '{:.3f}')} |"
            )
    out += [
        "",
        "Time to fixed test accuracies (virtual s, mean over the seeds that reach it; n/N: seeds "
        "that reach it; the end of the first epoch at or above it):",
        "",
        "| scenario | method | " + " | ".join(f"{t:.2f}" for t in TARGETS) + " |",
        "|---|---|" + "---|" * len(TARGETS),
    ]
    for sc in ss:
        for m in ms:
            cs = cells.get((sc, m))
            if not cs:
                continue
            row = []
            for t in TARGETS:
                tt = [c.time_to(t) for c in cs]
                got = [v for v in tt if v is not None]
                row.append(f"{statistics.mean(got):.1f} ({reached(tt)})" if got else f"- ({reached(tt)})")
            out.append(f"| {sc} | {names.get(m, m)} | " + " | ".join(row) + " |")
    out.append("")
    text = "\n".join(out)
    if a.out:
        pathlib.Path(a.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
