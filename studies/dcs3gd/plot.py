"""Figures of the DC-S3GD study: test accuracy per epoch of each run (runs/*/metrics.jsonl) and
step time per emulated link against the paper's eq. 13 / eq. 14 (bench.txt).

Usage: python3 plot.py STUDY_DIR
"""
import json
import pathlib
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {
    "allreduce": "AllReduce-SGD",
    "dcs3gd": "DC-S3GD (λ0=0.2)",
    "dcs3gd_nocomp": "DC-S3GD, no compensation (λ0=0)",
}


def read_runs(study):
    runs = {}
    for name in LABELS:
        path = study / "runs" / name / "metrics.jsonl"
        if not path.exists():
            continue
        epochs = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
        runs[name] = [e for e in epochs if e.get("kind") == "epoch"]
    return runs


def read_bench(study):
    """Rows of bench.txt: link -> {phase: step_ms, eq13, eq14}."""
    out, link = {}, None
    for line in (study / "bench.txt").read_text().splitlines():
        m = re.search(r"link\.inter (\S+),? \d+ rounds", line)
        if m:
            link = m.group(1).rstrip(",")
            out[link] = {}
            continue
        parts = line.split()
        if link and parts and parts[0] in ("compute", "comm", "allreduce", "dcs3gd"):
            out[link][parts[0]] = float(parts[1])
        m = re.search(r"eq13 .* = ([\d.]+) ms, eq14 .* = ([\d.]+) ms", line)
        if link and m:
            out[link]["eq13"], out[link]["eq14"] = float(m.group(1)), float(m.group(2))
    return out


def main():
    study = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for name, epochs in read_runs(study).items():
        ax1.plot([e["epoch"] for e in epochs], [100 * e["test_acc"] for e in epochs], marker="o",
                 label=LABELS[name])
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("test accuracy (%)")
    ax1.set_title("Fashion-MNIST, mnist_cnn, 4 ranks x batch 64")
    ax1.legend()
    ax1.grid(alpha=0.3)

    bench = read_bench(study)
    links = list(bench)
    x = range(len(links))
    w = 0.2
    for i, (key, label) in enumerate([("eq13", "eq. 13: t_C + t_ARed"),
                                      ("allreduce", "AllReduce-SGD (measured)"),
                                      ("eq14", "eq. 14: max(t_C, t_ARed)"),
                                      ("dcs3gd", "DC-S3GD (measured)")]):
        ax2.bar([j + (i - 1.5) * w for j in x], [bench[l].get(key, 0) for l in links], w,
                label=label)
    ax2.set_xticks(list(x))
    ax2.set_xticklabels(links)
    ax2.set_xlabel("emulated inter-node link (latency, bandwidth)")
    ax2.set_ylabel("ms per step")
    ax2.set_title("step time, 4 ranks = 2 virtual nodes x 2")
    ax2.legend(fontsize=8)
    ax2.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(study / "dcs3gd.png", dpi=110)


if __name__ == "__main__":
    main()
