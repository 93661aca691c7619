// Which build of dplab's own CPU loops runs (issue #31, item 1). The loops of core/cpu
// (element-wise, reductions, norms, losses, random, the optimizer) are compiled once for the
// portable level DPLAB_CPU_ISA (default x86-64-v2) inside dplab_core, and once more for each
// level of DPLAB_CPU_ISA_VARIANTS (default x86-64-v3 and x86-64-v4: AVX2 and AVX-512) into a
// library of its own (libdplab_cpu_x86_64_v4.so, ...). cpu_backend() takes the highest level
// this CPU runs, so one binary runs on any x86-64-v2 machine (the device kit's GPU host, a
// cluster's login node) and still gets AVX-512 where it exists; oneDNN (convolutions, GEMM,
// pooling) dispatches on its own. DPLAB_CPU_ISA=native builds for the build machine alone,
// without variants. The environment variable DPLAB_CPU_DISPATCH=baseline keeps the portable
// build (for comparisons), like ONEDNN_MAX_CPU_ISA for oneDNN.
//
// Results are the same up to the order of additions in reductions (the vector width decides
// how `omp simd` splits a sum): every build is checked against the reference kernels by the
// same op-case table (tests/core/test_cpu_isa.cpp).
#pragma once
#include <string>
#include <vector>

#include "dplab/core/backend.h"

namespace dplab {

struct CpuIsaBuild {
  std::string isa;         // "x86-64-v4", or DPLAB_CPU_ISA for the portable build
  const Backend* backend;  // the CPU backend with this build's loops
};

// The portable build's CPU backend (cpu_backend() is the active build's, core/backend.h).
const Backend& portable_cpu_backend();

// The builds this CPU can run, the portable one first, then the variants in build order.
const std::vector<CpuIsaBuild>& cpu_isa_builds();
// The build cpu_backend() uses.
const CpuIsaBuild& cpu_isa_active();
// "x86-64-v4 (portable build x86-64-v2; variants x86-64-v3, x86-64-v4)": for --version.
std::string cpu_isa_summary();

// The choice, pure (unit-tested): the index of the last variant the CPU runs among `runs`
// (runs[0]: the portable build, always true), or 0 when `dispatch` is "baseline". Throws a usage
// error for any other non-empty `dispatch`.
size_t choose_cpu_isa(const std::vector<bool>& runs, const std::string& dispatch);

}  // namespace dplab
