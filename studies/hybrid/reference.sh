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
/usr/bin/python3 "$HERE/../lib/runs_archive.py" "$OUT"  # runs.tar.xz expanded if absent
# The cross-check's runs, cheapest first: MNIST digits (the thesis' reading with its fixed data
# order, dplab's per-epoch reshuffle, the stage-2 mean variant, the listing as printed), then
# Fashion-MNIST.
REF_RUNS=${REF_RUNS:-"mnist hybrid 2 0
fashion-mnist hybrid 2 0
fashion-mnist each_iter 2 0
mnist hybrid 2 1
mnist hybrid 4 0
mnist hybrid 4 1
mnist hybrid 8 0
mnist hybrid 8 1
mnist hybrid 1 0
mnist hybrid 1 1
mnist each_iter 2 0
mnist hybrid 2 0 --set-epoch
mnist hybrid 2 1 --set-epoch
mnist hybrid 4 0 --set-epoch
mnist hybrid 4 1 --set-epoch
mnist hybrid 8 0 --set-epoch
mnist hybrid 8 1 --set-epoch
mnist hybrid 2 0 --accumulate mean
mnist hybrid 2 1 --accumulate mean
mnist hybrid 4 0 --accumulate mean
mnist hybrid 4 1 --accumulate mean
mnist hybrid 8 0 --accumulate mean
mnist hybrid 8 1 --accumulate mean
mnist hybrid 2 0 --stage2-test printed
mnist hybrid 2 1 --stage2-test printed
mnist hybrid 4 0 --stage2-test printed
mnist hybrid 8 0 --stage2-test printed
mnist hybrid 2 2
mnist hybrid 2 3
mnist hybrid 2 4
mnist hybrid 4 2
mnist hybrid 4 3
mnist hybrid 4 4
mnist hybrid 8 2
mnist hybrid 8 3
mnist hybrid 8 4
fashion-mnist hybrid 2 1
fashion-mnist hybrid 4 0
fashion-mnist hybrid 8 0
fashion-mnist hybrid 2 0 --accumulate mean
fashion-mnist hybrid 2 0 --stage2-test printed"}

while read -r data mode K seed extra; do
  [ -n "$data" ] || continue
  name=$mode
  [ "$mode" = hybrid ] && name=hybrid_8_12
  for x in $extra; do name="${name}_${x#--}"; done      # e.g. hybrid_8_12_accumulate_mean
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
  # A run that fails or hangs (1 h) is reported and left without `done`; the others go on.
  if timeout 3600 "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"; then
    echo "$(($(date +%s) - start))" >"$dir/wall_s.txt"
    touch "$dir/done"
  else
    echo "  FAILED (status $?): see $dir/stderr.txt"
  fi
done <<<"$REF_RUNS"
