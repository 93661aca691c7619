#!/usr/bin/env bash
# device-kit-selftest.sh [ARCHIVE]: checks the device kit (tools/scripts/device-bundle.sh) where
# no GPU is: in a bare Debian root (debootstrap --variant=minbase: no compiler, no oneDNN, MPICH,
# turbojpeg, fmt, toml++, cairo, ...) its CPU tests, `dplab train` of mnist_cnn (the exact
# command whose accuracy the kit recorded, so the bare root must reproduce it), `mpiexec -n 2`
# from the kit and device-check.sh's "no CUDA device" answer. NVIDIA's libraries that dplab
# links (cuDNN's loader libcudnn.so.9, libnccl.so.2; the device has them) are copied from this
# machine into the root's /opt/nvidia-libs, as a device provides them outside the kit.
# Needs root (chroot, mount). Not part of ctest: it needs debootstrap's network the first time
# and minutes to run. Environment: DPLAB_BARE_ROOT (default /tmp/dplab-bare-root; made with
# debootstrap from apt's own mirror when missing), DPLAB_CUDA_LIBS (where libcudnn.so.9 and
# libnccl.so.2 are here; default /usr/local/cuda/lib).
set -euo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
archive="${1:-${DPLAB_BUILD_DIR:-$root_dir/build}/dplab-device-kit.tar.xz}"
bare="${DPLAB_BARE_ROOT:-/tmp/dplab-bare-root}"
cuda_libs="${DPLAB_CUDA_LIBS:-/usr/local/cuda/lib}"

die() {
  echo "device-kit-selftest: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || die "needs root (chroot and mount)"
[ -f "$archive" ] || die "$archive: no kit (tools/scripts/device-bundle.sh makes one)"

if [ ! -x "$bare/bin/bash" ]; then
  command -v debootstrap >/dev/null || die "needs debootstrap (apt-get install debootstrap)"
  # The mirror apt already uses (deb822 URIs: or a sources.list deb line).
  mirror="$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
    grep -v security | head -1)"
  [ -n "$mirror" ] || mirror="$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | head -1)"
  suite="$(. /etc/os-release && echo "$VERSION_CODENAME")"
  echo "device-kit-selftest: debootstrap --variant=minbase $suite $bare ${mirror:-default}" >&2
  debootstrap --variant=minbase "$suite" "$bare" ${mirror:+"$mirror"} >/dev/null
fi

# A bare root: none of the libraries the kit carries may come from the root itself.
dev_pkgs="$(chroot "$bare" dpkg-query -W -f '${Package}\n' | grep -E \
  '^(libdnnl|mpich|libmpich|libfmt|libturbojpeg|libtomlplusplus|libcairo|libucx|libgomp|libhwloc|g\+\+|gcc-12$|cmake|libcudnn|libnccl)' || true)"
[ -z "$dev_pkgs" ] || die "$bare is not bare: it has $(echo "$dev_pkgs" | tr '\n' ' ')"

# Fresh kit and NVIDIA libraries in the root; /proc, /sys, /dev for MPI (shared memory, hwloc).
rm -rf "$bare/opt/kit" "$bare/opt/nvidia-libs" "$bare/tmp/selftest"
mkdir -p "$bare/opt/kit" "$bare/opt/nvidia-libs" "$bare/tmp/selftest"
tar -xJf "$archive" -C "$bare/opt/kit"
for l in libcudnn.so.9 libnccl.so.2; do cp -L "$cuda_libs/$l" "$bare/opt/nvidia-libs/"; done
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" || true; done
}
trap cleanup EXIT
for m in proc sys dev; do
  mountpoint -q "$bare/$m" || {
    if [ $m = proc ]; then mount -t proc proc "$bare/proc"; else mount --rbind "/$m" "$bare/$m"; fi
    mounted+=("$bare/$m")
  }
done

cat >"$bare/tmp/selftest/run.sh" <<'EOF'
# Runs inside the bare root. One line per check: PASS/FAIL, seconds, command.
set -u
K=/opt/kit/dplab-kit
export LD_LIBRARY_PATH=/opt/nvidia-libs PATH="$K/bin:/usr/bin:/bin" OMP_NUM_THREADS=2
export DPLAB_DATA=$K/data UCX_MODULE_DIR=$K/lib/ucx HOME=/tmp/selftest DPLAB_CLI=$K/bin/dplab
cd /tmp/selftest
fails=0
check() {  # check NAME EXPECTED_EXIT CMD...: exit status must equal EXPECTED_EXIT
  local name=$1 want=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout 900 "$@" >"$name.log" 2>&1 </dev/null  # mpiexec would read the loop's tests.tsv
  rc=$?
  if [ $rc -eq "$want" ]; then echo "PASS $(($(date +%s) - t0))s $name: $*";
  else echo "FAIL $(($(date +%s) - t0))s $name (exit $rc, expected $want): $*"; tail -20 "$name.log"; fails=1; fi
}
# Every library resolves; none from outside the kit but glibc and NVIDIA's.
check ldd_resolves 0 bash -c "! ldd $K/bin/* $K/lib/*.so* | grep -E 'not found'"
check ldd_from_kit 0 bash -c "! ldd $K/bin/* $K/lib/*.so* | grep '=>' | grep -vE \"=> $K/(bin/\.\./)?lib/|=> /opt/nvidia-libs/|=> /lib/x86_64-linux-gnu/(libc|libm|libdl|libpthread|librt|libutil|libresolv|ld-linux-x86-64)\\.so\""
check dplab_version 0 $K/bin/dplab --version
# CPU tests of the kit (tests.tsv entries without the cuda label).
while IFS=$'\t' read -r name labels ranks limit binary args; do
  [[ ";$labels;" == *";cuda;"* ]] && continue
  [ "$ranks" -gt 2 ] && continue  # 2 cores here
  if [ "$ranks" -eq 0 ]; then eval "check '$name' 0 $K/bin/$binary $args";
  else eval "check '$name' 0 $K/bin/mpiexec -n $ranks $K/bin/$binary $args"; fi
done <$K/tests.tsv
# The kit's mnist_cnn command on the CPU: the accuracy recorded when the kit was made.
cmd=$(cat $K/data/mnist_command.txt)
cmd=${cmd//\{KIT\}/$K}; cmd=${cmd//\{DEVICE\}/cpu}; cmd=${cmd//\{OUT\}//tmp/selftest/mnist}
check mnist_cpu 0 $K/bin/dplab $cmd
got=$(grep '"kind":"final"' /tmp/selftest/mnist/metrics.jsonl | grep -o '"test_acc":[0-9.eE+-]*' | cut -d: -f2)
want=$(awk '/^test_acc/{print $2}' $K/data/cpu_reference.txt)
if [ -n "$got" ] && [ "$got" = "$want" ]; then echo "PASS mnist_cpu accuracy $got = recorded $want";
else echo "FAIL mnist_cpu accuracy '$got', recorded '$want'"; fails=1; fi
# Two ranks through the kit's mpiexec: allreduce training for a few steps.
check mpiexec_train_np2 0 $K/bin/mpiexec -n 2 $K/bin/dplab train --model mnist_cnn \
  --data fashion-mnist:$K/data/fashion-mnist --algo allreduce --max-steps 20 --threads 1
# device-check.sh: no GPU here, so it must refuse at once (exit 2) saying so.
check device_check_no_device 2 $K/device-check.sh /opt/kit/none.tar.xz /tmp/selftest/report.md
grep -q '^device-check: no CUDA device: ' device_check_no_device.log && echo "PASS device_check says: $(head -1 device_check_no_device.log)" || { echo "FAIL device_check message: $(head -3 device_check_no_device.log)"; fails=1; }
exit $fails
EOF
echo "device-kit-selftest: running the kit in $bare ($(chroot "$bare" dpkg-query -W -f '.\n' | wc -l) packages)" >&2
t0=$(date +%s)
rc=0
chroot "$bare" /bin/bash /tmp/selftest/run.sh || rc=$?
echo "device-kit-selftest: $([ $rc -eq 0 ] && echo passed || echo FAILED) in $(($(date +%s) - t0)) s" >&2
exit $rc
