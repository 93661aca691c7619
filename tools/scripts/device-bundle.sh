#!/usr/bin/env bash
# device-bundle.sh [OUT.tar.xz]: packs a built tree (${DPLAB_BUILD_DIR:-build}) into the device
# kit, a relocatable archive for a GPU machine that reaches no package registry and receives at
# most 64 MiB (issue 19, item 4). The kit holds:
#   bin/      dplab, every test binary labelled `cuda` in ctest (CUDA and NCCL tests), the CPU
#             test binaries the bare-root self-test runs ($DPLAB_KIT_CPU_TESTS), and MPICH's
#             launcher (mpiexec = mpiexec.hydra, hydra_pmi_proxy)
#   lib/      every shared library those need except glibc and NVIDIA's own (driver, cuDNN,
#             cuBLAS, NCCL: the device machine has them, often only in a Python environment's
#             site-packages); the CUDA runtime libcudart IS carried (NVIDIA lists it as
#             redistributable in the CUDA EULA, Attachment A) so the kit runs on the runtime it
#             was built with. lib/ucx: UCX's shared-memory module (MPICH's transport).
#   tests.tsv the ctest entries to run (tools/scripts/device_kit_manifest.py)
#   data/     a Fashion-MNIST subset (IDX) and cpu_reference.txt: this machine's accuracy for
#             the mnist_cnn run device-check.sh repeats with --device cuda
#   share/dplab/bench/torch_train_step.py, device-check.sh, KIT.txt (what built it, the glibc
#             it needs and the CPU ISA level its CPU kernels were compiled for: DPLAB_CPU_ISA and
#             DPLAB_CPU_ISA_VARIANTS from the build's CMakeCache.txt; for DPLAB_CPU_ISA=native,
#             or an older build's DPLAB_NATIVE=ON, "native (this build machine: ...)" with this
#             CPU's vector extensions, which device-check.sh compares with the device's CPU)
# Extra shared libraries named in $build/dplab_extra_libs.txt (one absolute path a line; `#`
# comments; e.g. per-ISA kernel libraries that dplab dlopen()s, which ldd cannot see) go into
# lib/ with the same treatment, and their own dependencies with them.
# Every ELF file gets DT_RPATH $ORIGIN/../lib (bin/) or $ORIGIN (lib/): DT_RPATH, not RUNPATH,
# because it is searched before LD_LIBRARY_PATH (which device-check.sh sets for NVIDIA's
# libraries) and applies to indirect dependencies too. Binaries are stripped; xz -9.
# Prints the size and the time taken. Size: the device receives the working tree's files (what
# `git ls-files --cached --others --exclude-standard` lists: tracked and unignored files) plus
# the kit, at most 64 MiB in all; the script fails when tree + kit exceed $DPLAB_KIT_LIMIT_MIB
# (default 60 = 64 minus a 4 MiB margin), printing the three numbers. Outside a git checkout it
# warns and checks the kit alone against that limit.
set -euo pipefail
shopt -s nullglob  # an empty lib/ucx (MPICH without UCX) is no error
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DPLAB_BUILD_DIR:-$root/build}"
out="${1:-$build/dplab-device-kit.tar.xz}"
limit_mib="${DPLAB_KIT_LIMIT_MIB:-60}"
cpu_tests="${DPLAB_KIT_CPU_TESTS:-test_core,test_comm_collectives}"
fmnist="${DPLAB_KIT_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}"
py=/usr/bin/python3
start=$(date +%s.%N)

die() {
  echo "device-bundle: $*" >&2
  exit 1
}
last=$start
phase() {  # phase NAME: how long the part just finished took
  local now
  now=$(date +%s.%N)
  awk -v n="$1" -v a="$last" -v b="$now" 'BEGIN{printf "device-bundle: %-10s %5.1f s\n", n, b-a}' >&2
  last=$now
}
for tool in patchelf strip xz tar ldd ctest "$py"; do
  command -v "$tool" >/dev/null || die "needs $tool (tools/scripts/install-deps.sh installs it)"
done
[ -x "$build/bin/dplab" ] || die "no $build/bin/dplab: build first (tools/scripts/build.sh)"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

stage="$(mktemp -d "${TMPDIR:-/tmp}/dplab-kit.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
kit="$stage/dplab-kit"
mkdir -p "$kit/bin" "$kit/lib/ucx" "$kit/share/dplab/bench" "$kit/data"

# Extra libraries the build names (dlopen()ed: no binary's DT_NEEDED lists them).
extra_libs=()
if [ -f "$build/dplab_extra_libs.txt" ]; then
  while IFS= read -r l || [ -n "$l" ]; do
    l="${l%%#*}"
    l="${l#"${l%%[![:space:]]*}"}"
    l="${l%"${l##*[![:space:]]}"}"
    [ -n "$l" ] || continue
    case "$l" in /*) ;; *) die "$build/dplab_extra_libs.txt: '$l' is not an absolute path" ;; esac
    [ -f "$l" ] || die "$build/dplab_extra_libs.txt names $l, which does not exist: build first"
    extra_libs+=("$l")
  done <"$build/dplab_extra_libs.txt"
fi

# ---- which binaries: ctest's labels decide ------------------------------------------------
ctest --test-dir "$build" --show-only=json-v1 >"$stage/ctest.json" ||
  die "ctest --show-only=json-v1 failed in $build"
"$py" "$root/tools/scripts/device_kit_manifest.py" --cpu "$cpu_tests" \
  --binaries "$stage/binaries" <"$stage/ctest.json" >"$kit/tests.tsv"
grep -q $'\tcuda\|;cuda' "$kit/tests.tsv" ||
  die "no test labelled cuda in $build: configure with the CUDA backend (nvcc found)"
cp "$build/bin/dplab" "$kit/bin/"
while read -r b; do
  [ -x "$b" ] || die "test binary $b is missing: build the whole tree first"
  cp "$b" "$kit/bin/"
done <"$stage/binaries"
# MPICH's launcher: mpiexec is a chain of links to mpiexec.hydra, which starts
# hydra_pmi_proxy (device-check.sh puts the kit's bin/ on PATH for it).
mpiexec_real="$(readlink -f "$(command -v mpiexec.hydra || command -v mpiexec)")"
[ -x "$mpiexec_real" ] || die "no mpiexec.hydra found"
cp "$mpiexec_real" "$kit/bin/mpiexec"
cp "$(dirname "$mpiexec_real")/hydra_pmi_proxy" "$kit/bin/" ||
  die "no hydra_pmi_proxy beside $mpiexec_real"
# UCX (MPICH's transport) loads its transports as modules: the kit carries the shared-memory one
# (cross-memory attach); device-check.sh points UCX_MODULE_DIR at lib/ucx.
ucs="$(ldconfig -p | awk '/libucs\.so\.0 / && !p {p = $NF} END {print p}')"  # no early exit: pipefail
ucx_mod=""
[ -n "$ucs" ] && ucx_mod="$(dirname "$(readlink -f "$ucs")")/ucx"
if [ -f "$ucx_mod/libuct_cma.so.0" ]; then cp -L "$ucx_mod/libuct_cma.so.0" "$kit/lib/ucx/"; fi

# The CPU ISA level the CPU kernels were compiled for (KIT.txt's "CPU ISA:" line, which
# device-check.sh compares with the device's CPU): the build's DPLAB_CPU_ISA (e.g. x86-64-v2)
# and its runtime-dispatched DPLAB_CPU_ISA_VARIANTS (e.g. x86-64-v3;x86-64-v4); a build from
# before that option has only DPLAB_NATIVE (-march=native: whatever this machine's CPU has).
cache_value() {  # cache_value NAME: the value of NAME in the build's CMakeCache.txt, or nothing
  sed -n "s/^$1:[A-Za-z]*=//p" "$build/CMakeCache.txt" 2>/dev/null | head -1
}
cpu_isa() {
  local isa variants native flags
  isa="$(cache_value DPLAB_CPU_ISA)"
  variants="$(cache_value DPLAB_CPU_ISA_VARIANTS | tr ';' ' ')"
  native="$(cache_value DPLAB_NATIVE)"
  if [ "$isa" = native ] || { [ -z "$isa" ] && [[ "$native" =~ ^(ON|on|TRUE|true|1|YES|yes)$ ]]; }; then
    # -march=native (no variants then): the extensions it may have used, which device-check.sh
    # compares with the device's CPU.
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    echo "native (this build machine: -march=native; its CPU has$(for f in avx avx2 fma \
      avx512f avx512bw avx512cd avx512dq avx512vl avx512_vnni avx512_bf16 amx_tile amx_bf16; do
      [[ "$flags" == *" $f "* ]] && printf ' %s' "$f"
    done))"
  elif [ -n "$isa" ]; then
    echo "$isa${variants:+ (runtime-dispatched variants: $variants)}"
  elif [ -z "$native" ]; then
    echo "unknown (no DPLAB_CPU_ISA or DPLAB_NATIVE in $build/CMakeCache.txt)"
  else
    echo "x86-64 (the compiler's default: DPLAB_NATIVE=$native, no DPLAB_CPU_ISA)"
  fi
}

# ---- the libraries they need --------------------------------------------------------------
# glibc stays the device's own (it must match the device's loader); NVIDIA's libraries are
# the device's own except the redistributable CUDA runtime.
is_glibc() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | \
      librt.so.* | libutil.so.* | libresolv.so.* | libanl.so.* | libmvec.so.*) return 0 ;;
  esac
  return 1
}
is_nvidia() {
  case "$1" in
    libcudart.so.*) return 1 ;;
    libcuda.so.* | libcudnn*.so* | libcublas*.so* | libnccl*.so* | libnvrtc*.so* | \
      libnvJitLink*.so* | libcupti*.so* | libnvidia-*.so* | libcufft*.so* | libcurand*.so* | \
      libcusolver*.so* | libcusparse*.so* | libnvToolsExt*.so*) return 0 ;;
  esac
  return 1
}
: >"$stage/libs"
sources=("$build/bin/dplab" "$mpiexec_real" "$(dirname "$mpiexec_real")/hydra_pmi_proxy")
mapfile -t -O ${#sources[@]} sources <"$stage/binaries"
if [ -f "$kit/lib/ucx/libuct_cma.so.0" ]; then sources+=("$ucx_mod/libuct_cma.so.0"); fi
sources+=(${extra_libs[@]+"${extra_libs[@]}"})
for f in "${sources[@]}"; do
  # ldd lists the whole closure, found through the build tree's RUNPATHs (so: the originals).
  ldd "$f" | while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    is_glibc "$name" && continue
    is_nvidia "$name" && continue
    [ "$path" = "not" ] && die "$(basename "$f"): $name not found on this machine"
    echo "$name $path"
  done >>"$stage/libs"
done
sort -u "$stage/libs" | while read -r name path; do
  cp -L "$path" "$kit/lib/$name"
done
for l in ${extra_libs[@]+"${extra_libs[@]}"}; do cp -L "$l" "$kit/lib/$(basename "$l")"; done
chmod u+w "$kit"/lib/* "$kit"/bin/*
phase collect

# ---- strip, and point every ELF at the kit's lib/ -----------------------------------------
for f in "$kit"/bin/*; do
  strip --strip-unneeded "$f"
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$f"
done
for f in "$kit"/lib/*.so* "$kit"/lib/ucx/*; do
  strip --strip-unneeded "$f"
  patchelf --force-rpath --set-rpath '$ORIGIN' "$f"
done
for f in "$kit"/lib/ucx/*; do patchelf --force-rpath --set-rpath '$ORIGIN/..' "$f"; done
phase strip

# ---- verify: relocatable, and complete but for glibc and NVIDIA -----------------------------
# Every ELF's search path is inside the kit (DT_RPATH of $ORIGIN forms only, no RUNPATH), and
# ldd, with this machine's copies of the same libraries on its default path, still takes every
# non-glibc, non-NVIDIA library from the kit's lib/ (a library missing from the kit would
# resolve to /lib/... here and be caught; on the device it would be "not found").
for f in "$kit"/bin/* "$kit"/lib/*.so* "$kit"/lib/ucx/*; do
  rp="$(patchelf --print-rpath "$f")"
  case "$rp" in '$ORIGIN' | '$ORIGIN/../lib' | '$ORIGIN/..') ;;
    *) die "$(basename "$f"): search path '$rp' is not inside the kit" ;; esac
  readelf -d "$f" | grep '(RUNPATH)' >/dev/null && die "$(basename "$f"): has a RUNPATH"
  env -u LD_LIBRARY_PATH ldd "$f" | while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    is_glibc "$name" && continue
    is_nvidia "$name" && continue
    case "$(readlink -f "$path")" in
      "$kit"/lib/*) ;;
      *) die "$(basename "$f"): $name resolves to $path, outside the kit" ;;
    esac
  done
done
phase verify

# ---- data, the CPU reference, scripts -----------------------------------------------------
"$py" - "$fmnist" "$kit/data/fashion-mnist" <<'EOF'
# The first 10,000 training and 2,000 test images of Fashion-MNIST as uncompressed IDX files
# (xz compresses the archive as a whole): enough for mnist_cnn to reach a stable accuracy.
import gzip, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
for split, n in (("train", 10000), ("t10k", 2000)):
    for kind, magic, per in (("images-idx3", 2051, 784), ("labels-idx1", 2049, 1)):
        with gzip.open(f"{src}/{split}-{kind}-ubyte.gz", "rb") as f:
            head = f.read(16 if per > 1 else 8)
            got = struct.unpack(">I", head[:4])[0]
            assert got == magic, f"{split}-{kind}: magic {got}, expected {magic}"
            body = f.read(n * per)
            assert len(body) == n * per, f"{split}-{kind}: fewer than {n} records"
        hdr = struct.pack(">II", magic, n) + (struct.pack(">II", 28, 28) if per > 1 else b"")
        with open(f"{dst}/{split}-{kind}-ubyte", "wb") as f:
            f.write(hdr + body)
EOF
"$py" - "$kit/data/synthetic-jpeg" <<'EOF'
# Small JPEGs in 4 class folders for resnet50 training steps (folder:DIR with DIR/train, 256
# images, and DIR/val, 32, evaluated after each epoch): the loader decodes and crops them to
# 224 x 224; their content does not matter, only that steps run.
import os, random, sys
from PIL import Image, ImageDraw
dst = sys.argv[1]
rng = random.Random(0)
for i in range(256 + 32):
    c = f"{dst}/{'train' if i < 256 else 'val'}/class{i % 4}"
    os.makedirs(c, exist_ok=True)
    img = Image.new("RGB", (96, 96), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    for _ in range(6):
        x0, x1 = sorted(rng.randrange(96) for _ in range(2))
        y0, y1 = sorted(rng.randrange(96) for _ in range(2))
        draw.rectangle([x0, y0, x1, y1], fill=tuple(rng.randrange(256) for _ in range(3)))
    img.save(f"{c}/{i:04d}.JPEG", quality=90)
EOF
phase data
cp "$root/tools/bench/torch_train_step.py" "$kit/share/dplab/bench/"
cp "$root/tools/scripts/device-check.sh" "$kit/"
# The mnist_cnn run device-check.sh repeats on the GPU; {DEVICE} and {OUT} are filled in there.
mnist_args='train --model mnist_cnn --data fashion-mnist:{KIT}/data/fashion-mnist --epochs 2 --batch 64 --lr 0.05 --seed 1 --device {DEVICE} --out {OUT}'
echo "$mnist_args" >"$kit/data/mnist_command.txt"
ref_out="$stage/cpu-run"
cpu_args="${mnist_args//\{KIT\}/$kit}"
cpu_args="${cpu_args//\{DEVICE\}/cpu}"
cpu_args="${cpu_args//\{OUT\}/$ref_out}"
# shellcheck disable=SC2086  # the arguments are words without spaces
env -u LD_LIBRARY_PATH OMP_NUM_THREADS="${DPLAB_KIT_THREADS:-2}" "$kit/bin/dplab" $cpu_args \
  >"$stage/cpu-run.log" 2>&1 || {
  cat "$stage/cpu-run.log" >&2
  die "the CPU reference run failed"
}
ref_acc="$(grep '"kind":"final"' "$ref_out/metrics.jsonl" | grep -o '"test_acc":[0-9.eE+-]*' |
  cut -d: -f2)"
[ -n "$ref_acc" ] || die "no final test_acc in $ref_out/metrics.jsonl"
printf 'test_acc %s\n' "$ref_acc" >"$kit/data/cpu_reference.txt"
{
  echo "dplab device kit"
  "$kit/bin/dplab" --version
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), $(ldd --version | head -1)"
  echo "glibc needed: $(for f in "$kit"/bin/* "$kit"/lib/*.so*; do
    objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*'
  done | sort -uV | tail -1)"
  echo "CPU reference (mnist_cnn, $(nproc) cores): test_acc $ref_acc"
  echo "CPU ISA: $(cpu_isa)"
  if [ ${#extra_libs[@]} -gt 0 ]; then
    echo "extra libraries (dplab_extra_libs.txt): $(for l in "${extra_libs[@]}"; do basename "$l"; done | tr '\n' ' ')"
  fi
} >"$kit/KIT.txt"
phase reference

# ---- pack -----------------------------------------------------------------------------------
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - dplab-kit | xz -9 -T"${DPLAB_KIT_XZ_THREADS:-0}" >"$out.part"
mv "$out.part" "$out"
phase xz
bytes=$(stat -c %s "$out")
mib=$(awk -v b="$bytes" 'BEGIN{printf "%.1f", b/1048576}')
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.0f", e-s}')
echo "device-bundle: $out: $mib MiB ($bytes bytes; unpacked $(du -sm "$kit" | cut -f1) MiB), " \
  "$(find "$kit/bin" -type f | wc -l) binaries, $(find "$kit/lib" -maxdepth 1 -name '*.so*' | wc -l) libraries, ${secs} s"
# The device receives the working tree's files and the kit, 64 MiB in all: tree + kit must stay
# under $limit_mib MiB (a 4 MiB margin by default). The tree: what the device tool copies, i.e.
# tracked files and untracked ones git does not ignore (the archive itself left out, should it
# lie in the tree unignored).
tree_bytes=""
sum_sizes() {  # sum_sizes GIT_LS_FILES_OPTIONS...: bytes of the files listed (but the archive)
  (cd "$root" && git ls-files -z "$@" | grep -zvxF -- "$out_rel" | xargs -0 -r stat -c %s -- \
    2>/dev/null | awk '{s += $1} END {printf "%d", s}') || true  # deleted files: not sent either
}
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  out_rel="$(realpath -m --relative-to="$root" "$out")"
  tracked_bytes="$(sum_sizes --cached)"
  untracked_bytes="$(sum_sizes --others --exclude-standard)"
  tree_bytes=$((${tracked_bytes:-0} + ${untracked_bytes:-0}))
fi
to_mib() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1048576}'; }
if [ -z "$tree_bytes" ]; then
  echo "device-bundle: warning: $root is not a git checkout: the tree's size is unknown; checking" \
    "the kit alone against $limit_mib MiB" >&2
  [ "$bytes" -le $((limit_mib * 1048576)) ] || die "$out is $mib MiB, above the limit of $limit_mib MiB"
else
  total=$((tree_bytes + bytes))
  room=$((limit_mib * 1048576 - tree_bytes))
  echo "device-bundle: tree $(to_mib "$tree_bytes") MiB (tracked $(to_mib "$tracked_bytes")," \
    "untracked but not ignored $(to_mib "$untracked_bytes")) + kit $mib MiB = $(to_mib "$total") MiB;" \
    "limit $limit_mib MiB (the 64 MiB transfer less a margin; DPLAB_KIT_LIMIT_MIB), so the kit" \
    "may take $(to_mib "$room") MiB" >&2
  [ "$total" -le $((limit_mib * 1048576)) ] ||
    die "tree $(to_mib "$tree_bytes") MiB + kit $mib MiB = $(to_mib "$total") MiB, above the" \
      "limit of $limit_mib MiB: the kit may take at most $(to_mib "$room") MiB"
fi
