#!/usr/bin/python3
"""Hybrid-SGD study: results table (results_table.md) from the runs' metrics.

The figures are drawn by `dplab plot` (run.sh), one per dataset and K.

usage: summarize.py RUNS_DIR OUT_DIR

RUNS_DIR/<data>/<algo>/K<k>/seed<s>/metrics.jsonl are written by `dplab train` (rank 0).
Only finished runs (a `done` file beside the metrics) are used.
  test accuracy  the final record (epoch 20: the model after the final parameter average)
  train time     sum of the per-epoch training times of rank 0 (its iterations), virtual on the
                 cluster, plus rank 0's communication wait outside the epochs (the final record's
                 comm_outside_epochs_exposed_wait_s: the set-up broadcast and the final average;
                 mnist_cnn has no BatchNorm buffers to average before evaluations); evaluation
                 excluded, as the thesis times rank 0
  allreduces     rank 0's comm_allreduces over the epochs (gradient syncs) plus the final
                 record's comm_outside_epochs_allreduces (the final average), and its ratio to
                 each_iter's
"""
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
import runs_archive  # noqa: E402

ALGOS = ["each_iter", "hybrid_8_12", "hybrid_8_16", "only_end", "hybrid_8_12_mean",
         "hybrid_printed"]
LABELS = {"each_iter": "EachIter (P-SGD)", "hybrid_8_12": "hybrid (8,12)",
          "hybrid_8_16": "hybrid (8,16)", "only_end": "OnlyEnd",
          "hybrid_8_12_mean": "hybrid (8,12), stage-2 mean (variant)",
          "hybrid_printed": "hybrid (8,12) as printed (stage 2 idle; variant)"}
DATA_NAMES = {"mnist": "MNIST digits (8,000 train / 2,000 test)",
              "fashion-mnist": "Fashion-MNIST (60,000 train / 10,000 test)"}


def load(run):
    epochs, final = [], None
    for line in (run / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["kind"] == "epoch":
            epochs.append(r)
        elif r["kind"] == "final":
            final = r
    return epochs, final


def collect(runs_dir):
    res = {}  # (data, algo, K) -> list of dicts
    for m in sorted(runs_dir.glob("*/*/K*/seed*/metrics.jsonl")):
        run = m.parent
        if not (run / "done").exists():
            continue
        seed = run.name
        K = int(run.parent.name[1:])
        algo = run.parent.parent.name
        data = run.parent.parent.parent.name
        epochs, final = load(run)
        if final is None:
            continue
        res.setdefault((data, algo, K), []).append({
            "seed": seed,
            "acc": 100.0 * final["test_acc"],
            "time": sum(e["time_s"] for e in epochs)
            + final.get("comm_outside_epochs_exposed_wait_s", 0),
            "allreduces": sum(e.get("comm_allreduces", 0) for e in epochs)
            + final.get("comm_outside_epochs_allreduces", 0),
            "curve": [100.0 * e["test_acc"] for e in epochs],
            "iterations": final["step"],
            "stages": [e.get("algo.stage", 0) for e in epochs],
            "wall": float((run / "wall_s.txt").read_text()) if (run / "wall_s.txt").exists()
            else float("nan"),
        })
    # K = 1: only_end == each_iter and hybrid (8,16) == hybrid (8,12) in every parameter (run.sh
    # runs one of each); the allreduce count is the row's own schedule (expected_allreduces).
    for data in {d for (d, _, _) in res}:
        for dup, src in (("only_end", "each_iter"), ("hybrid_8_16", "hybrid_8_12")):
            if (data, dup, 1) not in res and (data, src, 1) in res:
                rows = []
                for r in res[(data, src, 1)]:
                    n = r["iterations"] // len(r["curve"])
                    rows.append(dict(r, same_as=src,
                                     allreduces=expected_allreduces(dup, len(r["curve"]), n)))
                res[(data, dup, 1)] = rows
    return res


def expected_allreduces(algo, E, n):
    """Allreduces of the thesis-code schedule (ceil split, global counter) + final average."""
    if algo == "each_iter":
        return E * n
    if algo == "only_end":
        return 1
    W, R = 8, int(algo.split("_")[2])
    S = (E + 2) // 3
    e2 = min(2 * S + 1, E)
    mult = lambda a, b, m: (b + m - 1) // m - (a + m - 1) // m  # noqa: E731
    return S * n + mult(S * n, e2 * n, W) + mult(e2 * n, E * n, R) + 1


def mean(xs):
    return statistics.fmean(xs) if xs else float("nan")


def fmt_acc(rs):
    a = [r["acc"] for r in rs]
    if len(a) == 1:
        return f"{a[0]:.2f} (1 seed)"
    return f"{mean(a):.2f} ± {statistics.stdev(a):.2f} [{min(a):.2f}, {max(a):.2f}]"


def fmt_spread(xs, digits):
    """mean [min, max] (the value alone for one seed)."""
    f = f"{{:.{digits}f}}"
    if len(xs) == 1:
        return f.format(xs[0])
    return f"{f.format(mean(xs))} [{f.format(min(xs))}, {f.format(max(xs))}]"


def table(res, data):
    Ks = sorted({k for (d, _, k) in res if d == data})
    lines = [f"### {DATA_NAMES.get(data, data)}", "",
             "| algorithm | K | seeds | test acc % (mean ± sd [min, max]) | "
             "train time s (rank 0, virtual; mean [min, max]) | "
             "allreduces | vs EachIter | wall s per run |",
             "|---|---|---|---|---|---|---|---|"]
    for K in Ks:
        base = res.get((data, "each_iter", K))
        base_ar = mean([r["allreduces"] for r in base]) if base else float("nan")
        for algo in ALGOS:
            rs = res.get((data, algo, K))
            if not rs:
                continue
            ar = mean([r["allreduces"] for r in rs])
            same = (f" (= {LABELS[rs[0]['same_as']]} run; allreduces counted from the schedule)"
                    if "same_as" in rs[0] else "")
            lines.append(
                f"| {LABELS[algo]}{same} | {K} | {len(rs)} | {fmt_acc(rs)} | "
                f"{fmt_spread([r['time'] for r in rs], 1)} | {ar:.0f} | {ar / base_ar:.3f} | "
                f"{mean([r['wall'] for r in rs]):.0f} |")
    return "\n".join(lines) + "\n"


def main():
    runs_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    runs_archive.ensure(runs_dir)  # runs.tar.xz expanded if absent
    res = collect(runs_dir)
    parts = []
    for data in ["mnist", "fashion-mnist"]:
        if any(d == data for (d, _, _) in res):
            parts.append(table(res, data))
            for K in sorted({k for (d, _, k) in res if d == data}):
                png = f"accuracy_{data}_K{K}.png"
                parts.append(f"![{data}, K = {K}]({png})\n")
    (out / "results_table.md").write_text("\n".join(parts))
    print("\n".join(parts))


if __name__ == "__main__":
    main()
