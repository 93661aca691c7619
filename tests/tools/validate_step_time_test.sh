#!/usr/bin/env bash
# tools/scripts/validate_step_time.sh runs end to end on a tiny case set (mnist_cnn at batch 8,
# 24 steps, one repetition, two cases) and prints its table: one row per case with a measured
# and a predicted step time > 0, and the summary line. No timing is asserted (the published
# figures come from the full run on a quiet machine: docs/virtual_cluster.md).
# Usage: validate_step_time_test.sh SOURCE_DIR DPLAB_BIN
set -euo pipefail
source_dir=$1
dplab=$2
if [ "$(nproc)" -lt 2 ]; then
  echo "skipped: the script pins one rank to each of 2 cores; this machine has $(nproc)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
DPLAB="$dplab" MODELS="mnist_cnn:8" STEPS=24 REPEAT=1 CASES='^(allreduce no overlap|sgp)$' \
  bash "$source_dir/tools/scripts/validate_step_time.sh" "$out/v" > "$out/table.md" 2> "$out/err"
cat "$out/table.md"
python3 - "$out/table.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rows = [l for l in text.splitlines() if l.startswith("| mnist_cnn |")]
cases = [r.split("|")[2].strip() for r in rows[:2]]
assert cases == ["allreduce no overlap", "sgp"], f"expected the two cases' rows, got {cases}"
for r in rows[:2]:
    measured, predicted = (float(r.split("|")[i]) for i in (3, 4))
    assert measured > 0 and predicted > 0, r
assert re.search(r"\|error\| of the medians: median [0-9.]+%, worst [0-9.]+% over 2 cases", text), \
    "no summary line"
print("ok")
PY
