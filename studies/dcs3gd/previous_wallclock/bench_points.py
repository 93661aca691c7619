"""Step times of bench.txt (dcs3gd_bench, one block per emulated link) as records for dplab plot.

Usage: python3 bench_points.py BENCH_TXT OUT_DIR
Writes OUT_DIR/<series>.jsonl for the series eq13 (t_C + t_ARed), allreduce (AllReduce-SGD,
measured), eq14 (max(t_C, t_ARed)) and dcs3gd (DC-S3GD, measured): one record per link with
t_ared_ms (the blocking allreduce's time per step on that link: the x of the figure) and step_ms.
figures.sh draws them; this script only reads the text.
"""
import json
import pathlib
import re
import sys


def read_bench(path):
    """Rows of bench.txt: link -> {phase: step_ms, eq13, eq14}."""
    out, link = {}, None
    for line in path.read_text().splitlines():
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
    bench, out = read_bench(pathlib.Path(sys.argv[1])), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for series in ("eq13", "allreduce", "eq14", "dcs3gd"):
        rows = sorted((b["comm"], b[series]) for b in bench.values() if series in b)
        (out / f"{series}.jsonl").write_text("".join(
            json.dumps({"t_ared_ms": x, "step_ms": y}) + "\n" for x, y in rows))


if __name__ == "__main__":
    main()
