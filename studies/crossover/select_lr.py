#!/usr/bin/python3
"""Picks each method's learning rate per number of workers from the sweep on the validation
split: the highest final accuracy of rank 0 on the 10,000 held-out training images (the test set
is never used). Ties: the smaller lr. Prints "method W<w> lr val_acc" lines.

With --extend LO HI it prints instead the sweep's next runs, "method W<w> lr" lines: for every
method and worker count whose best lr is the smallest (largest) one swept, half of it (twice it),
unless that leaves [LO, HI]. A best lr at the edge of the grid is not known to be the optimum;
run.sh repeats the sweep until no line is printed, so every chosen lr is inside the grid or at
a bound (README "What is run").

Usage: select_lr.py RUNS/lr_sweep
       select_lr.py RUNS/lr_sweep --extend LO HI
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "lib"))
import study_table as st  # noqa: E402


def swept(wdir):
    """(lr as written, lr, rank 0's validation accuracy) of every finished run, by lr. A run
    that failed (run.sh marks it `failed`: a diverged lr stops with a non-finite loss) counts
    as accuracy -1, the worst."""
    out = []
    for lrdir in sorted(wdir.glob("lr*"), key=lambda p: float(p.name[2:])):
        if (lrdir / "seed0" / "failed").exists():
            out.append((lrdir.name[2:], float(lrdir.name[2:]), -1.0))
            continue
        rs = st.runs_of(lrdir)
        if rs and rs[0].final_acc() is not None:
            out.append((lrdir.name[2:], float(lrdir.name[2:]), rs[0].final_acc()))
    return out


def best_of(runs):
    best = None
    for r in runs:
        if best is None or r[2] > best[2]:  # strict: ties keep the smaller lr
            best = r
    return best


def main():
    root = pathlib.Path(sys.argv[1])
    extend = None
    if len(sys.argv) == 5 and sys.argv[2] == "--extend":
        try:
            extend = (float(sys.argv[3]), float(sys.argv[4]))
        except ValueError:
            sys.exit(f"select_lr.py --extend LO HI: expected two numbers, got {sys.argv[3:]}")
    elif len(sys.argv) != 2:
        sys.exit(__doc__)
    for mdir in sorted(p for p in root.iterdir() if p.is_dir()):
        for wdir in sorted(mdir.glob("W*"), key=lambda p: int(p.name[1:])):
            runs = swept(wdir)
            best = best_of(runs)
            if not best:
                continue
            if extend is None:
                print(f"{mdir.name} {wdir.name} {best[0]} {best[2]:.4f}")
                continue
            nxt = None
            if best is runs[0] and best[1] / 2 >= extend[0]:
                nxt = best[1] / 2
            elif best is runs[-1] and best[1] * 2 <= extend[1]:
                nxt = best[1] * 2
            if nxt is not None:
                print(f"{mdir.name} {wdir.name} {nxt:g}")


if __name__ == "__main__":
    main()
