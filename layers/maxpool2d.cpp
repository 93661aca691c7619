#include "dplab/layers/maxpool2d.h"

namespace dplab {

namespace {
std::string pair_repr(const std::array<int64_t, 2>& a) {
  return a[0] == a[1] ? fmt::format("{}", a[0]) : fmt::format("({}, {})", a[0], a[1]);
}
}  // namespace

std::string pool_repr(const Pool2dOptions& o, bool with_dilation) {
  const std::array<int64_t, 2> stride = {o.stride[0] ? o.stride[0] : o.kernel[0],
                                         o.stride[1] ? o.stride[1] : o.kernel[1]};
  std::string s = fmt::format("kernel_size={}, stride={}, padding={}", pair_repr(o.kernel),
                              pair_repr(stride), pair_repr(o.padding));
  if (with_dilation) s += fmt::format(", dilation={}", pair_repr(o.dilation));
  s += fmt::format(", ceil_mode={}", o.ceil_mode ? "True" : "False");
  return s;
}

MaxPool2d::MaxPool2d(const Pool2dOptions& opt) : opt_(opt) {}

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride, int64_t padding) {
  opt_.kernel = {kernel, kernel};
  opt_.stride = {stride, stride};
  opt_.padding = {padding, padding};
}

Tensor MaxPool2d::forward(const Tensor& x) {
  return max_pool2d(x, opt_);
}

std::string MaxPool2d::extra_repr() const {
  return pool_repr(opt_, true);
}

}  // namespace dplab
