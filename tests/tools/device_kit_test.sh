#!/usr/bin/env bash
# ctest tools.device_check_no_device: tools/scripts/device-check.sh on a machine without a GPU
# must stop at once, before it unpacks anything, with exit 2 and
# "device-check: no CUDA device: <reason>" (and the same line in its report), for each way a
# machine can lack one: no driver at all, an nvidia-smi that cannot reach the driver, an
# nvidia-smi that lists nothing. A stand-in nvidia-smi that lists a GPU must get past that gate
# (to the archive check: exit 3), so the gate is not simply always closed.
# Exit 77 (ctest: skipped) where this machine really has a GPU: the first case cannot hold there.
set -uo pipefail
src="${1:?usage: device_kit_test.sh SOURCE_DIR}"
check="$src/tools/scripts/device-check.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=1
}

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "a GPU is visible here (nvidia-smi -L): the no-device answer cannot be tested"
  exit 77
fi

# run NAME PATH_PREFIX: device-check.sh with PATH_PREFIX (stand-in tools) before a PATH that has
# no nvidia-smi; the archive does not exist, so only the device gate can decide the outcome.
run() {
  local name="$1" prefix="$2"
  PATH="$prefix:/usr/bin:/bin" bash "$check" "$tmp/none.tar.xz" "$tmp/$name.md" \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $?
}
expect_no_device() {  # NAME EXIT REASON_PATTERN
  local name="$1" rc="$2" pattern="$3" first
  first="$(head -1 "$tmp/$name.err")"
  [ "$rc" -eq 2 ] || fail "$name: exit $rc, expected 2 ($(cat "$tmp/$name.err"))"
  [[ "$first" =~ ^device-check:\ no\ CUDA\ device:\ .*$pattern ]] ||
    fail "$name: first line '$first' does not say 'device-check: no CUDA device: ...$pattern'"
  grep -q "no CUDA device" "$tmp/$name.md" 2>/dev/null || fail "$name: the report does not say it"
  [ ! -e "$tmp/dplab-kit" ] || fail "$name: unpacked something before refusing"
  echo "ok $name: $first"
}

# 1. This machine as it is (a PATH without nvidia-smi; no /dev/nvidia0 here).
if compgen -G '/dev/nvidia[0-9]*' >/dev/null || PATH=/usr/bin:/bin command -v nvidia-smi >/dev/null; then
  echo "case 1 not run: this machine has an NVIDIA driver (/dev/nvidia* or nvidia-smi) but no GPU"
else
  rc=$(run bare "$tmp/empty")
  expect_no_device bare "$rc" "nvidia-smi not found"
fi

# 2. A driver that does not answer: nvidia-smi fails as it does without a loaded kernel module.
mkdir -p "$tmp/broken"
cat >"$tmp/broken/nvidia-smi" <<'EOF'
#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
exit 9
EOF
chmod +x "$tmp/broken/nvidia-smi"
rc=$(run broken "$tmp/broken")
expect_no_device broken "$rc" "exit 9.*couldn't communicate with the NVIDIA driver"

# 3. A driver that lists no GPU.
mkdir -p "$tmp/none"
printf '#!/bin/sh\necho "No devices found."\nexit 0\n' >"$tmp/none/nvidia-smi"
chmod +x "$tmp/none/nvidia-smi"
rc=$(run nogpu "$tmp/none")
expect_no_device nogpu "$rc" "lists no GPU"

# 4. CUDA_VISIBLE_DEVICES set to nothing hides every GPU.
mkdir -p "$tmp/one"
printf '#!/bin/sh\necho "GPU 0: NVIDIA H200 (UUID: GPU-0)"\n' >"$tmp/one/nvidia-smi"
chmod +x "$tmp/one/nvidia-smi"
rc=$(CUDA_VISIBLE_DEVICES='' run hidden "$tmp/one")
expect_no_device hidden "$rc" "CUDA_VISIBLE_DEVICES is set but empty"

# 5. The gate opens when a GPU is listed: the missing archive is the next thing it reports.
rc=$(run listed "$tmp/one")
[ "$rc" -eq 3 ] || fail "listed: exit $rc, expected 3 (no such archive): $(cat "$tmp/listed.err")"
grep -q "no such archive" "$tmp/listed.err" || fail "listed: $(cat "$tmp/listed.err")"
grep -q "no CUDA device" "$tmp/listed.err" && fail "listed: a listed GPU was called no device"
[ $fails -eq 0 ] && echo "ok listed: $(head -1 "$tmp/listed.err")"

# 6. nvidia-smi lists a GPU but the CUDA runtime cannot use it (here: a driver older than the
# runtime): the kit's one-step probe gives the runtime's reason, and the check stops there with
# exit 2 instead of running (and failing) every step. A stand-in kit whose dplab answers as the
# real one does on this machine (cmd_bench.cpp's "no CUDA device: ..." line).
mkdir -p "$tmp/kit/dplab-kit/bin" "$tmp/kit/dplab-kit/data"
cat >"$tmp/kit/dplab-kit/bin/dplab" <<'EOF'
#!/bin/sh
[ "$1" = "--version" ] && { echo "dplab stand-in"; exit 0; }
echo "dplab: error: bench --device cuda:0: no CUDA device: cudaGetDeviceCount failed with cudaErrorInsufficientDriver" >&2
exit 1
EOF
chmod +x "$tmp/kit/dplab-kit/bin/dplab"
: >"$tmp/kit/dplab-kit/tests.tsv"
echo "glibc needed: GLIBC_2.2.5" >"$tmp/kit/dplab-kit/KIT.txt"
tar -C "$tmp/kit" -cJf "$tmp/kit.tar.xz" dplab-kit
PATH="$tmp/one:/usr/bin:/bin" DPLAB_CHECK_DIR="$tmp/work" bash "$check" "$tmp/kit.tar.xz" \
  "$tmp/probe.md" >"$tmp/probe.out" 2>"$tmp/probe.err"
rc=$?
last="$(tail -1 "$tmp/probe.err")"
[ "$rc" -eq 2 ] || fail "probe: exit $rc, expected 2: $(cat "$tmp/probe.err")"
[[ "$last" =~ ^device-check:\ no\ CUDA\ device:\ cudaGetDeviceCount\ failed\ with\ cudaErrorInsufficientDriver ]] ||
  fail "probe: last line '$last'"
grep -q '| cuda_probe | .* | 1 |' "$tmp/probe.md" || fail "probe: the report has no failed cuda_probe row"
# (the header's plan names every step; only rows say that one ran)
grep -q '^| mnist_cuda |' "$tmp/probe.md" && fail "probe: steps after the probe ran"
grep -q '^## Result' "$tmp/probe.md" || fail "probe: the report has no closing part"
grep -q 'the CUDA runtime sees no device' "$tmp/probe.md" || fail "probe: the report does not say why it stopped"
[ $fails -eq 0 ] && echo "ok probe: $last"

exit $fails
