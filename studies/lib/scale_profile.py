#!/usr/bin/python3
"""Writes a copy of a dplab compute profile (`dplab bench train --profile-out`) with its forward,
backward, optimizer and (when recorded) non-finite check times multiplied by a factor: a device FACTOR^-1 times as fast as the one
recorded on, the same assumption as `cluster.compute_scale` makes for measured compute. The
ready fractions (when each gradient is ready, as a fraction of backward) are kept.

Usage: scale_profile.py IN.json FACTOR OUT.json
"""
import json
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[3]
    try:
        factor = float(sys.argv[2])
    except ValueError:
        factor = -1.0
    if not factor > 0:
        sys.exit(f"scale_profile.py: FACTOR: expected a number > 0, got '{sys.argv[2]}'")
    with open(src) as f:
        prof = json.load(f)
    for key in ("forward_s", "backward_s", "optimizer_s"):
        if key not in prof:
            sys.exit(f"{src}: no '{key}' (not a dplab compute profile?)")
        prof[key] *= factor
    if "check_s" in prof:  # the driver's per-step check: recorded by profiles since issue #37
        prof["check_s"] *= factor
    prof["scaled_by"] = factor  # not read by dplab: says what this file is
    with open(dst, "w") as f:
        json.dump(prof, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
