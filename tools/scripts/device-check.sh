#!/usr/bin/env bash
# device-check.sh ARCHIVE [REPORT]: runs the device kit (tools/scripts/device-bundle.sh) on a
# machine with a GPU, a CUDA 13 driver and NVIDIA's libraries, and writes ONE report (markdown,
# default ./device-check-report.md) with each step's command, exit status, duration and key
# numbers. Steps (each bounded by `timeout`; a failure does not stop the others):
#   the CUDA tests with DPLAB_REQUIRE_CUDA=1 (no device = failure, not skip); the NCCL tests at
#   1 rank and, with two GPUs, at 2; `dplab train --device cuda` of mnist_cnn against the CPU
#   accuracy the kit recorded; resnet50 training on the kit's synthetic JPEGs (f32, amp=bf16);
#   `dplab bench train --device cuda --model resnet50 --batch 256 --compare-pytorch` (PyTorch's
#   step: share/dplab/bench/torch_train_step.py) with --amp off and --amp bf16.
# cuDNN, cuBLAS and NCCL are looked for on LD_LIBRARY_PATH, in ldconfig's cache, under
# /usr/local/cuda and in every python3's site-packages/nvidia/*/lib (where pip's nvidia-* wheels
# put them); the directories found go on LD_LIBRARY_PATH.
# Exit status: 0 when every step passed, 1 when one failed, 2 with no CUDA device (said at once
# as "device-check: no CUDA device: <reason>"), 3 on a usage or archive error.
# Environment: DPLAB_CHECK_DIR (work directory; default a new one under /tmp),
# DPLAB_CHECK_STEPS (bench timed steps, default 20), DPLAB_PYTHON (python3 with PyTorch),
# DPLAB_CHECK_ONLY / DPLAB_CHECK_SKIP (extended regexes on step names: run a part, e.g. to fit
# a 10-minute lease; the first checks always run), DPLAB_CHECK_STEP_LIMIT (cap on any step's
# timeout, default 600 s).
set -uo pipefail

usage() {
  echo "usage: device-check.sh ARCHIVE [REPORT]" >&2
  exit 3
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
archive="$1"
report="${2:-$PWD/device-check-report.md}"
case "$report" in /*) ;; *) report="$PWD/$report" ;; esac

# ---- the device, first: without one nothing below means anything ---------------------------
no_device() {
  echo "device-check: no CUDA device: $*" >&2
  {
    echo "# dplab device check: no CUDA device"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n): $*"
  } >"$report" 2>/dev/null
  exit 2
}
ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then
  smi="$(timeout 60 nvidia-smi -L 2>&1)"
  rc=$?
  [ $rc -eq 0 ] || no_device "nvidia-smi -L failed (exit $rc): $(echo "$smi" | head -3)"
  ngpu=$(echo "$smi" | grep -c '^GPU ')
  [ "$ngpu" -ge 1 ] || no_device "nvidia-smi -L lists no GPU ($(echo "$smi" | head -1))"
elif compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
  ngpu=$(compgen -G '/dev/nvidia[0-9]*' | grep -c '/dev/nvidia[0-9]*$')
else
  no_device "nvidia-smi not found and no /dev/nvidia0 device node (no NVIDIA driver here)"
fi
if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
  visible=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
  [ "$visible" -ge 1 ] || no_device "CUDA_VISIBLE_DEVICES is set but empty"
  [ "$visible" -lt "$ngpu" ] && ngpu=$visible
fi

[ -f "$archive" ] || {
  echo "device-check: $archive: no such archive (make one with tools/scripts/device-bundle.sh)" >&2
  exit 3
}
work="${DPLAB_CHECK_DIR:-$(mktemp -d /tmp/dplab-check.XXXXXX)}"
mkdir -p "$work/logs" "$work/runs"
tar -xJf "$archive" -C "$work" || {
  echo "device-check: could not unpack $archive into $work" >&2
  exit 3
}
kit="$work/dplab-kit"
[ -x "$kit/bin/dplab" ] && [ -f "$kit/tests.tsv" ] || {
  echo "device-check: $archive holds no dplab-kit/bin/dplab and tests.tsv: not a device kit" >&2
  exit 3
}

# ---- NVIDIA's libraries ------------------------------------------------------------------------
pythons=()
for p in ${DPLAB_PYTHON:-} python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
  command -v "$p" >/dev/null 2>&1 && pythons+=("$(command -v "$p")")
done
candidates=()
IFS=: read -r -a from_env <<<"${LD_LIBRARY_PATH:-}"
candidates+=("${from_env[@]}" /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu)
for p in $(printf '%s\n' "${pythons[@]}" | sort -u); do
  # nvidia is a namespace package: its __path__ lists every site-packages/nvidia directory.
  for d in $("$p" -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null); do
    while read -r libdir; do candidates+=("$libdir"); done < <(find "$d" -name 'lib*.so*' \
      -path '*/lib/*' -printf '%h\n' 2>/dev/null | sort -u)
  done
done
declare -A libdir_of=()
ldpath=""
for lib in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  for d in "${candidates[@]}"; do
    if [ -n "$d" ] && [ -e "$d/$lib" ]; then
      libdir_of[$lib]="$d"
      case ":$ldpath:" in *":$d:"*) ;; *) ldpath="${ldpath:+$ldpath:}$d" ;; esac
      break
    fi
  done
  if [ -z "${libdir_of[$lib]:-}" ]; then
    found="$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l {print $NF; exit}')"
    [ -n "$found" ] && libdir_of[$lib]="$(dirname "$found") (ldconfig)"
  fi
done
export LD_LIBRARY_PATH="${ldpath}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$kit/bin:$PATH"             # mpiexec starts hydra_pmi_proxy from PATH
export UCX_MODULE_DIR="$kit/lib/ucx"     # MPICH's UCX: the kit's modules, not the host's
export DPLAB_TORCH_BENCH="$kit/share/dplab/bench/torch_train_step.py"
export DPLAB_REQUIRE_CUDA=1              # every CUDA test fails, not skips, without a device
export DPLAB_CLI="$kit/bin/dplab"        # tests that run the CLI: the kit's, not the build tree's
export DPLAB_DATA="$kit/data"           # test_tools' DeviceTrain tests find fashion-mnist there
torch_py=""
for p in "${pythons[@]}"; do
  if "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    torch_py="$p"
    break
  fi
done

# ---- steps ----------------------------------------------------------------------------------
rows=()    # markdown table rows
details=() # failing steps' log tails
failed=0
# step NAME TIMEOUT_S KEYS_FN CMD...: runs CMD under timeout, logs to logs/NAME.log, and adds a
# row; KEYS_FN (or -) prints the key numbers from the log (its first argument).
step() {
  local name="$1" limit="$2" keys="$3"
  shift 3
  if [ "${always:-0}" -eq 0 ]; then
    if { [ -n "${DPLAB_CHECK_ONLY:-}" ] && ! [[ "$name" =~ $DPLAB_CHECK_ONLY ]]; } ||
      { [ -n "${DPLAB_CHECK_SKIP:-}" ] && [[ "$name" =~ $DPLAB_CHECK_SKIP ]]; }; then
      rows+=("| $name | - | not run | - | left out by DPLAB_CHECK_ONLY/SKIP |")
      return 0
    fi
  fi
  [ "$limit" -gt "${DPLAB_CHECK_STEP_LIMIT:-600}" ] && limit="${DPLAB_CHECK_STEP_LIMIT:-600}"
  local log="$work/logs/$name.log" t0 t1 rc secs numbers
  echo "device-check: $name ..." >&2
  t0=$(date +%s.%N)
  # stdin: not the caller's (mpiexec forwards it, and would eat the loop's tests.tsv)
  timeout --kill-after=30 "$limit" "$@" >"$log" 2>&1 </dev/null
  rc=$?
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  numbers=""
  [ "$keys" != "-" ] && numbers="$("$keys" "$log" 2>/dev/null | tr '\n' ' ')"
  if [ $rc -eq 0 ] && [[ "$numbers" == *"MISMATCH"* ]]; then rc=1; fi
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && numbers="timed out after ${limit} s; $numbers"
  local cmd="${*//$work/\$W}"
  cmd="${cmd//|/\\|}" # a | would end the table cell
  rows+=("| $name | \`$cmd\` | $rc | $secs | $numbers |")
  if [ $rc -ne 0 ]; then
    failed=1
    details+=("### $name (exit $rc)" "" '```' "$(tail -n 40 "$log")" '```' "")
  fi
  echo "device-check: $name: exit $rc, $secs s ${numbers:+($numbers)}" >&2
  return $rc
}
note() { rows+=("| $1 | - | not run | - | $2 |"); }

gtest_counts() {
  local p f s
  p=$(grep -o '^\[  PASSED  \] [0-9]*' "$1" | tail -1 | grep -o '[0-9]*$')
  f=$(grep -o '^\[  FAILED  \] [0-9]* test' "$1" | tail -1 | grep -o '[0-9]*' | head -1)
  s=$(grep -o '^\[  SKIPPED \] [0-9]* test' "$1" | tail -1 | grep -o '[0-9]*' | head -1)
  echo "passed ${p:-0}, failed ${f:-0}, skipped ${s:-0}"
}
final_field() { grep '"kind":"final"' "$1" | grep -o "\"$2\":[0-9.eE+-]*" | cut -d: -f2; }
json_field() { grep -o "\"$2\":[0-9.eE+-]*" "$1" | tail -1 | cut -d: -f2; }

mnist_keys() {
  local acc ref
  acc=$(final_field "$work/runs/mnist_cuda/metrics.jsonl" test_acc)
  ref=$(awk '/^test_acc/{print $2}' "$kit/data/cpu_reference.txt")
  echo "test_acc ${acc:-none}, CPU ${ref:-none}"
  # The same run on another backend differs in rounding only: within 2 points of accuracy.
  awk -v a="${acc:-nan}" -v r="${ref:-nan}" 'BEGIN{d=a-r; if(d<0)d=-d; if(!(d<=0.02)) print "MISMATCH (> 0.02)"}'
}
resnet_keys() {
  local d
  d="$work/runs/$(basename "$1" .log)"
  echo "images/s $(final_field "$d/metrics.jsonl" total_images_per_s), loss $(final_field "$d/metrics.jsonl" loss)"
}
bench_keys() {
  echo "dplab images/s $(json_field "$1" images_per_s), ms/step $(json_field "$1" ms_per_step_median), peak device MB $(json_field "$1" peak_device_mb)"
  grep -q pytorch_images_per_s "$1" &&
    echo "; PyTorch images/s $(json_field "$1" pytorch_images_per_s), peak device MB $(json_field "$1" pytorch_peak_device_mb), ratio $(json_field "$1" ratio)"
}

# ---- the report -------------------------------------------------------------------------------
write_report() {
{
  echo "# dplab device check"
  echo
  echo "- started $started, finished $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
  echo "- GPUs: $ngpu ($(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1))"
  echo "- archive: $archive; work directory (\$W): $work (logs in \$W/logs)"
  for lib in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    echo "- $lib: ${libdir_of[$lib]:-NOT FOUND}"
  done
  echo "- PyTorch: ${torch_py:-none with CUDA} $([ -n "$torch_py" ] && "$torch_py" -c 'import torch; print(torch.__version__, "cuDNN", torch.backends.cudnn.version())' 2>/dev/null)"
  echo "- cuDNN algorithms chosen: see \"cuDNN algorithms\" below (from the bench steps' cudnn_algorithms)"
  echo "- result: $([ $failed -eq 0 ] && echo 'every step passed' || echo 'SOME STEPS FAILED')"
  echo
  echo '```'
  cat "$kit/KIT.txt"
  echo '```'
  echo
  echo "| step | command | exit | seconds | key numbers |"
  echo "| --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  algorithm_tables
  if [ ${#details[@]} -gt 0 ]; then
    printf '%s\n' "## Failed steps (last 40 lines of each log)" "" "${details[@]}"
  fi
} >"$report"
}

# The cuDNN convolution algorithms dplab chose in each bench step: `dplab bench --json` prints
# them as cudnn_algorithms (direction, layer shape, algorithm, math, workspace, calls), one row
# per (direction, shape, algorithm). Formatted by any python3 the machine has; the raw JSON
# otherwise.
raw_json() { echo '```'; grep '"cudnn_algorithms"' "$1" | tail -1; echo '```'; }
algorithm_tables() {
  local log p py=""
  for p in ${torch_py:-} "${pythons[@]}"; do
    command -v "$p" >/dev/null 2>&1 && { py="$p"; break; }
  done
  echo "## cuDNN algorithms"
  echo
  for log in "$work"/logs/bench_*.log; do
    [ -f "$log" ] || continue
    echo "### $(basename "$log" .log)"
    echo
    if ! grep -q '"cudnn_algorithms"' "$log"; then
      echo "(no cudnn_algorithms in the log: the step failed before printing its JSON)"
    elif [ -n "$py" ]; then
      "$py" - "$log" <<'PY' || raw_json "$log"
import json, sys
line = [l for l in open(sys.argv[1]) if '"cudnn_algorithms"' in l][-1]
rows = json.loads(line)["cudnn_algorithms"]
print("| direction | algorithm | math | workspace MiB | calls | shape |")
print("| --- | --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r['direction']} | {r['algorithm']} | {r['math']} | "
          f"{r['workspace_bytes'] / 2**20:.1f} | {r['calls']} | {r['shape']} |")
PY
    else
      raw_json "$log"
    fi
    echo
  done
}

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# The kit carries everything but glibc, which must be at least the build machine's.
glibc_keys() {
  local need have
  need=$(sed -n 's/^glibc needed: GLIBC_//p' "$kit/KIT.txt")
  have=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
  echo "needs $need, has $have"
  [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" = "$need" ] || echo "MISMATCH: glibc too old"
}
always=1
step glibc 10 glibc_keys true
step environment 120 - bash -c "nvidia-smi; echo; '$kit/bin/dplab' --version; ldd '$kit/bin/dplab'"
step libraries_resolve 60 - bash -c "! ldd '$kit/bin/dplab' '$kit'/bin/test_* | grep 'not found'"
# A one-step probe: says at once (dplab's own reason) when the runtime sees no device.
if ! step cuda_probe 300 bench_keys "$kit/bin/dplab" bench train --device cuda \
  --model mnist_cnn --batch 8 --steps 1 --warmup 1 --json &&
  reason="$(grep -o 'no CUDA device: .*' "$work/logs/cuda_probe.log" | head -1)" &&
  [ -n "$reason" ]; then
  # nvidia-smi saw a GPU but the CUDA runtime cannot use it (driver too old, device busy or
  # hidden): the runtime's reason is the answer, and nothing below could run.
  write_report
  echo "device-check: $reason (nvidia-smi lists $ngpu GPU(s)); report: $report" >&2
  exit 2
fi
always=0

# The ctest entries of the kit: gtest binaries once each, MPI entries at their rank counts.
while IFS=$'\t' read -r name labels ranks limit binary args; do
  [[ ";$labels;" == *";cuda;"* ]] || continue
  # `sh -c '... exec @KIT_BIN@/BIN'` entries (device_kit_manifest.py): the system's sh, the kit's BIN.
  prog="$kit/bin/$binary"
  if [ "$binary" = sh ]; then
    prog="$(command -v sh)"
    args="${args//@KIT_BIN@/$kit/bin}"
  fi
  if [ "$ranks" -eq 0 ]; then
    eval "step '$name' '$limit' gtest_counts '$prog' $args"
  elif [ "$ranks" -le "$ngpu" ]; then
    eval "step '$name' '$limit' gtest_counts '$kit/bin/mpiexec' -n '$ranks' '$prog' $args"
  else
    note "$name" "needs $ranks GPUs, this machine has $ngpu"
  fi
done <"$kit/tests.tsv"

mnist_cmd="$(cat "$kit/data/mnist_command.txt")"
mnist_cmd="${mnist_cmd//\{KIT\}/$kit}"
mnist_cmd="${mnist_cmd//\{DEVICE\}/cuda}"
mnist_cmd="${mnist_cmd//\{OUT\}/$work/runs/mnist_cuda}"
# shellcheck disable=SC2086  # words without spaces, written by device-bundle.sh
step mnist_cuda 900 mnist_keys "$kit/bin/dplab" $mnist_cmd
for amp in off bf16; do
  step "resnet50_train_$amp" 900 resnet_keys "$kit/bin/dplab" train --model resnet50 \
    --data "folder:$kit/data/synthetic-jpeg" --batch 64 --max-steps 30 --epochs 8 --device cuda \
    --set amp=$amp --set data.workers=8 --out "$work/runs/resnet50_train_$amp"
done
steps="${DPLAB_CHECK_STEPS:-20}"
# dplab and PyTorch on the same GPU in one invocation (--compare-pytorch: the kit's
# torch_train_step.py with the same model, batch, device and precision).
compare=()
if [ -n "$torch_py" ]; then
  export DPLAB_PYTHON="$torch_py"
  compare=(--compare-pytorch)
else
  note pytorch "no python3 with a CUDA-enabled PyTorch found (tried: ${pythons[*]}): dplab alone"
fi
for amp in off bf16; do
  step "bench_resnet50_$([ $amp = off ] && echo f32 || echo bf16)" 900 bench_keys \
    "$kit/bin/dplab" bench train --device cuda --model resnet50 --batch 256 --steps "$steps" \
    --warmup 5 --amp $amp --json "${compare[@]}"
done

write_report
echo "device-check: report written to $report" >&2
exit $failed
