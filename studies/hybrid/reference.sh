#!/usr/bin/env bash
# The PyTorch cross-check of the hybrid-SGD study (results.md, "Cross-check against the thesis
# code in PyTorch"): thesis_reference.py (the thesis' appendix code on CPU/gloo) on the data dplab
# reads. One run per line of RUNS below ("data mode K seed [extra options]"); a run whose
# directory holds `done` is skipped; while runs/PAUSE exists no new run starts.
#   studies/hybrid/reference.sh
#   REF_RUNS="mnist hybrid 2 0" studies/hybrid/reference.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/reference}
NICE=${NICE:-19}
PAUSE=$HERE/runs/PAUSE
REF_RUNS=${REF_RUNS:-"mnist hybrid 2 0
fashion-mnist hybrid 2 0
fashion-mnist each_iter 2 0"}

while read -r data mode K seed extra; do
  [ -n "$data" ] || continue
  name=$mode
  [ "$mode" = hybrid ] && name=hybrid_8_12
  for x in $extra; do name="${name}_${x#--}"; done
  dir=$OUT/$data/$name/K$K/seed$seed
  [ -f "$dir/done" ] && continue
  while [ -e "$PAUSE" ]; do sleep 5; done
  rm -rf "$dir"
  mkdir -p "$dir"
  cmd=(nice -n "$NICE" /usr/bin/python3 "$HERE/thesis_reference.py" --data "$data" --mode "$mode"
       --K "$K" --seed "$seed" --W 8 --R 12 --epochs 20 $extra --out "$dir")
  echo "${cmd[*]}" >"$dir/command.txt"
  echo "[$(date -u +%FT%TZ)] ${cmd[*]}"
  start=$(date +%s)
  "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
  echo "$(($(date +%s) - start))" >"$dir/wall_s.txt"
  touch "$dir/done"
done <<<"$REF_RUNS"
