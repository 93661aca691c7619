#include "dplab/layers/avgpool2d.h"

#include "dplab/layers/maxpool2d.h"

namespace dplab {

AvgPool2d::AvgPool2d(const Pool2dOptions& opt) : opt_(opt) {}

AvgPool2d::AvgPool2d(int64_t kernel, int64_t stride, int64_t padding) {
  opt_.kernel = {kernel, kernel};
  opt_.stride = {stride, stride};
  opt_.padding = {padding, padding};
}

Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, opt_);
}

std::string AvgPool2d::extra_repr() const {
  return pool_repr(opt_, false);
}

}  // namespace dplab
