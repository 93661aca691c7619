// Reference optimizer kernels: one plain loop per update, each element through the shared
// functor of core/optim_functors.h.
#include "dplab/core/kernels/optim.h"

namespace dplab {

void check_sgd_operands(const Tensor& param, const Tensor& grad, const Tensor& buf,
                        const SgdStepArgs& args) {
  check_dtype(param, DType::f32, "sgd_step param");
  check_dtype(grad, DType::f32, "sgd_step grad");
  check_same_device(param, grad, "sgd_step");
  DPLAB_CHECK(param.is_contiguous() && grad.is_contiguous(),
              "sgd_step: param {} and grad {} must be contiguous", param.str(), grad.str());
  DPLAB_CHECK(param.numel() == grad.numel(), "sgd_step: param has {} elements, grad {}",
              param.numel(), grad.numel());
  if (args.momentum != 0.f) {
    DPLAB_CHECK(buf.defined(), "sgd_step: momentum {} needs a momentum buffer", args.momentum);
    check_dtype(buf, DType::f32, "sgd_step momentum buffer");
    check_same_device(param, buf, "sgd_step");
    DPLAB_CHECK(buf.is_contiguous() && buf.numel() == param.numel(),
                "sgd_step: momentum buffer {} for param {}", buf.str(), param.str());
  }
}

namespace {

void sgd_step(Tensor& param, const Tensor& grad, Tensor& buf, const SgdStepArgs& args) {
  check_sgd_operands(param, grad, buf, args);
  const SgdUpdate f = make_sgd_update(args);
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float* b = args.momentum != 0.f ? buf.data<float>() : nullptr;
  const int64_t n = param.numel();
  for (int64_t i = 0; i < n; ++i) f(p + i, g[i], b ? b + i : nullptr);
}

}  // namespace

OptimKernels ref_optim_kernels() {
  OptimKernels k{};
  k.sgd_step = sgd_step;
  return k;
}

}  // namespace dplab
