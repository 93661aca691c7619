#include "dplab/layers/linear.h"

#include "dplab/core/ops/linear.h"
#include "dplab/layers/init.h"

namespace dplab {

Linear::Linear(int64_t in, int64_t out, bool bias) : in_(in), out_(out) {
  DPLAB_CHECK(in > 0 && out > 0, "Linear({}, {}): sizes must be positive", in, out);
  weight_ = register_parameter("weight", Tensor::zeros({out, in}));
  if (bias) bias_ = register_parameter("bias", Tensor::zeros({out}));
}

void Linear::reset_parameters(PhiloxStream& rng) {
  const double bound = default_init_bound(in_);
  uniform_(weight_, rng, bound);
  if (bias_.defined()) uniform_(bias_, rng, bound);
}

Tensor Linear::forward(const Tensor& x) {
  return linear(x, weight_, bias_);
}

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_, out_,
                     bias_.defined() ? "True" : "False");
}

}  // namespace dplab
