#!/usr/bin/env bash
# device-check.sh [--deadline SECONDS] [--dry-run] ARCHIVE [REPORT]: runs the device kit
# (tools/scripts/device-bundle.sh) on a machine with a GPU, a CUDA 13 driver and NVIDIA's
# libraries, and writes ONE report (markdown, default ./device-check-report.md) with each step's
# command, exit status, duration and key numbers. A GPU is lent rarely and for one call of at
# most 10 minutes, so the check spends it cheapest and most informative first, in this order
# (each step bounded by `timeout`; a failure does not stop the others):
#   1. device facts: glibc (the kit's need against the machine's), cpu (model, cores, avx2 /
#      avx512f / avx512_bf16 / amx, against the CPU ISA level KIT.txt says the kit was built
#      for), environment (nvidia-smi, driver, `dplab --version`, ldd), libraries_resolve;
#   2. the PyTorch baseline: share/dplab/bench/torch_train_step.py alone, resnet50 batch 256,
#      pytorch_f32 (TF32 off, cudnn.benchmark) and pytorch_bf16 (autocast, channels_last,
#      cudnn.benchmark), a few steps each;
#   3. the CUDA tests (gtest binaries, DPLAB_REQUIRE_CUDA=1: no device = failure, not skip):
#      test_cuda's op cases first (test_cuda_opcases: OpCases/*), then test_cuda's other tests,
#      the other binaries' device tests, and the ones that train models (test_tools_cuda) last;
#   4. cuda_probe: one training step (`dplab bench train --device cuda`, mnist_cnn); when it
#      fails with dplab's "no CUDA device: <reason>", the check stops there (exit 2);
#   5. the NCCL tests under the kit's mpiexec at 1 rank and, with two GPUs, at 2;
#   6. the benchmarks: `dplab bench train --device cuda --model resnet50 --batch 256
#      --compare-pytorch` with --amp off (bench_resnet50_f32) and bf16 (bench_resnet50_bf16);
#      each row's key numbers say which precision each side ran;
#   7. training to accuracy: mnist_cuda and mnist_cuda_bf16 (`dplab train --device cuda`, amp
#      off and bf16, each against the CPU accuracy the kit recorded), resnet50_train_off and
#      resnet50_train_bf16 (the kit's JPEGs).
# Deadline: --deadline SECONDS (default 540, DPLAB_CHECK_DEADLINE), measured from the script's
# start. Each step's timeout is min(its own limit, DPLAB_CHECK_STEP_LIMIT, the time left less a
# reserve for the report: 15 s, or a tenth of a deadline under 150 s); a step that cannot start
# with 10 s (or a fifteenth of the deadline) to spare is reported "not run: deadline"; one its
# cap ends is "stopped: deadline". A watchdog signals the script shortly before the deadline in
# case anything outlives its timeout.
# Report: written as the check runs: the header (machine, GPUs, libraries, PyTorch, the kit's
# KIT.txt, the planned steps in order) first, then one table row per step the moment it ends
# (appended and closed each time). The closing part ("## Result": the outcome, which steps never
# ran; "## cuDNN algorithms" of the bench steps so far; the failed steps' log tails) is written
# at the end, and also on the deadline or on SIGTERM, SIGINT or SIGHUP: the running step's
# process group is killed, its row says "stopped: deadline" or "stopped: signal SIGTERM", the
# remaining steps "not run: ...". A report without "## Result" was cut off with its machine.
# Every step runs with CUDA_MODULE_LOADING=EAGER: with lazy loading a kernel's first launch
# loads its module, which can deadlock when a host callback holds a stream at that moment.
# cuDNN, cuBLAS and NCCL are looked for on LD_LIBRARY_PATH, in ldconfig's cache, under
# /usr/local/cuda and in every python3's site-packages/nvidia/*/lib (where pip's nvidia-* wheels
# put them); the directories found go on LD_LIBRARY_PATH.
# Exit status: 0 when every step ran and passed, 1 when one failed, 2 with no CUDA device (said
# at once as "device-check: no CUDA device: <reason>"), 3 on a usage or archive error, 4 when
# none failed but the deadline or a signal left some unrun or stopped.
# --dry-run (or DPLAB_CHECK_FAKE_DEVICE=1): the same run for a stand-in device and kit (the test
# tests/tools/device_check_dry_run.sh: a fake nvidia-smi on PATH, kit binaries that sleep); the
# report's title says so and NVIDIA's libraries are not looked for. Nothing else differs.
# Environment: DPLAB_CHECK_DIR (work directory; default a new one under /tmp),
# DPLAB_CHECK_STEPS (bench timed steps, default 20), DPLAB_CHECK_TORCH_STEPS (the baseline's,
# default 10), DPLAB_PYTHON (python3 with PyTorch), DPLAB_CHECK_ONLY / DPLAB_CHECK_SKIP (extended
# regexes on step names: run a part; the device facts and cuda_probe always run),
# DPLAB_CHECK_STEP_LIMIT (cap on any step's timeout, default 600 s), DPLAB_CHECK_RESERVE and
# DPLAB_CHECK_MIN_STEP (the reserve and the least time to start a step, seconds),
# DPLAB_CHECK_MODULE_LOADING (CUDA_MODULE_LOADING for the steps, default EAGER; empty: as set).
# shellcheck disable=SC2317  # functions reached through plan entries (KEYS) and traps
set -uo pipefail

usage() {
  echo "usage: device-check.sh [--deadline SECONDS] [--dry-run] ARCHIVE [REPORT]" >&2
  exit 3
}
deadline_s="${DPLAB_CHECK_DEADLINE:-540}"
dry_run="${DPLAB_CHECK_FAKE_DEVICE:-0}"
[ "$dry_run" = 1 ] || dry_run=0
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --deadline) [ $# -ge 2 ] || usage; deadline_s="$2"; shift 2 ;;
    --deadline=*) deadline_s="${1#--deadline=}"; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 3 ;;
    --) shift; positional+=("$@"); break ;;
    -*) usage ;;
    *) positional+=("$1"); shift ;;
  esac
done
[ ${#positional[@]} -ge 1 ] && [ ${#positional[@]} -le 2 ] || usage
[[ "$deadline_s" =~ ^[0-9]+$ ]] && [ "$deadline_s" -ge 1 ] || {
  echo "device-check: --deadline: expected whole seconds >= 1, got '$deadline_s'" >&2
  exit 3
}
archive="${positional[0]}"
report="${positional[1]:-$PWD/device-check-report.md}"
case "$report" in /*) ;; *) report="$PWD/$report" ;; esac

# ---- the clock: milliseconds since the epoch; the deadline and its reserve ------------------
now_ms() {
  local t="${EPOCHREALTIME:-}"
  if [ -n "$t" ]; then t="${t//[!0-9]/}"; _now=$((10#$t / 1000)); else _now=$(date +%s%3N); fi
}
secs() { printf '%d.%d' $(($1 / 1000)) $((($1 % 1000) / 100)); } # ms -> "12.3"
now_ms
t_start=$_now
deadline_at=$((t_start + deadline_s * 1000))
reserve_ms=$((deadline_s * 100))                     # a tenth of the deadline ...
[ $reserve_ms -gt 15000 ] && reserve_ms=15000        # ... at most 15 s
min_step_ms=$((deadline_s * 1000 / 15))              # a fifteenth ...
[ $min_step_ms -gt 10000 ] && min_step_ms=10000      # ... at most 10 s
[ -n "${DPLAB_CHECK_RESERVE:-}" ] && reserve_ms=$((DPLAB_CHECK_RESERVE * 1000))
[ -n "${DPLAB_CHECK_MIN_STEP:-}" ] && min_step_ms=$((DPLAB_CHECK_MIN_STEP * 1000))
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
main_pid=$$

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

# ---- from here on a deadline or a signal closes the report ----------------------------------
# State the closing part reads (set before anything can be interrupted).
work="${DPLAB_CHECK_DIR:-$(mktemp -d /tmp/dplab-check.XXXXXX)}"
kit="$work/dplab-kit"
header_done=0 # the report's header is written
closing=0     # the closing part is being written: signals are ignored
cur_pid=""    # the running step's timeout process (its process group's id)
cur_index=-1  # the plan entry running or last run
failed=0
cut=0 # a step was not run or stopped for the deadline or a signal
P_name=() P_kind=() P_limit=() P_keys=() P_cmd=()
done_rows=() # per plan entry: 1 once its row is in the report
details=()   # failing steps' log tails
failed_names=()
not_run=() # "name (why)" for the steps that never ran
declare -A libdir_of=()
torch_py=""
torch_version=""
pythons=()
watchdog=""

on_signal() { # on_signal WHY: the deadline's watchdog (USR1) or a signal from outside
  trap '' TERM INT HUP USR1
  [ "$closing" -eq 1 ] && return
  [ "$header_done" -eq 1 ] || write_header
  stop_step "$1"
  mark_rest "$1"
  close_report "stopped: $1"
  exit_now
}
trap 'on_signal deadline' USR1
trap 'on_signal "signal SIGTERM"' TERM
trap 'on_signal "signal SIGINT"' INT
trap 'on_signal "signal SIGHUP"' HUP

# The watchdog: signals the script (USR1) at the deadline less a third of the reserve, for the
# case where something outlives its own timeout; killed when the script ends.
(
  trap 'kill "$sp" 2>/dev/null; exit 0' TERM
  now_ms
  left=$((deadline_at - reserve_ms / 3 - _now))
  [ $left -lt 0 ] && left=0
  sleep "$(secs $left)" &
  sp=$!
  wait "$sp" && kill -USR1 "$main_pid" 2>/dev/null
) </dev/null >/dev/null 2>&1 &
watchdog=$!

mkdir -p "$work/logs" "$work/runs"
if ! timeout 120 tar -xJf "$archive" -C "$work"; then
  kill "$watchdog" 2>/dev/null
  echo "device-check: could not unpack $archive into $work" >&2
  exit 3
fi
[ -x "$kit/bin/dplab" ] && [ -f "$kit/tests.tsv" ] || {
  kill "$watchdog" 2>/dev/null
  echo "device-check: $archive holds no dplab-kit/bin/dplab and tests.tsv: not a device kit" >&2
  exit 3
}

# ---- NVIDIA's libraries ------------------------------------------------------------------------
for p in ${DPLAB_PYTHON:-} python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
  p="$(command -v "$p" 2>/dev/null)" || continue
  [[ " ${pythons[*]-} " == *" $p "* ]] || pythons+=("$p")
done
ldpath=""
if [ "$dry_run" -eq 0 ]; then
  # A Python environment's NVIDIA wheels first: they are the libraries its PyTorch loads, so
  # dplab and the PyTorch baseline run on the same cuDNN, cuBLAS and NCCL, and PyTorch (which
  # inherits LD_LIBRARY_PATH) is not handed a system cuDNN it was not built with. On the first
  # H200 run (2026-11-28) the system's /usr/lib cuDNN came first and no PyTorch was found.
  candidates=()
  for p in ${pythons[@]+"${pythons[@]}"}; do
    # nvidia is a namespace package: its __path__ lists every site-packages/nvidia directory.
    for d in $(timeout 60 "$p" -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null); do
      while read -r libdir; do candidates+=("$libdir"); done < <(find "$d" -name 'lib*.so*' \
        -path '*/lib/*' -printf '%h\n' 2>/dev/null | sort -u)
    done
  done
  IFS=: read -r -a from_env <<<"${LD_LIBRARY_PATH:-}"
  candidates+=(${from_env[@]+"${from_env[@]}"} /usr/local/cuda/lib64 /usr/local/cuda/lib
    /usr/lib/x86_64-linux-gnu)
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
fi
export LD_LIBRARY_PATH="${ldpath}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$kit/bin:$PATH"             # mpiexec starts hydra_pmi_proxy from PATH
export UCX_MODULE_DIR="$kit/lib/ucx"     # MPICH's UCX: the kit's modules, not the host's
export DPLAB_TORCH_BENCH="$kit/share/dplab/bench/torch_train_step.py"
export DPLAB_REQUIRE_CUDA=1              # every CUDA test fails, not skips, without a device
export DPLAB_CLI="$kit/bin/dplab"        # tests that run the CLI: the kit's, not the build tree's
export DPLAB_DATA="$kit/data"            # test_tools' DeviceTrain tests find fashion-mnist there
# Lazy loading can deadlock (see the header). DPLAB_CHECK_MODULE_LOADING= (empty) leaves the
# environment's setting, e.g. to compare PyTorch's start-up, which loads every module eagerly.
module_loading="${DPLAB_CHECK_MODULE_LOADING-EAGER}"
[ -z "$module_loading" ] || export CUDA_MODULE_LOADING="$module_loading"
torch_why=() # per python tried: why it is not the baseline (the last line it printed)
for p in ${pythons[@]+"${pythons[@]}"}; do
  if v="$(timeout 60 "$p" -c 'import sys, torch
print(torch.__version__, "cuDNN", torch.backends.cudnn.version())
sys.exit(0 if torch.cuda.is_available() else "torch.cuda.is_available() is False")' 2>"$work/logs/torch_probe.err")"; then
    torch_py="$p"
    torch_version="$v"
    break
  fi
  torch_why+=("$p: $(grep . "$work/logs/torch_probe.err" | tail -1 | cut -c1-200)")
done

# ---- key numbers from the logs --------------------------------------------------------------
gtest_counts() {
  local p f s
  p=$(grep -o '^\[  PASSED  \] [0-9]*' "$1" | tail -1 | grep -o '[0-9]*$')
  f=$(grep -o '^\[  FAILED  \] [0-9]* test' "$1" | tail -1 | grep -o '[0-9]*' | head -1)
  s=$(grep -o '^\[  SKIPPED \] [0-9]* test' "$1" | tail -1 | grep -o '[0-9]*' | head -1)
  echo "passed ${p:-0}, failed ${f:-0}, skipped ${s:-0}"
}
final_field() { grep '"kind":"final"' "$1" | grep -o "\"$2\":[0-9.eE+-]*" | cut -d: -f2; }
json_field() { grep -o "\"$2\": *[0-9.eE+-]*" "$1" | tail -1 | sed 's/.*: *//'; }
json_str() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | tail -1 | sed 's/.*: *"//; s/"$//'; }

mnist_keys() { # $1: the step's log, named as its run directory
  local acc ref
  acc=$(final_field "$work/runs/$(basename "$1" .log)/metrics.jsonl" test_acc)
  ref=$(awk '/^test_acc/{print $2}' "$kit/data/cpu_reference.txt")
  echo "test_acc ${acc:-none}, CPU ${ref:-none}"
  # The same run on another backend differs in rounding only, and bf16 trains to f32's accuracy
  # within the seeds' spread (Bf16Accuracy.*): within 2 points of accuracy.
  awk -v a="${acc:-nan}" -v r="${ref:-nan}" 'BEGIN{d=a-r; if(d<0)d=-d; if(!(d<=0.02)) print "MISMATCH (> 0.02)"}'
}
resnet_keys() {
  local d
  d="$work/runs/$(basename "$1" .log)"
  echo "images/s $(final_field "$d/metrics.jsonl" total_images_per_s), loss $(final_field "$d/metrics.jsonl" loss)"
}
# dplab's side: f32 never uses TF32 (CUBLAS_COMPUTE_32F, cuDNN FMA math: core/cuda/gemm.cpp,
# conv.cpp); PyTorch's side: what torch_train_step.py says it ran (pytorch_precision, when dplab
# copies it) or what it runs for that dtype.
torch_precision_of() {
  case "$1" in
    bf16) echo "bf16 autocast, channels_last, cudnn.benchmark" ;;
    f32) echo "f32 (TF32 off), cudnn.benchmark" ;;
    *) echo "${1:-?}" ;;
  esac
}
bench_keys() {
  local amp pprec
  amp=$(json_str "$1" amp)
  echo "dplab $([ "$amp" = bf16 ] && echo 'amp bf16' || echo 'f32 (no TF32)'):" \
    "images/s $(json_field "$1" images_per_s), ms/step $(json_field "$1" ms_per_step_median)," \
    "peak device MB $(json_field "$1" peak_device_mb)"
  if grep -q pytorch_images_per_s "$1"; then
    pprec=$(json_str "$1" pytorch_precision)
    [ -n "$pprec" ] || pprec=$(torch_precision_of "$(json_str "$1" pytorch_dtype)")
    echo "; PyTorch $pprec: images/s $(json_field "$1" pytorch_images_per_s), peak device MB" \
      "$(json_field "$1" pytorch_peak_device_mb), ratio $(json_field "$1" ratio)"
  fi
}
torch_keys() { # the baseline's JSON line
  echo "PyTorch $(json_str "$1" precision) (tf32 $(grep -o '"tf32": *[a-z]*' "$1" | tail -1 |
    sed 's/.*: *//'), channels_last $(grep -o '"channels_last": *[a-z]*' "$1" | tail -1 |
    sed 's/.*: *//')): images/s $(json_field "$1" images_per_s), ms/step" \
    "$(json_field "$1" ms_per_step_median), peak device MB $(json_field "$1" peak_device_mb);" \
    "torch $(json_str "$1" torch), cuDNN $(json_field "$1" cudnn), warm-up $(json_field "$1" warmup)"
}
env_keys() {
  local gpu
  gpu=$(grep -A1 '^name, driver_version' "$1" | sed -n 2p)
  echo "${gpu:+GPU, driver, memory, compute capability: $gpu; }$(grep -m1 '^dplab ' "$1")"
}
# The kit carries everything but glibc, which must be at least the build machine's.
glibc_keys() {
  local need have
  need=$(sed -n 's/^glibc needed: GLIBC_//p' "$kit/KIT.txt")
  have=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
  echo "needs $need, has $have"
  [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" = "$need" ] || echo "MISMATCH: glibc too old"
}
# The CPU: its vector extensions against the ISA level the kit's CPU kernels were built for
# (KIT.txt "CPU ISA: x86-64-vN (runtime-dispatched variants: ...)" or "native (this build
# machine: ...; its CPU has FLAGS)").
cpu_keys() {
  local flags model isa level need f missing="" best="" v
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
  has() { [[ "$flags" == *" $1 "* ]]; }
  yn() { has "$1" && echo yes || echo no; }
  echo "${model:-unknown CPU}, $(nproc) cores: avx2 $(yn avx2), avx512f $(yn avx512f)," \
    "avx512_bf16 $(yn avx512_bf16), amx $(has amx_tile && echo "yes ($(for f in amx_tile amx_bf16 amx_int8 amx_fp16; do has "$f" && printf '%s ' "$f"; done | sed 's/ $//'))" || echo no)"
  isa=$(sed -n 's/^CPU ISA: //p' "$kit/KIT.txt" | head -1)
  [ -n "$isa" ] || { echo "; the kit does not record its CPU ISA"; return 0; }
  echo "; kit built for $isa"
  level_needs() {
    case "$1" in
      x86-64-v2) echo "ssse3 sse4_1 sse4_2 popcnt" ;;
      x86-64-v3) echo "$(level_needs x86-64-v2) avx avx2 fma bmi1 bmi2 f16c movbe abm" ;;
      x86-64-v4) echo "$(level_needs x86-64-v3) avx512f avx512bw avx512cd avx512dq avx512vl" ;;
    esac
  }
  level=${isa%% *}
  case "$level" in
    native) need=$(echo "$isa" | sed -n 's/.*its CPU has\([^)]*\)).*/\1/p') ;;
    *) need=$(level_needs "$level") ;;
  esac
  for f in $need; do has "$f" || missing="$missing $f"; done
  for v in $(echo "$isa" | sed -n 's/.*variants: \([^)]*\)).*/\1/p'); do
    missing_v=""
    for f in $(level_needs "$v"); do has "$f" || missing_v=1; done
    [ -z "$missing_v" ] && best=$v
  done
  [ -n "$best" ] && echo "; its best runtime variant here: $best"
  [ -z "$missing" ] || echo "; MISMATCH: this CPU lacks$missing (illegal instructions likely)"
}

# ---- the report -------------------------------------------------------------------------------
# Appends to the report (each call opens, writes and closes it: what is there stays there).
out() { printf '%s\n' "$@" >>"$report"; }
write_header() {
  local lib i gpus
  gpus="$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  {
    if [ "$dry_run" -eq 1 ]; then
      echo "# dplab device check: DRY RUN (a stand-in device and kit, nothing measured on a GPU)"
    else
      echo "# dplab device check"
    fi
    echo
    echo "- started $started on $(uname -n); deadline $deadline_s s from the start (each step's timeout is capped at the time left less $(secs $reserve_ms) s for this report; a step that cannot start with $(secs $min_step_ms) s to spare is \"not run: deadline\")"
    echo "- written as the check runs: one row per step the moment it ends; the \"Result\" section comes last. Without it, the check was cut off before it could close the report"
    echo "- GPUs: $ngpu ($gpus)"
    echo "- archive: $archive; work directory (\$W): $work (logs in \$W/logs)"
    for lib in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
      if [ "$dry_run" -eq 1 ]; then echo "- $lib: not looked for (dry run)"
      else echo "- $lib: ${libdir_of[$lib]:-NOT FOUND}"; fi
    done
    echo "- PyTorch: ${torch_py:-none with CUDA} $torch_version"
    echo "- CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-unset (the driver default: lazy)} for every step"
    echo "- f32 is f32 on both sides (dplab: no TF32 anywhere; PyTorch: TF32 off, cudnn.benchmark); bf16 is dplab's amp = bf16 against PyTorch's autocast(bfloat16) with channels_last and cudnn.benchmark"
    echo "- planned, in order:$(for ((i = 0; i < ${#P_name[@]}; i++)); do printf ' %s' "${P_name[$i]}"; done)"
    echo
    echo '```'
    cat "$kit/KIT.txt" 2>/dev/null
    echo '```'
    echo
    echo "| step | command | exit | seconds | key numbers |"
    echo "| --- | --- | --- | --- | --- |"
  } >"$report"
  header_done=1
}
row() { # row INDEX EXIT SECONDS NUMBERS [CMD]
  local cmd="${5:--}"
  out "| ${P_name[$1]} | $cmd | $2 | $3 | $4 |"
  done_rows[$1]=1
}

# The cuDNN convolution algorithms dplab chose in each bench step: `dplab bench --json` prints
# them as cudnn_algorithms (direction, layer shape, algorithm, math, workspace, calls), one row
# per (direction, shape, algorithm). Formatted by any python3 the machine has; the raw JSON
# otherwise.
raw_json() { echo '```'; grep '"cudnn_algorithms"' "$1" | tail -1; echo '```'; }
algorithm_tables() {
  local log p n py=""
  for p in ${torch_py:-} ${pythons[@]+"${pythons[@]}"}; do
    command -v "$p" >/dev/null 2>&1 && { py="$p"; break; }
  done
  echo "## cuDNN algorithms"
  echo
  compgen -G "$work/logs/bench_*.log" >/dev/null || { echo "(no bench step ran)"; echo; }
  for ((n = 0; n < ${#P_name[@]}; n++)); do # in the plan's order
    log="$work/logs/${P_name[$n]}.log"
    [[ "${P_name[$n]}" == bench_* ]] && [ -f "$log" ] || continue
    echo "### $(basename "$log" .log)"
    echo
    if ! grep -q '"cudnn_algorithms"' "$log"; then
      echo "(no cudnn_algorithms in the log: the step failed or was stopped before printing its JSON)"
    elif [ -n "$py" ]; then
      timeout 20 "$py" - "$log" <<'PY' || raw_json "$log"
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

# close_report OUTCOME: the closing part, after the table.
close_report() {
  closing=1
  trap '' TERM INT HUP USR1
  [ -z "$watchdog" ] || kill "$watchdog" 2>/dev/null
  [ $header_done -eq 1 ] || write_header
  now_ms
  {
    echo
    echo "## Result"
    echo
    echo "- finished $(date -u +%Y-%m-%dT%H:%M:%SZ), $(secs $((_now - t_start))) s after the start (deadline $deadline_s s)"
    if [ $failed -eq 0 ] && [ $cut -eq 0 ]; then
      echo "- result: every step passed"
    else
      [ $failed -eq 0 ] || echo "- result: SOME STEPS FAILED: ${failed_names[*]}"
      [ $failed -ne 0 ] || echo "- result: no step failed, but not every step ran"
    fi
    echo "- $1"
    if [ ${#not_run[@]} -gt 0 ]; then
      echo "- never ran (${#not_run[@]}): ${not_run[*]}"
    fi
    echo
    algorithm_tables
    if [ ${#details[@]} -gt 0 ]; then
      printf '%s\n' "## Failed steps (last 40 lines of each log)" "" "${details[@]}"
    fi
  } >>"$report"
}
exit_now() {
  echo "device-check: report written to $report" >&2
  [ $failed -ne 0 ] && exit 1
  [ $cut -ne 0 ] && exit 4
  exit 0
}

# ---- the plan and its steps ---------------------------------------------------------------
# plan NAME KIND LIMIT KEYS CMD: KIND always (not subject to DPLAB_CHECK_ONLY/SKIP), step, or
# note (never runs; CMD is why); CMD is shell words (quoted as `printf %q` does).
plan() { P_name+=("$1"); P_kind+=("$2"); P_limit+=("$3"); P_keys+=("$4"); P_cmd+=("$5"); }
q() { printf '%q ' "$@"; }

# Whether process group $1 has a member that is not a zombie (timeout itself stays one until
# this shell reaps it).
group_alive() {
  if command -v ps >/dev/null 2>&1; then
    ps -e -o pgid=,stat= 2>/dev/null | awk -v g="$1" '$1 == g && $2 !~ /^Z/ {f = 1} END {exit !f}'
  else
    kill -0 -- "-$1" 2>/dev/null
  fi
}
# Kills the running step's process group (timeout puts itself and the step in one) and records
# it as stopped.
stop_step() {
  local why="$1" i
  [ -n "$cur_pid" ] || return 0
  kill -TERM -- "-$cur_pid" 2>/dev/null
  for ((i = 0; i < 30; i++)); do # 3 s for it to end on SIGTERM, then SIGKILL
    group_alive "$cur_pid" || break
    sleep 0.1
  done
  kill -KILL -- "-$cur_pid" 2>/dev/null
  wait "$cur_pid" 2>/dev/null
  cur_pid=""
  now_ms
  cut=1
  row "$cur_index" "stopped: $why" "$(secs $((_now - cur_t0)))" "ran until stopped; log tail below" \
    "$(cmd_cell "$cur_index")"
  details+=("### ${P_name[$cur_index]} (stopped: $why)" "" '```' "$(tail -n 40 "$work/logs/${P_name[$cur_index]}.log" 2>/dev/null)" '```' "")
}
# Rows for the plan entries after the current one: never ran, and why.
mark_rest() {
  local i
  for ((i = 0; i < ${#P_name[@]}; i++)); do
    [ -n "${done_rows[$i]:-}" ] && continue
    [ "${P_kind[$i]}" = note ] && { row "$i" "not run" - "${P_cmd[$i]}"; continue; }
    row "$i" "not run: $1" - ""
    not_run+=("${P_name[$i]} ($1)")
    cut=1
  done
}
# The command of plan entry INDEX for the table: words as typed (quoted only where needed), the
# work directory as $W, and no | (it would end the table cell).
cmd_cell() {
  local -a argv
  local w c=""
  eval "argv=(${P_cmd[$1]})"
  for w in "${argv[@]}"; do
    if [[ "$w" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then c+="$w "
    elif ! [[ "$w" =~ [\"\\\$\`] ]]; then c+="\"$w\" "
    else c+="'${w//\'/\'\\\'\'}' "; fi
  done
  c="${c% }"
  c="${c//$work/\$W}"
  echo "\`${c//|/\\|}\`"
}

# run_entry INDEX: runs one plan entry (or records why not) and appends its row. Returns the
# step's exit status (0 for entries that did not run).
run_entry() {
  local i="$1" name="${P_name[$1]}" kind="${P_kind[$1]}" limit="${P_limit[$1]}" keys="${P_keys[$1]}"
  local log="$work/logs/${P_name[$1]}.log" rc numbers left_ms limit_ms kill_after capped=0 t1
  local -a argv
  cur_index=$i
  if [ "$kind" = note ]; then
    row "$i" "not run" - "${P_cmd[$i]}"
    return 0
  fi
  if [ "$kind" != always ]; then
    if { [ -n "${DPLAB_CHECK_ONLY:-}" ] && ! [[ "$name" =~ $DPLAB_CHECK_ONLY ]]; } ||
      { [ -n "${DPLAB_CHECK_SKIP:-}" ] && [[ "$name" =~ $DPLAB_CHECK_SKIP ]]; }; then
      row "$i" "not run" - "left out by DPLAB_CHECK_ONLY/SKIP"
      return 0
    fi
  fi
  [ "$limit" -gt "${DPLAB_CHECK_STEP_LIMIT:-600}" ] && limit="${DPLAB_CHECK_STEP_LIMIT:-600}"
  now_ms
  left_ms=$((deadline_at - reserve_ms - _now))
  if [ $left_ms -lt $min_step_ms ]; then
    row "$i" "not run: deadline" - "$(secs $((left_ms < 0 ? 0 : left_ms))) s left before the report's reserve; a step needs $(secs $min_step_ms) s to start"
    not_run+=("$name (deadline)")
    cut=1
    echo "device-check: $name: not run (deadline)" >&2
    return 0
  fi
  limit_ms=$((limit * 1000))
  kill_after=30
  if [ $left_ms -lt $limit_ms ]; then
    limit_ms=$left_ms
    capped=1
    kill_after=$(secs $((reserve_ms / 3 > 5000 ? 5000 : reserve_ms / 3 + 100)))
  fi
  echo "device-check: $name (up to $(secs $limit_ms) s) ..." >&2
  eval "argv=(${P_cmd[$i]})"
  cur_t0=$_now
  # In the background, so that a signal is handled at once (bash defers traps while a
  # foreground command runs); timeout makes itself the leader of a new process group, which
  # stop_step kills. stdin: not the caller's (mpiexec forwards it).
  timeout --kill-after="$kill_after" "$(secs $limit_ms)" "${argv[@]}" >"$log" 2>&1 </dev/null &
  cur_pid=$!
  wait "$cur_pid"
  rc=$?
  # A step that timed out: whatever of it outlived timeout's signals (its process group) goes.
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then kill -KILL -- "-$cur_pid" 2>/dev/null; fi
  cur_pid=""
  now_ms
  t1=$_now
  numbers=""
  [ "$keys" != "-" ] && numbers="$("$keys" "$log" 2>/dev/null | tr '\n' ' ' | sed 's/ *$//; s/ ;/;/g')"
  if [ $rc -eq 0 ] && [[ "$numbers" == *"MISMATCH"* ]]; then rc=1; fi
  local status=$rc
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    if [ $capped -eq 1 ]; then
      status="stopped: deadline"
      numbers="its timeout was the deadline's $(secs $limit_ms) s (own limit $limit s); $numbers"
      cut=1
    else
      numbers="timed out after ${limit} s; $numbers"
    fi
  fi
  row "$i" "$status" "$(secs $((t1 - cur_t0)))" "$numbers" "$(cmd_cell "$i")"
  if [ $rc -ne 0 ]; then
    [ "$status" = "stopped: deadline" ] || { failed=1; failed_names+=("$name"); }
    details+=("### $name ($([ "$status" = "$rc" ] && echo "exit $rc" || echo "$status"))" "" '```' "$(tail -n 40 "$log")" '```' "")
  fi
  echo "device-check: $name: $status, $(secs $((t1 - cur_t0))) s ${numbers:+($numbers)}" >&2
  return $rc
}

# 1. device facts
plan glibc always 10 glibc_keys "true"
plan cpu always 10 cpu_keys "$(q bash -c "grep -m1 '^model name' /proc/cpuinfo; nproc; grep -m1 '^flags' /proc/cpuinfo; grep '^CPU ISA' '$kit/KIT.txt' || true")"
# (its exit status is dplab --version's; the rest is for reading: ldd's resolution is checked by
# the next step)
plan environment always 120 env_keys "$(q bash -c "nvidia-smi; echo; nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv; cat /proc/driver/nvidia/version 2>/dev/null; echo; getconf GNU_LIBC_VERSION; uname -a; echo; ldd '$kit/bin/dplab'; echo; '$kit/bin/dplab' --version")"
plan libraries_resolve always 60 - "$(q bash -c "! ldd '$kit/bin/dplab' '$kit'/bin/test_* | grep 'not found'")"
# 2. the PyTorch baseline: torch_train_step.py alone, what the bench steps compare with
if [ -n "$torch_py" ]; then
  for dt in f32 bf16; do
    plan "pytorch_$dt" step 240 torch_keys "$(q "$torch_py" "$DPLAB_TORCH_BENCH" --device cuda \
      --model resnet50 --batch 256 --warmup 5 --steps "${DPLAB_CHECK_TORCH_STEPS:-10}" --dtype $dt)"
  done
else
  plan pytorch note 0 - "no python3 with a CUDA-enabled PyTorch found (tried: ${torch_why[*]:-none}): no baseline, dplab alone in the bench steps"
fi
# 3. and 5. the ctest entries of the kit: gtest binaries once each (test_cuda's op cases split
# off and run first; binaries that train models last), MPI (NCCL) entries at their rank counts.
gtests=() mpis=()
while IFS=$'\t' read -r name labels ranks limit binary args; do
  [[ ";$labels;" == *";cuda;"* ]] || continue
  # `sh -c '... exec @KIT_BIN@/BIN'` entries (device_kit_manifest.py): the system's sh, the kit's BIN.
  prog="$kit/bin/$binary"
  if [ "$binary" = sh ]; then
    prog="$(command -v sh)"
    args="${args//@KIT_BIN@/$kit/bin}"
  fi
  if [ "$ranks" -eq 0 ]; then
    if [ "$name" = test_cuda ] && [ -z "$args" ]; then
      gtests+=("0"$'\t'"test_cuda_opcases"$'\t'"$limit"$'\t'"$(q "$prog") --gtest_filter='OpCases/*'")
      gtests+=("1"$'\t'"test_cuda"$'\t'"$limit"$'\t'"$(q "$prog") --gtest_filter='-OpCases/*'")
    elif [[ "$name" == *tools* ]]; then # DeviceTrain: whole training runs
      gtests+=("3"$'\t'"$name"$'\t'"$limit"$'\t'"$(q "$prog") $args")
    else
      gtests+=("2"$'\t'"$name"$'\t'"$limit"$'\t'"$(q "$prog") $args")
    fi
  elif [ "$ranks" -le "$ngpu" ]; then
    mpis+=("$name"$'\t'"$limit"$'\t'"$(q "$kit/bin/mpiexec" -n "$ranks" "$prog") $args")
  else
    mpis+=("$name"$'\t'"note"$'\t'"needs $ranks GPUs, this machine has $ngpu")
  fi
done <"$kit/tests.tsv"
while IFS=$'\t' read -r _ name limit cmd; do
  plan "$name" step "$limit" gtest_counts "$cmd"
done < <(printf '%s\n' ${gtests[@]+"${gtests[@]}"} | grep . | sort -s -t $'\t' -k1,1n)
# 4. one training step. A one-step probe: says (dplab's own reason) when the runtime sees no
# device; always runs.
plan cuda_probe always 300 bench_keys "$(q "$kit/bin/dplab" bench train --device cuda \
  --model mnist_cnn --batch 8 --steps 1 --warmup 1 --json)"
for m in ${mpis[@]+"${mpis[@]}"}; do
  IFS=$'\t' read -r name limit cmd <<<"$m"
  if [ "$limit" = note ]; then plan "$name" note 0 - "$cmd"; else plan "$name" step "$limit" gtest_counts "$cmd"; fi
done
# 6. the benchmarks: dplab and PyTorch on the same GPU in one invocation (--compare-pytorch: the
# kit's torch_train_step.py with the same model, batch, device and precision).
steps="${DPLAB_CHECK_STEPS:-20}"
compare=()
[ -n "$torch_py" ] && compare=(env "DPLAB_PYTHON=$torch_py")
for amp in off bf16; do
  if [ -n "$torch_py" ]; then
    plan "bench_resnet50_$([ $amp = off ] && echo f32 || echo bf16)" step 900 bench_keys \
      "$(q "${compare[@]}" "$kit/bin/dplab" bench train --device cuda --model resnet50 --batch 256 \
        --steps "$steps" --warmup 5 --amp $amp --json --compare-pytorch)"
  else
    plan "bench_resnet50_$([ $amp = off ] && echo f32 || echo bf16)" step 900 bench_keys \
      "$(q "$kit/bin/dplab" bench train --device cuda --model resnet50 --batch 256 \
        --steps "$steps" --warmup 5 --amp $amp --json)"
  fi
done
# 7. training to accuracy
for amp in off bf16; do
  run="mnist_cuda$([ $amp = off ] || echo _$amp)"
  if [ -f "$kit/data/mnist_command.txt" ]; then
    read -r -a mnist_words <"$kit/data/mnist_command.txt"
    mnist_cmd="$(q "$kit/bin/dplab")"
    for w in ${mnist_words[@]+"${mnist_words[@]}"}; do
      w="${w//\{KIT\}/$kit}"
      w="${w//\{DEVICE\}/cuda}"
      w="${w//\{OUT\}/$work/runs/$run}"
      mnist_cmd+="$(q "$w")"
    done
    [ $amp = off ] || mnist_cmd+="$(q --set "amp=$amp")"
    plan "$run" step 900 mnist_keys "$mnist_cmd"
  else
    plan "$run" note 0 - "the kit has no data/mnist_command.txt"
  fi
done
for amp in off bf16; do
  plan "resnet50_train_$amp" step 900 resnet_keys "$(q "$kit/bin/dplab" train --model resnet50 \
    --data "folder:$kit/data/synthetic-jpeg" --batch 64 --max-steps 30 --epochs 8 --device cuda \
    --set amp=$amp --set data.workers=8 --out "$work/runs/resnet50_train_$amp")"
done

# ---- run it -----------------------------------------------------------------------------------
write_header
for ((k = 0; k < ${#P_name[@]}; k++)); do
  run_entry "$k"
  rc=$?
  if [ "${P_name[$k]}" = cuda_probe ] && [ $rc -ne 0 ] &&
    reason="$(grep -o 'no CUDA device: .*' "$work/logs/cuda_probe.log" | head -1)" &&
    [ -n "$reason" ]; then
    # nvidia-smi saw a GPU but the CUDA runtime cannot use it (driver too old, device busy or
    # hidden): the runtime's reason is the answer, and nothing after could run.
    for ((j = k + 1; j < ${#P_name[@]}; j++)); do not_run+=("${P_name[$j]}"); done
    close_report "stopped after cuda_probe: the CUDA runtime sees no device ($reason); nvidia-smi lists $ngpu GPU(s)"
    echo "device-check: $reason (nvidia-smi lists $ngpu GPU(s)); report: $report" >&2
    exit 2
  fi
done
close_report "$([ $cut -eq 0 ] && echo "every planned step ran" || echo "the deadline ($deadline_s s) left steps unrun or stopped")"
exit_now
