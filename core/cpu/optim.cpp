// Fast optimizer kernels: the shared functor in an OpenMP SIMD loop over the flat range.
#include "dplab/core/kernels/optim.h"

namespace dplab {
namespace {

void sgd_step(Tensor& param, const Tensor& grad, Tensor& buf, const SgdStepArgs& args) {
  check_sgd_operands(param, grad, buf, args);
  const SgdUpdate f = make_sgd_update(args);
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  const int64_t n = param.numel();
  if (args.momentum != 0.f) {
    float* b = buf.data<float>();
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) f(p + i, g[i], b + i);
  } else {
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) f(p + i, g[i], nullptr);
  }
}

}  // namespace

OptimKernels cpu_optim_kernels() {
  OptimKernels k{};
  k.sgd_step = sgd_step;
  return k;
}

}  // namespace dplab
