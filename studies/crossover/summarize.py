#!/usr/bin/python3
"""Crossover-SGD / SGP study: RUNS/<method>/W<w>/seed<N>/ -> one markdown file.

Usage: summarize.py RUNS OUT.md
Accuracy is rank 0's (gossip ranks hold different models) on the test set; the learning rates
come from RUNS/chosen_lr.txt (select_lr.py, the validation split). Times are virtual.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "lib"))
import runs_archive  # noqa: E402
import study_table as st  # noqa: E402

LABELS = {
    "allreduce": "AllReduce-SGD",
    "crossover": "Crossover-SGD",
    "crossover_hier": "Hierarchical Crossover-SGD (groups = nodes of 4)",
    "sgp": "SGP (±2^k graph, every step)",
    "sgp_interval": "SGP (±2^k graph, sgp.interval)",
}


PAIRS = [("crossover", "sgp"), ("crossover_hier", "allreduce"), ("crossover", "allreduce"),
         ("sgp", "allreduce"), ("sgp", "sgp_interval")]


def paired_section(runs):
    """Accuracy differences between two methods run with the same seed (same initial weights
    and data order), per worker count: mean [min, max] over the seeds both have."""
    workers = sorted({int(w.name[1:]) for m in LABELS for w in (runs / m).glob("W*")})
    rows = []
    for w in workers:
        row = [str(w)]
        for a, b in PAIRS:
            acc_a = {r.dir.name: r.final_acc() for r in st.runs_of(runs / a / f"W{w}")}
            acc_b = {r.dir.name: r.final_acc() for r in st.runs_of(runs / b / f"W{w}")}
            both = sorted(set(acc_a) & set(acc_b))
            diffs = [acc_a[k] - acc_b[k] for k in both]
            row.append(f"{st.stat(diffs, 4)} ({len(both)})" if diffs else "n/a")
        rows.append(row)
    if not rows:
        return []
    return ["\n## Accuracy differences paired by seed\n",
            "Rank 0's final test accuracy of the first method minus the second's, run with the "
            "same seed (the same initial weights and data order): mean over the seeds both have "
            "[min, max] (how many seeds).\n",
            st.table(["workers"] + [f"{LABELS[a].split(' (')[0]} - {LABELS[b].split(' (')[0]}"
                                    + (" (interval)" if b == "sgp_interval" else "")
                                    for a, b in PAIRS], rows)]


def lr_check_section(runs):
    """RUNS/lr_check/<method>/W<w>/lr<lr>/: a method at another lr than its chosen one (run.sh
    step 2b), beside its main runs at the chosen lr."""
    rows = []
    for m, label in LABELS.items():
        for wdir in sorted((runs / "lr_check" / m).glob("W*"), key=lambda q: int(q.name[1:])):
            for lrdir in sorted(wdir.glob("lr*")):
                rs = st.runs_of(lrdir)
                main = st.runs_of(runs / m / wdir.name)
                if not rs:
                    continue
                lr, _ = read_chosen(runs).get((m, wdir.name), ("?", "?"))
                rows.append([label, wdir.name[1:], lrdir.name[2:], str(len(rs)),
                             st.stat([r.final_acc() for r in rs], 4),
                             f"{lr}: " + st.stat([r.final_acc() for r in main], 4)])
    if not rows:
        return []
    return ["\n## Another lr than the chosen one (run.sh step 2b)\n",
            "Rank 0's final test accuracy, mean over the seeds [min, max].\n",
            st.table(["method", "workers", "lr", "seeds", "final test acc",
                      "at the chosen lr (main runs)"], rows)]


def read_chosen(runs):
    chosen = {}
    p = runs / "chosen_lr.txt"
    if p.exists():
        for line in p.read_text().splitlines():
            m, w, lr, acc = line.split()
            chosen[(m, w)] = (lr, acc)
    return chosen


def timing_section(runs):
    """RUNS/timing/<method>/W<w>/seed0: one epoch with every rank's compute replayed from a
    recorded profile (run.sh step 3), beside the measured-compute mean of the main runs."""
    rows = []
    for m, label in LABELS.items():
        for wdir in sorted((runs / "timing" / m).glob("W*"), key=lambda q: int(q.name[1:])):
            rs = st.runs_of(wdir)
            if not rs:
                continue
            e = rs[0].epochs[0]
            measured = [r.epoch_time() for r in st.runs_of(runs / m / wdir.name)]
            rows.append([label, wdir.name[1:], f"{e['time_s']:.3f}",
                         f"{e.get('comm_exposed_wait_s', 0):.3f}",
                         f"{e.get('comm_bytes', 0) / 1e6:.1f}", st.stat(measured, 3)])
    if not rows:
        return []
    return ["\n## Epoch time with profile compute (host-independent)\n",
            "One epoch of seed 0 (run.sh step 3): every rank's forward, backward and optimizer "
            "times replayed from `profile_resnet20_cifar_b16_cpu.json` x 0.1 (the devices of the "
            "main runs), so the virtual time does not depend on how the host scheduled the "
            "ranks. Exposed wait and MB payload: rank 0's, that epoch. Last column: the main runs' "
            "virtual epoch time with measured compute (mean over their epochs, then the seeds "
            "[min, max]), for comparison.\n",
            st.table(["method", "workers", "epoch time, s (virtual, profile compute)",
                      "exposed comm wait, s (rank 0)", "MB payload (rank 0)",
                      "epoch time, s (virtual, measured compute)"], rows)]


def main():
    runs, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    runs_archive.ensure(runs)  # runs.tar.xz expanded if absent
    chosen = read_chosen(runs)
    md = ["# Crossover-SGD / SGP study: results (generated by summarize.py)\n",
          "Each cell: mean over the seeds [min, max]. Accuracy: rank 0's final test accuracy. "
          "Times are **virtual** (metrics.jsonl; platform cost model + thread CPU time), wall "
          "time beside them. MB payload: the bytes rank 0 handed to its communicator (an "
          "allreduce of n bytes counts n, whatever the wire carries). lr: chosen on the "
          "validation split (10,000 training images held "
          "out; `select_lr.py`), its validation accuracy in brackets.\n"]
    rows = []
    for m, label in LABELS.items():
        for wdir in sorted((runs / m).glob("W*"), key=lambda q: int(q.name[1:])):
            rs = st.runs_of(wdir)
            if not rs:
                continue
            lr, acc = chosen.get((m, wdir.name), ("?", "?"))
            rows.append([label, wdir.name[1:], f"{lr} ({acc})"] + st.common_row(rs) + [
                st.stat([sum(e.get("comm_bytes", 0) for e in r.epochs) / len(r.epochs) / 1e6
                         for r in rs], 1)])
    md.append(st.table(["method", "workers", "lr (val acc)"] + st.COMMON_HEADER +
                       ["MB payload / epoch (rank 0)"], rows))
    md += paired_section(runs)
    md += lr_check_section(runs)
    md += timing_section(runs)
    out.write_text("\n".join(md))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
