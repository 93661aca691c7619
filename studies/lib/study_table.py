"""Shared by the studies' summarize.py: reading runs and writing mean [min, max] tables.

A run directory holds metrics.jsonl (docs/metrics_schema.md; with a virtual cluster every time
is virtual: time_s, elapsed_s, images_per_s; wall_s / elapsed_wall_s beside them), and the
runner's wall_s.txt and maxrss_kb.txt (studies/lib/common.sh). A configuration is a directory
of seed<N>/ runs; only finished runs (a `done` file) count.
"""
import json
import math
import pathlib
import statistics


class Run:
    def __init__(self, d):
        self.dir = pathlib.Path(d)
        self.epochs, self.steps, self.final = [], [], None
        for line in (self.dir / "metrics.jsonl").read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            kind = rec.get("kind")
            if kind == "epoch":
                self.epochs.append(rec)
            elif kind == "step":
                self.steps.append(rec)
            elif kind == "final":
                self.final = rec
        self.run_wall_s = _read_float(self.dir / "wall_s.txt")
        rss = _read_float(self.dir / "maxrss_kb.txt")
        self.maxrss_mib = rss / 1024 if rss is not None else None

    def final_acc(self):
        if self.final and "test_acc" in self.final:
            return self.final["test_acc"]
        return self.epochs[-1].get("test_acc") if self.epochs else None

    def epoch_time(self):  # mean virtual training time per epoch
        return _mean([e["time_s"] for e in self.epochs if "time_s" in e])

    def epoch_wall(self):
        return _mean([e["wall_s"] for e in self.epochs if "wall_s" in e])

    def images_per_s(self):
        if self.final and "total_images_per_s" in self.final:
            return self.final["total_images_per_s"]
        return _mean([e["images_per_s"] for e in self.epochs if "images_per_s" in e])

    def time_to(self, key, target):
        """Virtual elapsed_s of the first epoch whose KEY reaches TARGET (None: never)."""
        for e in self.epochs:
            if e.get(key) is not None and e[key] >= target:
                return e.get("elapsed_s")
        return None

    def time_base(self):
        for e in self.epochs:
            return e.get("time_base", "wall")
        return "?"


def _read_float(p):
    try:
        return float(p.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.mean(xs) if xs else None


def runs_of(config_dir):
    """The finished seed runs of one configuration directory, by seed."""
    config_dir = pathlib.Path(config_dir)
    out = []
    for d in sorted(config_dir.glob("seed*")):
        if (d / "done").exists() and (d / "metrics.jsonl").exists():
            out.append(Run(d))
    return out


def stat(values, digits=3, none_label="missing"):
    """'mean [min, max]' over the seeds (the spread is min-max, not a standard deviation);
    n/a when no value; a single value alone. Values of None (e.g. a target never reached)
    are counted apart: '... (k of n never)' with none_label "never"."""
    have = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    missing = len(values) - len(have)
    if not have:
        return "n/a" if not values else f"{none_label} ({len(values)} of {len(values)})"
    f = f"{{:.{digits}f}}"
    s = f.format(statistics.mean(have))
    if len(have) > 1:
        s += f" [{f.format(min(have))}, {f.format(max(have))}]"
    if missing:
        s += f" ({missing} of {len(values)} {none_label})"
    return s


def sig_digits(values, least=2, sig=3):
    """Decimals that show the smallest value with `sig` significant digits (at least `least`):
    2 for times of seconds, 4 for 0.0123 s, so a fast modelled cluster's times are not 0.01."""
    have = [abs(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))
            and v != 0]
    if not have:
        return least
    return max(least, sig - 1 - math.floor(math.log10(min(have))))


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def common_row(runs):
    """Columns every study shows: seeds, final test accuracy, virtual epoch time, wall time per
    epoch, images/s (virtual), max RSS of one rank."""
    return [
        str(len(runs)),
        stat([r.final_acc() for r in runs], 4),
        stat([r.epoch_time() for r in runs], sig_digits([r.epoch_time() for r in runs])),
        stat([r.epoch_wall() for r in runs], 1),
        stat([r.images_per_s() for r in runs], 0),
        stat([r.maxrss_mib for r in runs], 0),
    ]


COMMON_HEADER = ["seeds", "final test acc", "epoch time, s (virtual)", "epoch wall time, s",
                 "images/s (virtual)", "max RSS of a rank, MiB"]
