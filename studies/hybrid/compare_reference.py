#!/usr/bin/python3
"""Hybrid-SGD study: dplab against the PyTorch port of the thesis code (thesis_reference.py).

usage: compare_reference.py [STUDY_DIR]      (default: this file's directory)

Prints markdown (pasted into results.md, "Cross-check against the thesis code in PyTorch"):
  1. every PyTorch run in reference/<data>/<algo>/K<k>/seed<s>/ beside dplab's run of the same
     data, algorithm, K and seed (runs/...; dplab reshuffles every epoch, PyTorch's sampler only
     with --set-epoch, and the two frameworks draw different initial weights and orders): mean
     train loss (rank 0) at the end of stage 1 (epoch 7) and in the first stage-2 epochs, the
     final test accuracy;
  2. the same-trajectory check (reference/same_trajectory/): dplab and PyTorch from the same
     initial weights and the same batches, epoch by epoch, and iteration by iteration in the first
     stage-2 epoch from dplab's state at the end of stage 1.
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
import runs_archive  # noqa: E402

HERE = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent


def records(path):
    return [json.loads(l) for l in Path(path).read_text().splitlines() if l.strip()]


def epochs_of(path):
    return {r["epoch"]: r for r in records(path) if r["kind"] == "epoch"}


def final_of(path):
    f = [r for r in records(path) if r["kind"] == "final"]
    return f[0] if f else None


def fmt(x):
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.3f}"


def side_by_side():
    print("| data | algorithm | K | seed | framework | loss ep. 7 (stage 1) | loss ep. 8 (stage 2) |"
          " max iteration loss ep. 8 | loss ep. 9 | loss ep. 15 | final test acc % | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    def key(m):
        run = m.parent
        return (run.parent.parent.parent.name != "mnist", run.parent.parent.name,
                int(run.parent.name[1:]), int(run.name[4:]))

    for m in sorted((HERE / "reference").glob("*/*/K*/seed*/metrics.jsonl"), key=key):
        run = m.parent
        if not (run / "done").exists():
            continue
        seed, K, algo, data = run.name, run.parent.name, run.parent.parent.name, \
            run.parent.parent.parent.name
        if data == "same_trajectory":
            continue
        # reference.sh names: <algo>[_set-epoch][_accumulate_mean][_stage2-test_printed]
        label, dplab_algo = algo.replace("_set-epoch", ""), algo.replace("_set-epoch", "")
        if "_accumulate_mean" in algo:
            label = label.replace("_accumulate_mean", ", stage-2 mean")
            dplab_algo = dplab_algo.replace("_accumulate_mean", "_mean")
        if "_stage2-test_printed" in algo:
            label = label.replace("_stage2-test_printed", " as printed")
            dplab_algo = "hybrid_printed"
        rows = [("PyTorch" + (", set_epoch" if "set-epoch" in algo else ""), m)]
        d = HERE / "runs" / data / dplab_algo / K / seed / "metrics.jsonl"
        if "set-epoch" not in algo and d.exists() and (d.parent / "done").exists():
            rows.append(("dplab", d))
        for fw, path in rows:
            ep = epochs_of(path)
            fin = final_of(path)
            wall = (path.parent / "wall_s.txt").read_text().strip() \
                if (path.parent / "wall_s.txt").exists() else "-"
            g = lambda e, k="loss": ep[e][k] if e in ep and k in ep[e] else None
            print(f"| {data} | {label} | {K[1:]} | {seed[4:]} | {fw} | {fmt(g(7))} | {fmt(g(8))} |"
                  f" {fmt(g(8, 'max_iter_loss'))} | {fmt(g(9))} | {fmt(g(15))} |"
                  f" {100 * fin['test_acc']:.2f} | {wall} |")


def collapse_summary():
    """Per data, variant, framework and K: runs, runs alive after stage 1 (epoch-7 test accuracy
    > 50 %), of those the runs dead at the end of stage 2 (epoch-15 test accuracy < 20 %), and the
    final test accuracies. dplab: every finished seed in runs/; PyTorch: every run in reference/."""
    groups = {}

    def add(data, variant, fw, K, path):
        ep, fin = epochs_of(path), final_of(path)
        if fin is None or 7 not in ep or 15 not in ep:
            return
        g = groups.setdefault((data, variant, fw, K), [])
        g.append((ep[7]["test_acc"] > 0.5, ep[15]["test_acc"] < 0.2, 100 * fin["test_acc"]))

    for m in (HERE / "reference").glob("*/*/K*/seed*/metrics.jsonl"):
        run = m.parent
        data, algo, K = run.parent.parent.parent.name, run.parent.parent.name, int(run.parent.name[1:])
        if data == "same_trajectory" or not (run / "done").exists() or "hybrid" not in algo:
            continue
        fw = "PyTorch, set_epoch" if "set-epoch" in algo else "PyTorch"
        variant = ("stage-2 mean" if "accumulate_mean" in algo else
                   "as printed (stage 2 idle)" if "printed" in algo else "thesis reading (sum)")
        add(data, variant, fw, K, m)
    for algo, variant in (("hybrid_8_12", "thesis reading (sum)"), ("hybrid_8_12_mean", "stage-2 mean"),
                          ("hybrid_printed", "as printed (stage 2 idle)")):
        for m in (HERE / "runs").glob(f"*/{algo}/K*/seed*/metrics.jsonl"):
            if (m.parent / "done").exists():
                add(m.parent.parent.parent.parent.name, variant, "dplab",
                    int(m.parent.parent.name[1:]), m)
    print("| data | hybrid (8,12) variant | framework | K | runs | alive after stage 1 |"
          " of those, dead after stage 2 | final test acc % per run |")
    print("|---|---|---|---|---|---|---|---|")
    order = {"thesis reading (sum)": 0, "stage-2 mean": 1, "as printed (stage 2 idle)": 2}
    for (data, variant, fw, K) in sorted(groups, key=lambda k: (k[0] != "mnist", k[0],
                                                                 order[k[1]], k[2], k[3])):
        g = groups[(data, variant, fw, K)]
        alive = [x for x in g if x[0]]
        dead = [x for x in alive if x[1]]
        accs = ", ".join(f"{a:.1f}" for _, _, a in g)
        print(f"| {data} | {variant} | {fw} | {K} | {len(g)} | {len(alive)} | {len(dead)} | {accs} |")


def progress_losses(stdout, epoch, samples, batch=64):
    """Per-iteration rank-0 losses of `epoch` from dplab's progress lines: running means over the
    samples seen, printed with 4 decimals, so iteration n's loss (S_n m_n - S_(n-1) m_(n-1)) / b_n
    has an error of about n * 1e-4 (b_n = batch, less in the last batch of the rank's `samples`)."""
    means = {0: 0.0}
    for line in Path(stdout).read_text().splitlines():
        m = re.match(rf"epoch {epoch}/\d+\s+\d+% step (\d+)/\d+ loss ([0-9.]+)", line)
        if m:
            means[int(m.group(1))] = float(m.group(2))
    seen = lambda n: min(n * batch, samples)
    return [(seen(n) * means[n] - seen(n - 1) * means[n - 1]) / (seen(n) - seen(n - 1))
            for n in sorted(means) if n > 0 and n - 1 in means]


def same_trajectory():
    st = HERE / "reference" / "same_trajectory"
    for case, title in (("from_init", "from the same initial weights and data order"),
                        ("resume_epoch7", "from dplab's state at the end of stage 1 (epoch 7)")):
        dp, pt = st / case / "dplab" / "metrics.jsonl", st / case / "pytorch" / "metrics.jsonl"
        if not (dp.exists() and pt.exists()):
            continue
        ed, ep = epochs_of(dp), epochs_of(pt)
        print(f"\nSame trajectory, {title}: mean train loss (rank 0) / test accuracy per epoch\n")
        print("| epoch | stage | dplab loss | PyTorch loss | dplab test acc | PyTorch test acc |")
        print("|---|---|---|---|---|---|")
        for e in sorted(set(ed) & set(ep)):
            print(f"| {e} | {ep[e]['stage']} | {fmt(ed[e]['loss'])} | {fmt(ep[e]['loss'])} |"
                  f" {100 * ed[e]['test_acc']:.2f} | {100 * ep[e]['test_acc']:.2f} |")
        fd, fp = final_of(dp), final_of(pt)
        if fd and fp:
            print(f"| final | | | | {100 * fd['test_acc']:.2f} | {100 * fp['test_acc']:.2f} |")
        first = min(ep)
        trace = [r for r in records(pt) if r["kind"] == "iter" and r["epoch"] == first + 0]
        progress = {"from_init": st / case / "dplab_epoch1_progress.txt",
                    "resume_epoch7": st / case / "dplab" / "stdout.txt"}[case]
        if progress.exists() and trace:
            head = (st / case / "pytorch" / "stdout.txt").read_text()
            n_train, K = (int(x) for x in re.search(r": (\d+) train .* K = (\d+)", head).groups())
            dl = progress_losses(progress, first, -(-n_train // K))
            print(f"\nEpoch {first} (stage {trace[0]['stage']}), rank 0's loss per iteration "
                  "(dplab's decoded from its progress lines, +-n*1e-4):\n")
            print("| iteration | global it | synced step | dplab loss | PyTorch loss |")
            print("|---|---|---|---|---|")
            for i, r in enumerate(trace):
                d = dl[i] if i < len(dl) else None
                print(f"| {i + 1} | {r['iter']} | {'yes' if r['sync'] else ''} |"
                      f" {fmt(d)} | {fmt(r['loss'])} |")


if __name__ == "__main__":
    runs_archive.ensure(HERE / "reference")  # runs.tar.xz expanded if absent
    # Also kept as reference/comparison.md (regenerated on every run).
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print("# dplab against the PyTorch port of the thesis code (compare_reference.py)\n")
        collapse_summary()
        print()
        side_by_side()
        same_trajectory()
    (HERE / "reference" / "comparison.md").write_text(buf.getvalue())
    print(buf.getvalue(), end="")
