#!/usr/bin/python3
"""Picks each method's learning rate per number of workers from the sweep on the validation
split: the highest final accuracy of rank 0 on the 10,000 held-out training images (the test set
is never used). Ties: the smaller lr. Prints "method W<w> lr val_acc" lines.

Usage: select_lr.py RUNS/lr_sweep
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "lib"))
import study_table as st  # noqa: E402


def main():
    root = pathlib.Path(sys.argv[1])
    for mdir in sorted(p for p in root.iterdir() if p.is_dir()):
        for wdir in sorted(mdir.glob("W*"), key=lambda p: int(p.name[1:])):
            best = None
            for lrdir in sorted(wdir.glob("lr*"), key=lambda p: float(p.name[2:])):
                rs = st.runs_of(lrdir)
                if not rs or rs[0].final_acc() is None:
                    continue
                acc = rs[0].final_acc()
                if best is None or acc > best[1]:
                    best = (lrdir.name[2:], acc)
            if best:
                print(f"{mdir.name} {wdir.name} {best[0]} {best[1]:.4f}")


if __name__ == "__main__":
    main()
