#!/usr/bin/env bash
# ctest tools.device_check_dry_run: tools/scripts/device-check.sh --dry-run, start to end, on a
# stand-in device (an nvidia-smi on PATH that lists one GPU) and a stand-in kit (bin/dplab, test
# binaries, mpiexec and torch_train_step.py that sleep a moment and print what the real ones
# print; tests.tsv, KIT.txt, data/). Each stand-in, as it starts, copies the report as it is at
# that moment (snap/<its command>.md), so the test sees what a reader of a cut report would.
# Checked:
#   A. --deadline 12 (mnist_cuda's stand-in sleeps a minute): the rows come in the documented
#      order (the script's header comment: device facts, PyTorch baseline, CUDA tests with the op
#      cases first, the training step, NCCL, benchmarks, training to accuracy) and as the
#      header's plan lists them; CPU-only tests.tsv entries are not run; the step the deadline
#      cuts is "stopped: deadline" (or "not run: deadline" on a slow machine), every later one
#      "not run: deadline"; the script ends within the deadline; the closing part lists what never
#      ran and the failed steps' log tails; the bench rows say which precision each side ran;
#      a snapshot taken while a later step ran already holds the earlier rows.
#   B. SIGTERM while a bench step runs (--deadline 60): the report a snapshot saw at that step's
#      start already held the earlier rows and no closing part; after the signal the script ends
#      within seconds, the step is "stopped: signal SIGTERM" and its processes are gone, the rest
#      "not run: signal SIGTERM", and the closing part is there.
# Takes about 15 s.
set -uo pipefail
src="${1:?usage: device_check_dry_run.sh SOURCE_DIR}"
check="$src/tools/scripts/device-check.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=1
}
for tool in timeout tar xz; do
  command -v "$tool" >/dev/null || { echo "needs $tool"; exit 77; }
done

# ---- the stand-in device and python --------------------------------------------------------
mkdir -p "$tmp/bin"
cat >"$tmp/bin/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
  -L) echo "GPU 0: Stand-in GPU (UUID: GPU-00000000)" ;;
  *--query-gpu*)
    case "$*" in *noheader*) ;; *) echo "name, driver_version, memory.total [MiB], compute_cap" ;; esac
    echo "Stand-in GPU, 999.99, 1024 MiB, 9.0" ;;
  *) echo "stand-in nvidia-smi" ;;
esac
EOF
# The PyTorch the check looks for: says it has CUDA; runs the kit's torch_train_step.py (a
# stand-in bash script) with bash, and anything else (the cuDNN table's formatting) with python3.
cat >"$tmp/bin/python3-standin" <<'EOF'
#!/bin/sh
case "$*" in
  *torch.cuda.is_available*) echo "9.9.9-standin cuDNN 99999"; exit 0 ;;
  *"import nvidia"*) exit 1 ;;
  *torch_train_step.py*) exec bash "$@" ;;
esac
command -v python3 >/dev/null && exec python3 "$@"
exit 1
EOF
chmod +x "$tmp/bin/nvidia-smi" "$tmp/bin/python3-standin"

# ---- the stand-in kit ------------------------------------------------------------------------
kit="$tmp/kit/dplab-kit"
mkdir -p "$kit/bin" "$kit/lib" "$kit/data/synthetic-jpeg" "$kit/share/dplab/bench"
# One program for every kit binary: it takes its part from its name and arguments. Environment:
# FAKE_REPORT (the report to copy), FAKE_SNAP (where), FAKE_SLOW (an extended regex on
# "NAME ARGS": those sleep 60 s), FAKE_FAIL (regex: those fail), FAKE_SLEEP (the others' sleep).
cat >"$tmp/standin" <<'EOF'
#!/bin/bash
me=$(basename "$0")
what="$me $*"
[ "$me" = dplab ] && [ "$1" = --version ] && { echo "dplab 0.0-standin (commit standin)"; exit 0; }
key=$(printf '%s' "$what" | tr -c 'A-Za-z0-9' '_' | cut -c1-200)
[ -n "${FAKE_SNAP:-}" ] && cp "$FAKE_REPORT" "$FAKE_SNAP/$key.md" 2>/dev/null
echo "${CUDA_MODULE_LOADING:-unset}" >"$FAKE_SNAP/$key.env"
if [[ "$what" =~ ${FAKE_SLOW:-^$} ]]; then
  sleep 60 &
  echo "$$ $!" >"$FAKE_SNAP/$key.pids"
  wait
else
  sleep "${FAKE_SLEEP:-0.2}"
fi
arg() { # arg OPTION: the value after OPTION
  local prev=""
  for a in "${@:2}"; do [ "$prev" = "$1" ] && { echo "$a"; return; }; prev="$a"; done
}
case "$me" in
  dplab)
    if [ "$1" = bench ]; then
      amp=$(arg --amp "$@")
      pt=""
      [[ " $* " == *" --compare-pytorch "* ]] && pt=',"pytorch_images_per_s":100.0,"pytorch_peak_device_mb":200.0,"ratio":1.25,"pytorch_dtype":"'$([ "$amp" = bf16 ] && echo bf16 || echo f32)'"'
      echo '{"mode":"train","amp":"'"${amp:-off}"'","images_per_s":125.0,"ms_per_step_median":8.0,"peak_device_mb":100.0,"cudnn_algorithms":[{"direction":"forward","algorithm":"IMPLICIT_GEMM","math":"fma","workspace_bytes":0,"calls":3,"shape":"8x1x28x28"}]'"$pt"'}'
    elif [ "$1" = train ]; then
      out=$(arg --out "$@")
      mkdir -p "$out"
      echo '{"kind":"final","test_acc":0.8255,"total_images_per_s":500.0,"loss":0.5}' >"$out/metrics.jsonl"
    fi ;;
  torch_train_step.py)
    dt=$(arg --dtype "$@")
    if [ "$dt" = bf16 ]; then p="bf16 autocast, channels_last, cudnn.benchmark" cl=true
    else p="f32 (TF32 off), cudnn.benchmark" cl=false; fi
    echo '{"torch": "9.9.9-standin", "cudnn": 99999, "precision": "'"$p"'", "tf32": false, "channels_last": '$cl', "cudnn_benchmark": true, "warmup": 5, "ms_per_step_median": 10.0, "images_per_s": 99.0, "peak_device_mb": 300.0}' ;;
  *) # gtest
    if [[ "$what" =~ ${FAKE_FAIL:-^$} ]]; then
      printf '[==========] 3 tests ran.\n[  PASSED  ] 2 tests.\n[  FAILED  ] 1 test, listed below:\n[  FAILED  ] Standin.Fails\n'
      exit 1
    fi
    printf '[==========] 3 tests ran.\n[  PASSED  ] 3 tests.\n' ;;
esac
EOF
for b in dplab test_cuda test_core test_tools test_nccl_communicator; do
  cp "$tmp/standin" "$kit/bin/$b"
done
cp "$tmp/standin" "$kit/share/dplab/bench/torch_train_step.py"
# shellcheck disable=SC2016  # the stand-in's own "$1" and "$@"
printf '#!/bin/sh\n[ "$1" = -n ] && shift 2\nexec "$@"\n' >"$kit/bin/mpiexec"
chmod +x "$kit/bin"/* "$kit/share/dplab/bench/torch_train_step.py"
# As device_kit_manifest.py writes it (gtest binaries by name, then MPI entries), test_tools_cuda
# moved first to see it run last among the CUDA tests; test_core is a CPU-only entry.
{
  printf 'test_tools_cuda\tcuda;tools\t0\t300\ttest_tools\t--gtest_filter=%s\n' "'DeviceTrain.Cuda*'"
  printf 'test_core\tcore\t0\t300\ttest_core\t--gtest_filter=%s\n' "'-CudaMemory.*'"
  printf 'test_core_cuda\tcore;cuda\t0\t300\ttest_core\t--gtest_filter=%s\n' "'CudaMemory.*'"
  printf 'test_cuda\tcuda\t0\t1800\ttest_cuda\t\n'
  printf 'test_nccl_communicator_np1\tcomm;mpi;cuda\t1\t120\ttest_nccl_communicator\t\n'
  printf 'test_nccl_communicator_np2\tcomm;mpi;cuda\t2\t120\ttest_nccl_communicator\t\n'
  printf 'test_nccl_communicator_np2_one_gpu_per_rank\tcomm;mpi;cuda\t2\t120\tsh\t-c %s\n' \
    "'CUDA_VISIBLE_DEVICES=\$MPI_LOCALRANKID exec @KIT_BIN@/test_nccl_communicator'"
} >"$kit/tests.tsv"
printf 'dplab device kit (stand-in)\nglibc needed: GLIBC_2.2.5\nCPU ISA: x86-64 (the compiler'"'"'s default: DPLAB_NATIVE=OFF, no DPLAB_CPU_ISA)\n' >"$kit/KIT.txt"
echo 'train --model mnist_cnn --data fashion-mnist:{KIT}/data/fashion-mnist --epochs 2 --device {DEVICE} --out {OUT}' >"$kit/data/mnist_command.txt"
echo 'test_acc 0.8255' >"$kit/data/cpu_reference.txt"
tar -C "$tmp/kit" -cJf "$tmp/kit.tar.xz" dplab-kit

# The documented order (device-check.sh's header comment) for this kit on one GPU.
expected="glibc cpu environment libraries_resolve pytorch_f32 pytorch_bf16 test_cuda_opcases
test_cuda test_core_cuda test_tools_cuda cuda_probe test_nccl_communicator_np1
test_nccl_communicator_np2 test_nccl_communicator_np2_one_gpu_per_rank bench_resnet50_f32
bench_resnet50_bf16 mnist_cuda mnist_cuda_bf16 resnet50_train_off resnet50_train_bf16"
expected="$(echo "$expected" | tr '\n' ' ' | sed 's/ $//')"

rows_of() { # the step table's first column, in order
  awk '/^\| step \| command /{t=1; next} t && !/^\|/{exit} t && !/^\| ---/{print $2}' "$1" |
    tr '\n' ' ' | sed 's/ $//'
}
row() { grep "^| $2 | " "$1"; }           # row REPORT STEP
status_of() { row "$1" "$2" | awk -F' [|] ' '{print $3}'; }
snap() { compgen -G "$1/$2" | head -1; } # snap DIR GLOB: the first snapshot that matches

run_check() { # run_check NAME ARGS...: device-check.sh on the stand-in kit, in the background
  local name="$1"
  shift
  mkdir -p "$tmp/$name.snap"
  PATH="$tmp/bin:/usr/bin:/bin" DPLAB_PYTHON="$tmp/bin/python3-standin" \
    DPLAB_CHECK_DIR="$tmp/$name.work" FAKE_REPORT="$tmp/$name.md" FAKE_SNAP="$tmp/$name.snap" \
    bash "$check" --dry-run "$@" "$tmp/kit.tar.xz" "$tmp/$name.md" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
}

# ---- A: the deadline -------------------------------------------------------------------------
t0=$(date +%s%N)
FAKE_SLOW='^dplab train .*mnist' FAKE_FAIL='^test_tools ' run_check A --deadline 12
wait $pid
rc=$?
secs=$((($(date +%s%N) - t0) / 1000000))
r="$tmp/A.md"
[ "$rc" -eq 1 ] || fail "A: exit $rc, expected 1 (test_tools_cuda fails): $(tail -5 "$tmp/A.err")"
[ $secs -le 13500 ] || fail "A: took $secs ms with --deadline 12"
head -1 "$r" | grep -q 'DRY RUN' || fail "A: the title does not say DRY RUN: $(head -1 "$r")"
got="$(rows_of "$r")"
[ "$got" = "$expected" ] || fail "A: rows in the order
  $got
expected
  $expected"
planned="$(sed -n 's/^- planned, in order: //p' "$r")"
[ "$planned" = "$expected" ] || fail "A: the header's plan '$planned' is not the documented order"
row "$r" test_core >/dev/null && fail "A: the CPU-only entry test_core ran"
[ -n "$(snap "$tmp/A.snap" 'test_core___gtest_filter__CudaMemory*.md')" ] && fail "A: test_core's CPU part was started"
case "$(status_of "$r" mnist_cuda)" in
  "stopped: deadline" | "not run: deadline") ;;
  *) fail "A: mnist_cuda (sleeps 60 s) is '$(status_of "$r" mnist_cuda)', not stopped/not run by the deadline" ;;
esac
for s in mnist_cuda_bf16 resnet50_train_off resnet50_train_bf16; do
  [ "$(status_of "$r" $s)" = "not run: deadline" ] || fail "A: $s is '$(status_of "$r" $s)', not 'not run: deadline'"
done
for s in glibc environment libraries_resolve pytorch_f32 test_cuda_opcases cuda_probe bench_resnet50_bf16; do
  [ "$(status_of "$r" $s)" = 0 ] || fail "A: $s: '$(row "$r" $s)'"
done
[ "$(status_of "$r" test_tools_cuda)" = 1 ] || fail "A: test_tools_cuda: '$(row "$r" test_tools_cuda)'"
[ "$(status_of "$r" test_nccl_communicator_np2)" = "not run" ] || fail "A: np2 on one GPU: $(row "$r" test_nccl_communicator_np2)"
row "$r" pytorch_f32 | grep -q 'PyTorch f32 (TF32 off), cudnn.benchmark' || fail "A: pytorch_f32 row: $(row "$r" pytorch_f32)"
row "$r" bench_resnet50_f32 | grep -q 'dplab f32 (no TF32).*PyTorch f32 (TF32 off)' || fail "A: bench f32 row: $(row "$r" bench_resnet50_f32)"
row "$r" bench_resnet50_bf16 | grep -q 'dplab amp bf16.*PyTorch bf16 autocast, channels_last, cudnn.benchmark' ||
  fail "A: bench bf16 row: $(row "$r" bench_resnet50_bf16)"
grep -q '^## Result' "$r" || fail "A: no closing part"
grep -q '^- never ran.*resnet50_train_off (deadline).*resnet50_train_bf16 (deadline)' "$r" || fail "A: the closing part does not list the steps the deadline left out"
{ grep -q '^### test_tools_cuda (exit 1)' "$r" && grep -q 'Standin.Fails' "$r"; } ||
  fail "A: no log tail of the failed test_tools_cuda"
{ grep -q '^### bench_resnet50_f32' "$r" && grep -q -e '| forward | IMPLICIT_GEMM | fma |' \
  -e '"cudnn_algorithms"' "$r"; } || fail "A: no cuDNN algorithm table"
for e in "$tmp"/A.snap/*.env; do
  [ "$(cat "$e")" = EAGER ] || fail "A: $(basename "$e" .env) ran with CUDA_MODULE_LOADING=$(cat "$e")"
done
# Written as it ran: when test_core_cuda started, test_cuda_opcases's row was in the file.
s="$(snap "$tmp/A.snap" 'test_core___gtest_filter_CudaMemory*.md')"
if [ -z "$s" ]; then fail "A: test_core_cuda's stand-in left no snapshot"
else
  row "$s" test_cuda_opcases >/dev/null || fail "A: the report did not have test_cuda_opcases's row while test_core_cuda ran"
  row "$s" test_core_cuda >/dev/null && fail "A: test_core_cuda's row was there before it ran"
  grep -q '^## Result' "$s" && fail "A: the closing part was there before the end"
fi
[ $fails -eq 0 ] && echo "ok A: --deadline 12: $(echo "$got" | wc -w) rows in the documented order, mnist_cuda '$(status_of "$r" mnist_cuda)', ${secs} ms, exit $rc"

# ---- B: SIGTERM while a step runs ------------------------------------------------------------
FAKE_SLOW='^dplab bench .*--amp off' run_check B --deadline 60
r="$tmp/B.md"
s=""
for _ in $(seq 100); do
  s="$(snap "$tmp/B.snap" 'dplab_bench_*amp_off*.md')"
  [ -n "$s" ] && [ -f "${s%.md}.pids" ] && break
  sleep 0.2
done
if [ -z "$s" ]; then
  fail "B: the bench step never started: $(tail -5 "$tmp/B.err")"
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
else
  sleep 0.5
  t0=$(date +%s%N)
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  [ "$rc" -eq 4 ] || fail "B: exit $rc, expected 4 (none failed, stopped by a signal): $(tail -5 "$tmp/B.err")"
  [ $ms -le 8000 ] || fail "B: $ms ms from SIGTERM to the end"
  # The snapshot at the bench step's start: the rows so far, no closing part.
  for st in glibc pytorch_bf16 test_cuda cuda_probe test_nccl_communicator_np1; do
    row "$s" $st >/dev/null || fail "B: $st's row was not in the report while bench_resnet50_f32 ran"
  done
  row "$s" bench_resnet50_f32 >/dev/null && fail "B: bench_resnet50_f32's row before it ended"
  grep -q '^## Result' "$s" && fail "B: a closing part while the check ran"
  # After the signal.
  [ "$(status_of "$r" bench_resnet50_f32)" = "stopped: signal SIGTERM" ] ||
    fail "B: bench_resnet50_f32 is '$(row "$r" bench_resnet50_f32)'"
  for st in bench_resnet50_bf16 mnist_cuda mnist_cuda_bf16 resnet50_train_off resnet50_train_bf16; do
    [ "$(status_of "$r" $st)" = "not run: signal SIGTERM" ] || fail "B: $st is '$(row "$r" $st)'"
  done
  [ "$(rows_of "$r")" = "$expected" ] || fail "B: rows $(rows_of "$r")"
  grep -q '^## Result' "$r" || fail "B: no closing part after SIGTERM"
  grep -q '^- stopped: signal SIGTERM' "$r" || fail "B: the closing part does not say what stopped it"
  grep -q '^- never ran (5):' "$r" || fail "B: the closing part does not list the 5 steps never run"
  grep -q '^### bench_resnet50_f32 (stopped: signal SIGTERM)' "$r" || fail "B: no log tail of the stopped step"
  for p in $(cat "${s%.md}.pids"); do
    # A killed process lingers as a zombie until it is reaped (by init, for the orphaned sleep),
    # which a loaded machine may take a moment to do: alive means present and not a zombie,
    # for 5 s after the check ended.
    for _ in $(seq 50); do
      [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null || echo gone)" = R ] ||
        [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null || echo gone)" = S ] || break
      sleep 0.1
    done
    st="$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null || echo gone)"
    case "$st" in gone | Z | X) ;; *) fail "B: the stopped step's process $p still runs ($st)"; kill "$p" ;; esac
  done
  [ $fails -eq 0 ] && echo "ok B: SIGTERM during bench_resnet50_f32: ended in $ms ms, exit $rc, closing part written"
fi

exit $fails
