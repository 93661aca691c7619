#include "dplab/layers/conv2d.h"

#include "dplab/layers/init.h"

namespace dplab {

Conv2d::Conv2d(int64_t in, int64_t out, std::array<int64_t, 2> k, const Conv2dOptions& opt,
               bool bias)
    : in_(in), out_(out), kernel_(k), opt_(opt) {
  DPLAB_CHECK(in > 0 && out > 0 && k[0] > 0 && k[1] > 0,
              "Conv2d({}, {}, kernel_size=({}, {})): sizes must be positive", in, out, k[0], k[1]);
  DPLAB_CHECK(opt.groups >= 1 && in % opt.groups == 0 && out % opt.groups == 0,
              "Conv2d({}, {}): groups = {} must divide both channel counts", in, out, opt.groups);
  weight_ = register_parameter("weight", Tensor::zeros({out, in / opt.groups, k[0], k[1]}));
  if (bias) bias_ = register_parameter("bias", Tensor::zeros({out}));
}

int64_t Conv2d::fan_in() const {
  return in_ / opt_.groups * kernel_[0] * kernel_[1];
}

void Conv2d::reset_parameters(PhiloxStream& rng) {
  const double bound = default_init_bound(fan_in());
  uniform_(weight_, rng, bound);
  if (bias_.defined()) uniform_(bias_, rng, bound);
}

Tensor Conv2d::forward(const Tensor& x) {
  return conv2d(x, weight_, bias_, opt_);
}

std::string Conv2d::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size=({}, {}), stride=({}, {})", in_, out_,
                              kernel_[0], kernel_[1], opt_.stride[0], opt_.stride[1]);
  if (opt_.padding != std::array<int64_t, 2>{0, 0})
    s += fmt::format(", padding=({}, {})", opt_.padding[0], opt_.padding[1]);
  if (opt_.dilation != std::array<int64_t, 2>{1, 1})
    s += fmt::format(", dilation=({}, {})", opt_.dilation[0], opt_.dilation[1]);
  if (opt_.groups != 1) s += fmt::format(", groups={}", opt_.groups);
  if (!bias_.defined()) s += ", bias=False";
  return s;
}

}  // namespace dplab
