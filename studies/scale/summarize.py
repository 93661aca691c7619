"""Summarises studies/scale/run.sh: per world size, peak RSS per rank and in total, wall times
and the epoch's virtual time (rank 0's metrics.jsonl epoch record)."""
import glob
import json
import os
import sys

out = sys.argv[1]
print("| ranks | nodes x ranks/node | RSS per rank, MiB (min / mean / max) | RSS total, GiB "
      "| job wall, s | epoch training wall, s | epoch virtual, s | test acc |")
print("|---|---|---|---|---|---|---|---|")
for d in sorted(glob.glob(os.path.join(out, "np*")), key=lambda p: int(p.split("np")[-1])):
    n = int(d.split("np")[-1])
    rss = []
    for f in glob.glob(os.path.join(d, "rss.*")):
        for line in open(f):
            if line.startswith("rss_kb"):
                rss.append(int(line.split()[1]) / 1024)
    if len(rss) != n:
        print(f"| {n} | - | {len(rss)} of {n} ranks reported RSS (run failed?) | | | | | |")
        continue
    epoch = None
    final = None
    for line in open(os.path.join(d, "run", "metrics.jsonl")):
        r = json.loads(line)
        if r.get("kind") == "epoch":
            epoch = r
        elif r.get("kind") == "final":
            final = r
    wall = float(open(os.path.join(d, "job_wall_s.txt")).read())
    acc = (final or epoch or {}).get("test_acc", float("nan"))
    print(f"| {n} | {n // 4} x 4 | {min(rss):.0f} / {sum(rss) / n:.0f} / {max(rss):.0f} "
          f"| {sum(rss) / 1024:.2f} | {wall:.1f} | {epoch.get('wall_s', float('nan')):.1f} "
          f"| {epoch.get('time_s', float('nan')):.3f} | {acc:.4f} |")
