#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz: IDX, tar shards, images, safetensors, TOML config, config
# through the option checks, `dplab plot`'s metrics reader and chart layout, the input sniffer
# of `dplab predict`) with clang, libFuzzer, ASan and UBSan into
# ${DPLAB_FUZZ_BUILD_DIR:-build-fuzz}, then fuzzes each for SECONDS (default 60) and prints, per
# target, the inputs executed, the coverage reached and every finding (the crashing input
# libFuzzer saved, and the top of its report).
#
#   tools/scripts/fuzz.sh              # every target, 60 s each
#   tools/scripts/fuzz.sh 600 image    # one target, 10 minutes
#   tools/scripts/fuzz.sh --ctest      # build, then the ctest entries (label fuzz, 20 s each by
#                                      # default: -DDPLAB_FUZZ_SECONDS at configure time)
#
# New interesting inputs accumulate in BUILD/fuzz/corpus/<target> (the committed seeds in
# tests/fuzz/corpus are only read); findings go to BUILD/fuzz/artifacts/<target>/. Exit status 1
# when any target had a finding. Only the parsers' libraries (core, data, tools/plot, and the few
# sources of train/ the config and predict targets use) are built, CUDA off.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DPLAB_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${DPLAB_JOBS:-$(nproc)}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
all_targets=(idx tar image safetensors toml options plot_metrics plot_layout predict)

mode=run
seconds=60
if [ "${1:-}" = "--ctest" ]; then
  mode=ctest
  shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found (tools/scripts/install-deps.sh installs clang)" >&2
  exit 2
fi
if [ ! -f "$build/build.ninja" ]; then
  # -O1 with line tables, asserts on: libFuzzer's usual setting (fast to build, exact stacks).
  # No x86-64-v3/v4 builds of the CPU loops (DPLAB_CPU_ISA_VARIANTS empty): the parsers run no
  # kernels (the root CMakeLists.txt says the same for -DDPLAB_FUZZ=ON).
  cmake -S "$root" -B "$build" -G Ninja -DDPLAB_FUZZ=ON -DDPLAB_CUDA=OFF -DDPLAB_CPU_ISA_VARIANTS= \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DDPLAB_FUZZ_SECONDS="${DPLAB_FUZZ_SECONDS:-20}"
fi
cmake --build "$build" -j "$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")

# Symbolised stacks; leaks are findings too (libFuzzer checks after each input), except the
# third-party ones tools/scripts/sanitize/lsan.supp names (fontconfig's, under cairo's text).
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
supp="$root/tools/scripts/sanitize/lsan.supp"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

if [ "$mode" = ctest ]; then
  exec ctest --test-dir "$build" --output-on-failure -j "$jobs" -L fuzz \
    -R "^fuzz_($(IFS='|'; echo "${targets[*]}"))\$"
fi

status=0
for t in "${targets[@]}"; do
  work="$build/fuzz/corpus/$t"
  artifacts="$build/fuzz/artifacts/$t"
  log="$build/fuzz/$t.log"
  mkdir -p "$work" "$artifacts"
  find "$artifacts" -type f ! -name '*.txt' | sort >"$build/fuzz/$t.before"
  echo "== fuzz_$t: ${seconds}s"
  # Fork mode with findings ignored: the run goes on after a crash, leak, OOM or timeout and
  # saves each (distinct) input, so one run lists every finding, not just the first.
  rc=0
  "$build/tests/fuzz/fuzz_$t" -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
    -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=25 \
    -artifact_prefix="$artifacts/" "$work" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(grep -oE '^#[0-9]+' "$log" | tail -n1 | tr -d '#' || true)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n1 || true)
  echo "   executions: ${execs:-?}  ${cov:-}  corpus: $(find "$work" -type f | wc -l) files  exit: $rc"
  [ "$rc" -eq 0 ] || status=1
  # Each new finding, re-run alone: what the sanitizer or libFuzzer said and where.
  while read -r f; do
    status=1
    echo "   FINDING $f ($(stat -c %s "$f") bytes)"
    # (in a subshell: bash's own "Aborted" line would interleave with the report)
    ("$build/tests/fuzz/fuzz_$t" -rss_limit_mb=2048 -timeout=25 "$f" >"$f.txt" 2>&1) || true
    grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|==ERROR|terminate called' \
      "$f.txt" | sed 's/^/     /' || true
    grep -E '^ +#[0-9]+ ' "$f.txt" | grep -v -E '__sanitizer|fuzzer::|LLVMFuzzer|_start|/lib/x86_64-linux-gnu/|nptl/|in (raise|abort|malloc|calloc|realloc|operator new|std::terminate|__cxa_[a-z_]+) ' |
      head -n3 | sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in /     at /' || true
  done < <(find "$artifacts" -type f ! -name '*.txt' | sort | comm -13 "$build/fuzz/$t.before" -)
done
exit $status
