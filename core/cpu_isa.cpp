#include "dplab/core/cpu_isa.h"

#include <cstdlib>

#include "dplab/core/usage_error.h"

namespace dplab {

// The variants' factories (core/cpu/isa_variant_names.h), declared per built variant.
#define DPLAB_DECLARE_CPU_VARIANT(sfx)                \
  ElementwiseKernels cpu_elementwise_kernels_##sfx(); \
  ReduceKernels cpu_reduce_kernels_##sfx();           \
  NormKernels cpu_norm_kernels_##sfx();               \
  LossKernels cpu_loss_kernels_##sfx();               \
  RandomKernels cpu_random_kernels_##sfx();           \
  OptimKernels cpu_optim_kernels_##sfx();
#ifdef DPLAB_CPU_VARIANT_x86_64_v3
DPLAB_DECLARE_CPU_VARIANT(x86_64_v3)
#endif
#ifdef DPLAB_CPU_VARIANT_x86_64_v4
DPLAB_DECLARE_CPU_VARIANT(x86_64_v4)
#endif

namespace {

#ifndef DPLAB_CPU_ISA_NAME
#define DPLAB_CPU_ISA_NAME "x86-64"
#endif

// The portable build's backend with one variant's loops; oneDNN's kernels (GEMM, convolution,
// pooling) are shared.
#define DPLAB_VARIANT_BACKEND(sfx)                                                              \
  Backend {                                                                                     \
    "cpu", Layout::nChw16c, cpu_bf16_activations(), true, cpu_elementwise_kernels_##sfx(),      \
        cpu_reduce_kernels_##sfx(), cpu_gemm_kernels(), cpu_conv_kernels(), cpu_pool_kernels(), \
        cpu_norm_kernels_##sfx(), cpu_loss_kernels_##sfx(), cpu_random_kernels_##sfx(),         \
        cpu_optim_kernels_##sfx()                                                               \
  }

// The levels by their features (the psABI's x86-64 micro-architecture levels), not by name:
// clang 14 (the fuzz build) has no "x86-64-v3" for __builtin_cpu_supports.
[[maybe_unused]] bool runs_x86_64_v3() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
}
[[maybe_unused]] bool runs_x86_64_v4() {
  return runs_x86_64_v3() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

struct Builds {
  std::vector<CpuIsaBuild> runnable;
  size_t active = 0;
  std::string summary;
};

const Builds& builds() {
  static const Builds b = [] {
    Builds r;
    std::vector<bool> runs{true};
    std::string variants;
    r.runnable.push_back({DPLAB_CPU_ISA_NAME, &portable_cpu_backend()});
    __builtin_cpu_init();
#ifdef DPLAB_CPU_VARIANT_x86_64_v3
    variants += "x86-64-v3";
    if (runs_x86_64_v3()) {
      static const Backend v3 = DPLAB_VARIANT_BACKEND(x86_64_v3);
      r.runnable.push_back({"x86-64-v3", &v3});
    }
#endif
#ifdef DPLAB_CPU_VARIANT_x86_64_v4
    variants += variants.empty() ? "x86-64-v4" : ", x86-64-v4";
    if (runs_x86_64_v4()) {
      static const Backend v4 = DPLAB_VARIANT_BACKEND(x86_64_v4);
      r.runnable.push_back({"x86-64-v4", &v4});
    }
#endif
    runs.resize(r.runnable.size(), true);
    const char* env = std::getenv("DPLAB_CPU_DISPATCH");
    r.active = choose_cpu_isa(runs, env ? env : "");
    r.summary = r.runnable[r.active].isa + " (portable build " + DPLAB_CPU_ISA_NAME +
                (variants.empty() ? std::string("; no variants") : "; variants " + variants) +
                (env && *env ? std::string("; DPLAB_CPU_DISPATCH=") + env : std::string()) + ")";
    return r;
  }();
  return b;
}

}  // namespace

size_t choose_cpu_isa(const std::vector<bool>& runs, const std::string& dispatch) {
  if (dispatch == "baseline") return 0;
  if (!dispatch.empty())
    throw UsageError("DPLAB_CPU_DISPATCH='" + dispatch +
                     "': expected 'baseline' (the portable build) or unset (the best build this "
                     "CPU runs)");
  size_t best = 0;
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i]) best = i;
  return best;
}

const std::vector<CpuIsaBuild>& cpu_isa_builds() {
  return builds().runnable;
}

const CpuIsaBuild& cpu_isa_active() {
  return builds().runnable[builds().active];
}

std::string cpu_isa_summary() {
  return builds().summary;
}

}  // namespace dplab
