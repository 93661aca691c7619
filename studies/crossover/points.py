#!/usr/bin/python3
"""For the figures against the number of workers: writes OUT/<method>/seed<N>/metrics.jsonl with
one epoch record per worker count {workers, test_acc (rank 0's final), time_s (mean virtual
epoch time)} from RUNS/<method>/W<w>/seed<N>, and a `done`, so `dplab plot --x workers` draws
them (mean over the seeds with a band).

Usage: points.py RUNS OUT
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "lib"))
import study_table as st  # noqa: E402


def main():
    runs, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    by = {}
    for mdir in runs.iterdir():
        if not mdir.is_dir() or mdir.name in ("lr_sweep", "lr_check", "timing"):
            continue
        for wdir in mdir.glob("W*"):
            for r in st.runs_of(wdir):
                by.setdefault((mdir.name, r.dir.name), []).append((int(wdir.name[1:]), r))
    for (m, seed), pts in by.items():
        d = out / m / seed
        d.mkdir(parents=True, exist_ok=True)
        recs = [{"kind": "epoch", "epoch": i + 1, "workers": w, "test_acc": r.final_acc(),
                 "time_s": r.epoch_time()} for i, (w, r) in enumerate(sorted(pts, key=lambda x: x[0]))]
        (d / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in recs))
        (d / "done").touch()


if __name__ == "__main__":
    main()
