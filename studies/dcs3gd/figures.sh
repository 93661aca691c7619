#!/usr/bin/env bash
# Draws the DC-S3GD study's figures with `dplab plot` from the runs on disk (no training):
#   dcs3gd_accuracy.png        test accuracy per epoch, mean of the seeds with a min-max band
#   dcs3gd_accuracy_time.png   the same against virtual elapsed time (metrics elapsed_s)
#   dcs3gd_step_time.png       per platform, against t_ARed: the measured virtual step times of
#                              AllReduce-SGD and DC-S3GD beside Eq. 13 and Eq. 14 (from
#                              results_step_points.json, written by summarize.py)
#   RUNS=... OUT=... studies/dcs3gd/figures.sh    (run.sh calls it)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
source "$HERE/../lib/plot.sh"
RUNS=${RUNS:-$(study_runs_dir "$HERE")}
OUT=${OUT:-$(study_out_dir "$HERE")}
study_expand_runs "$RUNS"   # runs.tar.xz expanded if absent
TITLE="resnet18_cifar / Fashion-MNIST, 8 ranks x 64, cpu-10gbe (4 x 2)"
declare -A NAME=([allreduce]="AllReduce-SGD" [dcs3gd_l0.2]="DC-S3GD λ0=0.2" [dcs3gd_l0]="DC-S3GD λ0=0")
for m in allreduce dcs3gd_l0.2 dcs3gd_l0; do collect "${NAME[$m]}" "$RUNS/accuracy/$m"; done
plot_mean --title "$TITLE" --x epoch --y test_acc --y-label "test accuracy" \
  --out "$OUT/dcs3gd_accuracy.png"
plot_mean --title "$TITLE" --x elapsed_s --y test_acc --y-label "test accuracy" \
  --x-label "virtual elapsed time, s" --out "$OUT/dcs3gd_accuracy_time.png"

points=$(mktemp -d)
/usr/bin/python3 - "$OUT/results_step_points.json" "$points" <<'PY'
import json, pathlib, sys
pts = [p for p in json.loads(pathlib.Path(sys.argv[1]).read_text()) if p[1] is not None]
pts.sort(key=lambda p: p[1])
out = pathlib.Path(sys.argv[2])
for i, name in ((2, "eq13"), (3, "eq14"), (4, "allreduce"), (5, "dcs3gd")):
    d = out / name
    d.mkdir()
    recs = [{"kind": "epoch", "epoch": k + 1, "t_ared_s": p[1], "step_s": p[i]}
            for k, p in enumerate(pts) if p[i] is not None]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
PY
"$DPLAB" plot "$points/eq13" "$points/allreduce" "$points/eq14" "$points/dcs3gd" \
  --label "Eq. 13: t_C + t_ARed" "AllReduce-SGD (virtual)" "Eq. 14: max(t_C, t_ARed)" \
  "DC-S3GD λ0=0.2 (virtual)" --x t_ared_s --y step_s --x-label "t_ARed, s (virtual allreduce)" \
  --y-label "step time, s" --title "Step time against Eq. 13 and 14 (one point per platform)" \
  --width 900 --height 500 --out "$OUT/dcs3gd_step_time.png" 2> >(grep -v 'has no run.json' >&2)
rm -rf "$points"
