#include "dplab/core/backend.h"

#include "dplab/core/cpu_isa.h"

namespace dplab {
namespace {
// The CPU backend chosen by the innermost live BackendOverride of this thread (null: cpu).
thread_local const Backend* t_cpu_override = nullptr;
}  // namespace

const Backend& ref_backend() {
  static const Backend b{"ref",
                         Layout::strided,
                         true,
                         true,
                         ref_elementwise_kernels(),
                         ref_reduce_kernels(),
                         ref_gemm_kernels(),
                         ref_conv_kernels(),
                         ref_pool_kernels(),
                         ref_norm_kernels(),
                         ref_loss_kernels(),
                         ref_random_kernels(),
                         ref_optim_kernels()};
  return b;
}

const Backend& cpu_backend() {
  return *cpu_isa_active().backend;
}

const Backend& portable_cpu_backend() {
  static const Backend b{"cpu",
                         Layout::nChw16c,
                         cpu_bf16_activations(),
                         true,
                         cpu_elementwise_kernels(),
                         cpu_reduce_kernels(),
                         cpu_gemm_kernels(),
                         cpu_conv_kernels(),
                         cpu_pool_kernels(),
                         cpu_norm_kernels(),
                         cpu_loss_kernels(),
                         cpu_random_kernels(),
                         cpu_optim_kernels()};
  return b;
}

#ifdef DPLAB_WITH_CUDA
const Backend& cuda_backend_impl();  // core/cuda/backend.cpp
#endif

const Backend& cuda_backend() {
#ifdef DPLAB_WITH_CUDA
  return cuda_backend_impl();
#else
  DPLAB_FAIL("the CUDA backend is unavailable: {}", cuda_unavailable_reason());
#endif
}

const Backend& backend_for(Device d) {
  if (d.is_cpu()) return t_cpu_override ? *t_cpu_override : cpu_backend();
  return cuda_backend();
}

BackendOverride::BackendOverride(const Backend& cpu) : prev_(t_cpu_override) {
  t_cpu_override = &cpu;
}

BackendOverride::~BackendOverride() {
  t_cpu_override = prev_;
}

}  // namespace dplab
